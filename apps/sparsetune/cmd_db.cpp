// sparsetune db: row counts of the schedule database, and moving measurements between
// databases (compressed JSON lines that travel with the repository, or another database file).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "db/database.hpp"

namespace sparsetune::cli {

namespace {

struct DbOptions {
  std::string db;
  bool json = false;
  std::string export_path;
  std::vector<std::string> import_paths;
  std::string merge_path;
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
  std::printf("\n%-12s %9s %13s %9s  %s\n", "kernel", "matrices", "measurements", "failures",
              "by reason");
  for (const auto& k : kernels) {
    int64_t failures = 0;
    std::string reasons;
    for (const auto& [reason, count] : k.failures) {
      failures += count;
      reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(count);
    }
    std::printf("%-12s %9lld %13lld %9lld  %s\n", k.kernel.c_str(), (long long)k.matrices,
                (long long)k.measurements, (long long)failures, reasons.c_str());
  }
}

void RunExport(const DbOptions& o) {
  const std::string path = DatabasePathOrDefault(o.db);
  auto db = Database::Open(path, OpenMode::kReadOnly);
  const DatabaseStats s = db->ExportMeasurements(o.export_path);
  std::fprintf(stderr, "exported %s to %s\n", Counts(s).c_str(), o.export_path.c_str());
}

void RunImport(const DbOptions& o) {
  auto db = Database::Open(DatabasePathOrDefault(o.db), OpenMode::kReadWrite);
  for (const auto& file : o.import_paths) {
    const DatabaseStats s = db->ImportMeasurements(file);
    std::fprintf(stderr, "imported %s: added %s\n", file.c_str(), Counts(s).c_str());
  }
}

void RunMerge(const DbOptions& o) {
  auto db = Database::Open(DatabasePathOrDefault(o.db), OpenMode::kReadWrite);
  const DatabaseStats s = db->MergeDatabase(o.merge_path);
  std::fprintf(stderr, "merged %s: added %s\n", o.merge_path.c_str(), Counts(s).c_str());
}

}  // namespace

void RegisterDb(CLI::App& app, Context& context) {
  CLI::App* db = app.add_subcommand("db", "The schedule database: statistics, export, import");
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
        "gzip-compressed JSON-lines file (written atomically)");
    AddDatabaseOption(sub, o->db);
    sub->add_option("--measurements", o->export_path, "Output file, e.g. spmv.jsonl.gz")
        ->required();
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
    CLI::App* sub = db->add_subcommand("merge", "Copy everything from another database file");
    AddDatabaseOption(sub, o->db);
    sub->add_option("OTHER", o->merge_path, "Another sparsetune database")->required();
    sub->callback([o] { RunMerge(*o); });
  }
  (void)context;
}

}  // namespace sparsetune::cli
