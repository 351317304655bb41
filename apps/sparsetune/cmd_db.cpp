// sparsetune db: row counts of the schedule database, moving measurements between databases
// (compressed JSON lines that travel with the repository, or other database files merged into
// one), and the winners as plain JSON lines for other tools.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/paths.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "db/database.hpp"

namespace sparsetune::cli {

namespace {

struct DbOptions {
  std::string db;
  bool json = false;
  std::string export_path;
  std::string winners_path;
  std::vector<std::string> import_paths;
  std::vector<std::string> merge_paths;
};

std::string Counts(const DatabaseStats& s) {
  char text[256];
  std::snprintf(text, sizeof text,
                "%lld matrices, %lld schedules, %lld measurements, %lld failures, %lld winners, "
                "%lld machines",
                (long long)s.matrices, (long long)s.schedules, (long long)s.measurements,
                (long long)s.failures, (long long)s.winners, (long long)s.machines);
  return text;
}

void RunStats(const DbOptions& o) {
  const std::string path = DatabasePathOrDefault(o.db);
  auto db = Database::Open(path, OpenMode::kReadOnly);
  const DatabaseStats s = db->Statistics();
  if (o.json) {
    nlohmann::json out = DatabaseStatsToJson(s);
    out["database"] = path;
    out["schema_version"] = db->SchemaVersion();
    out["kernels"] = KernelStatsToJson(db->KernelStatistics());
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::printf("database      %s (schema version %d)\n", path.c_str(), db->SchemaVersion());
  std::printf("matrices      %lld\n", (long long)s.matrices);
  std::printf("schedules     %lld\n", (long long)s.schedules);
  std::printf("measurements  %lld\n", (long long)s.measurements);
  std::printf("failures      %lld\n", (long long)s.failures);
  std::printf("winners       %lld\n", (long long)s.winners);
  std::printf("machines      %lld\n", (long long)s.machines);
  const std::vector<KernelStats> kernels = db->KernelStatistics();
  if (kernels.empty()) return;
  // As wide as the longest key ("spmv@tuned-order", "expr:..."), so the counts line up.
  int width = 12;
  for (const auto& k : kernels) width = std::max(width, static_cast<int>(k.kernel.size()));
  std::printf("\n%-*s %9s %13s %9s  %s\n", width, "kernel", "matrices", "measurements", "failures",
              "by reason");
  for (const auto& k : kernels) {
    int64_t failures = 0;
    std::string reasons;
    for (const auto& [reason, count] : k.failures) {
      failures += count;
      reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(count);
    }
    std::printf("%-*s %9lld %13lld %9lld  %s\n", width, k.kernel.c_str(), (long long)k.matrices,
                (long long)k.measurements, (long long)failures, reasons.c_str());
  }
}

// Written beside the target and renamed, so a reader never sees half a file.
void WriteWinners(Database& db, const std::string& path) {
  if (path == "-") {
    const int64_t lines = db.ExportWinners(std::cout);
    std::cout.flush();
    std::fprintf(stderr, "exported %lld winners\n", (long long)lines);
    return;
  }
  const std::string parent = std::filesystem::path(path).parent_path().string();
  if (!parent.empty()) EnsureDirectory(parent);
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  int64_t lines = 0;
  try {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out) throw InputError(path, 0, "cannot create the file");
    lines = db.ExportWinners(out);
    out.close();
    if (!out) throw InternalError("cannot write " + temporary + " (disk full?)");
    std::filesystem::rename(temporary, path);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
  std::fprintf(stderr, "exported %lld winners to %s\n", (long long)lines, path.c_str());
}

void RunExport(const DbOptions& o) {
  if (o.export_path.empty() && o.winners_path.empty())
    throw InputError("give --measurements FILE or --winners FILE");
  const std::string path = DatabasePathOrDefault(o.db);
  auto db = Database::Open(path, OpenMode::kReadOnly);
  if (!o.export_path.empty()) {
    const DatabaseStats s = db->ExportMeasurements(o.export_path);
    std::fprintf(stderr, "exported %s to %s\n", Counts(s).c_str(), o.export_path.c_str());
  }
  if (!o.winners_path.empty()) WriteWinners(*db, o.winners_path);
}

void RunImport(const DbOptions& o) {
  auto db = Database::Open(DatabasePathOrDefault(o.db), OpenMode::kReadWrite);
  for (const auto& file : o.import_paths) {
    const DatabaseStats s = db->ImportMeasurements(file);
    std::fprintf(stderr, "imported %s: added %s\n", file.c_str(), Counts(s).c_str());
  }
}

// OUT IN... ; with --db F every file is an input into F, and a single file without --db goes
// into the default database.
void RunMerge(const DbOptions& o) {
  std::string out;
  std::vector<std::string> inputs = o.merge_paths;
  if (!o.db.empty() || inputs.size() < 2) {
    out = DatabasePathOrDefault(o.db);
  } else {
    out = inputs.front();
    inputs.erase(inputs.begin());
  }
  std::error_code error;
  const bool existed = std::filesystem::exists(out, error);
  std::vector<DatabaseStats> added;
  try {
    auto db = Database::Open(out, OpenMode::kReadWrite);
    added = db->MergeDatabases(inputs);
  } catch (...) {
    // A bad input leaves no trace: not even the output file, when this merge created it.
    if (!existed) {
      for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        std::filesystem::remove(out + suffix, error);
    }
    throw;
  }
  for (size_t k = 0; k < inputs.size(); ++k)
    std::fprintf(stderr, "merged %s: added %s\n", inputs[k].c_str(), Counts(added[k]).c_str());
}

}  // namespace

void RegisterDb(CLI::App& app, Context& context) {
  CLI::App* db =
      app.add_subcommand("db", "The schedule database: statistics, export, import, merge");
  db->require_subcommand(1);
  {
    auto o = std::make_shared<DbOptions>();
    CLI::App* sub = db->add_subcommand(
        "stats", "Row counts, and per kernel the matrices, measurements and failures by reason");
    AddDatabaseOption(sub, o->db);
    sub->add_flag("--json", o->json, "One JSON object on stdout");
    sub->callback([o] { RunStats(*o); });
  }
  {
    auto o = std::make_shared<DbOptions>();
    CLI::App* sub = db->add_subcommand(
        "export",
        "Write every machine, matrix, schedule, measurement, failure and winner to a "
        "gzip-compressed JSON-lines file (--measurements), or the winners alone as plain JSON "
        "lines (--winners); files are written atomically");
    AddDatabaseOption(sub, o->db);
    sub->add_option("--measurements", o->export_path, "Output file, e.g. spmv.jsonl.gz");
    sub->add_option("--winners", o->winners_path,
                    "Also or instead: the stored winners as JSON lines (fingerprint, matrix, "
                    "kernel, dense, dtype, machine, calls (0: per call; N: for N calls, with "
                    "prepare_ms), schedule, time_ms, fixed_csr_ms, updated_at); - for stdout");
    sub->callback([o] { RunExport(*o); });
  }
  {
    auto o = std::make_shared<DbOptions>();
    CLI::App* sub = db->add_subcommand(
        "import", "Load exported files; rows already present are kept unless the file's are newer");
    AddDatabaseOption(sub, o->db);
    sub->add_option("FILE", o->import_paths, "Files written by db export")->required();
    sub->callback([o] { RunImport(*o); });
  }
  {
    auto o = std::make_shared<DbOptions>();
    CLI::App* sub = db->add_subcommand(
        "merge",
        "Combine databases: db merge OUT IN... copies every IN into OUT (created if missing), "
        "each row once; --db F IN... merges into F, and a single IN without --db into the "
        "default database. A bad IN changes nothing");
    AddDatabaseOption(sub, o->db);
    sub->add_option("FILE", o->merge_paths, "OUT then IN..., or only IN... with --db")->required();
    sub->callback([o] { RunMerge(*o); });
  }
  (void)context;
}

}  // namespace sparsetune::cli
