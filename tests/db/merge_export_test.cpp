// db merge OUT IN... and db export --winners, in the library and as a user runs them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "cli/cli_support.hpp"
#include "db/database.hpp"
#include "db_test_util.hpp"

namespace sparsetune {
namespace {

using testing::DbTest;
using testing::RunCli;
using testing::SpmmKey;
using testing::TestMachine;
using testing::TestMatrix;
using testing::TestMeasurement;

using MergeExportTest = DbTest;

// Matrices first..last on one machine, three measured schedules each, the fastest the winner.
// Measurements of a matrix in two files are the same rows: same key, same schedule.
void Populate(Database& db, int first, int last, const std::string& cpu = "Test CPU 9000") {
  const int64_t machine = db.UpsertMachine(TestMachine(cpu));
  for (int m = first; m <= last; ++m) {
    db.UpsertMatrix(TestMatrix(m));
    const TuningKey key = SpmmKey("fp" + std::to_string(m), machine);
    for (int s = 0; s < 3; ++s) db.RecordMeasurement(TestMeasurement(key, s, 1.0 + m + s));
    const auto best = db.TopK(key, 1);
    db.SetWinner(key, best[0].schedule.id, best[0].median_ms,
                 m % 2 == 0 ? std::optional<double>(2.5 + m) : std::nullopt);
  }
}

nlohmann::json StatsOf(const std::string& path) {
  const auto r = RunCli({"db", "stats", "--db", path, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json stats = nlohmann::json::parse(r.out);
  stats.erase("database");
  return stats;
}

std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(MergeExportTest, MergesSeveralDatabasesInOneTransaction) {
  Populate(*Database::Open(Path("a.db"), OpenMode::kReadWrite), 0, 2);
  Populate(*Database::Open(Path("b.db"), OpenMode::kReadWrite), 2, 4);
  Populate(*Database::Open(Path("c.db"), OpenMode::kReadWrite), 5, 5, "Other CPU");
  auto out = Database::Open(Path("out.db"), OpenMode::kReadWrite);
  const std::vector<DatabaseStats> added =
      out->MergeDatabases({Path("a.db"), Path("b.db"), Path("c.db")});
  ASSERT_EQ(added.size(), 3u);
  // b shares matrix 2 (and its rows) with a: only its other two matrices are new.
  EXPECT_EQ(added[0].matrices, 3);
  EXPECT_EQ(added[1].matrices, 2);
  EXPECT_EQ(added[1].measurements, 6);
  EXPECT_EQ(added[1].winners, 2);
  EXPECT_EQ(added[2].machines, 1);
  const DatabaseStats total = out->Statistics();
  EXPECT_EQ(total.matrices, 6);
  EXPECT_EQ(total.measurements, 18);
  EXPECT_EQ(total.winners, 6);
  EXPECT_EQ(total.machines, 2);
  int64_t sum = 0;
  for (const auto& a : added) sum += a.measurements;
  EXPECT_EQ(sum, total.measurements);
  // Again: nothing new.
  for (const auto& again : out->MergeDatabases({Path("b.db"), Path("a.db")})) {
    EXPECT_EQ(again.matrices, 0);
    EXPECT_EQ(again.measurements, 0);
    EXPECT_EQ(again.winners, 0);
  }
}

TEST_F(MergeExportTest, ABadInputChangesNothing) {
  Populate(*Database::Open(Path("a.db"), OpenMode::kReadWrite), 0, 1);
  Populate(*Database::Open(Path("b.db"), OpenMode::kReadWrite), 2, 3);
  auto out = Database::Open(Path("out.db"), OpenMode::kReadWrite);
  out->MergeDatabases({Path("a.db")});
  const DatabaseStats before = out->Statistics();
  try {
    out->MergeDatabases({Path("b.db"), Path("missing.db")});
    ADD_FAILURE() << "a missing input was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), Path("missing.db"));
  }
  EXPECT_THROW(out->MergeDatabases({Path("out.db")}), InputError);
  const DatabaseStats after = out->Statistics();
  EXPECT_EQ(after.matrices, before.matrices);
  EXPECT_EQ(after.measurements, before.measurements);
  EXPECT_EQ(after.winners, before.winners);
}

TEST_F(MergeExportTest, CliMergesShardsIntoANewDatabase) {
  Populate(*Database::Open(Path("shard0.db"), OpenMode::kReadWrite), 0, 3);
  Populate(*Database::Open(Path("shard1.db"), OpenMode::kReadWrite), 3, 6);
  const std::string out = Path("sub/all.db");
  auto r = RunCli({"db", "merge", out, Path("shard0.db"), Path("shard1.db")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("shard1.db"), std::string::npos) << r.err;
  nlohmann::json stats = StatsOf(out);
  EXPECT_EQ(stats["matrices"], 7);
  EXPECT_EQ(stats["measurements"], 21);
  EXPECT_EQ(stats["winners"], 7);
  // Merging again, in either form, duplicates nothing.
  ASSERT_EQ(RunCli({"db", "merge", out, Path("shard1.db"), Path("shard0.db")}).exit_code, 0);
  ASSERT_EQ(RunCli({"db", "merge", "--db", out, Path("shard0.db")}).exit_code, 0);
  EXPECT_EQ(StatsOf(out), stats);
}

TEST_F(MergeExportTest, CliBadInputExitsTwoAndLeavesOutUnchanged) {
  Populate(*Database::Open(Path("good.db"), OpenMode::kReadWrite), 0, 2);
  Populate(*Database::Open(Path("out.db"), OpenMode::kReadWrite), 5, 5);
  const std::string text = Path("notes.txt");
  std::ofstream(text) << "not a database\n";
  const nlohmann::json before = StatsOf(Path("out.db"));
  for (const std::string& bad : {Path("missing.db"), text}) {
    const auto r = RunCli({"db", "merge", Path("out.db"), Path("good.db"), bad});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
    EXPECT_EQ(StatsOf(Path("out.db")), before);
  }
  // An output that did not exist is not left behind.
  const auto r = RunCli({"db", "merge", Path("new.db"), Path("good.db"), text});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(std::filesystem::exists(Path("new.db")));
}

TEST_F(MergeExportTest, ExportsOneLinePerWinner) {
  {
    auto db = Database::Open(Path("w.db"), OpenMode::kReadWrite);
    Populate(*db, 0, 1);
    // A second kernel on matrix 0: its own winner.
    const int64_t machine = *db->FindMachine(TestMachine());
    TuningKey key = SpmmKey("fp0", machine);
    key.kernel = "spmv";
    key.dense = {};
    MeasurementRecord record = TestMeasurement(key, 9, 0.5);
    record.expression = "y(i) = A(i,k) * x(k)";
    db->RecordMeasurement(record);
    db->SetWinner(key, db->TopK(key, 1)[0].schedule.id, 0.5, 0.75);
  }
  const std::string out = Path("winners.jsonl");
  auto r = RunCli({"db", "export", "--db", Path("w.db"), "--winners", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = JsonLines(Slurp(out));
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) {
    for (const char* field : {"fingerprint", "matrix", "kernel", "dense", "dtype", "machine",
                              "schedule", "time_ms", "fixed_csr_ms", "updated_at"})
      EXPECT_TRUE(line.contains(field)) << field << " in " << line.dump();
    EXPECT_EQ(line["machine"]["cpu_model"], "Test CPU 9000");
    EXPECT_TRUE(line["machine"]["id"].is_number_integer());
    EXPECT_TRUE(line["schedule"].is_object());
    EXPECT_EQ(line["dtype"], "f32");
  }
  const nlohmann::json& first = lines[0];
  EXPECT_EQ(first["fingerprint"], "fp0");
  EXPECT_EQ(first["matrix"], "matrix0");
  EXPECT_EQ(first["kernel"], "spmm");
  EXPECT_EQ(first["dense"], nlohmann::json({{"j", 256}}));
  EXPECT_DOUBLE_EQ(first["time_ms"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(first["fixed_csr_ms"].get<double>(), 2.5);
  EXPECT_EQ(first["schedule"]["parallel"]["chunk"], 2);
  EXPECT_TRUE(lines[1]["fixed_csr_ms"].is_null());
  EXPECT_EQ(lines[2]["kernel"], "spmv");
  EXPECT_EQ(lines[2]["dense"], nlohmann::json::object());
  EXPECT_EQ(lines[2]["schedule"]["parallel"]["chunk"], 11);

  // "-" writes the same lines to stdout; measurements and winners in one call.
  r = RunCli({"db", "export", "--db", Path("w.db"), "--winners", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Slurp(out));
  r = RunCli({"db", "export", "--db", Path("w.db"), "--winners", Path("again.jsonl"),
              "--measurements", Path("m.jsonl.gz")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(Path("m.jsonl.gz")));
  EXPECT_EQ(Slurp(Path("again.jsonl")), Slurp(out));
  // Neither output named: a usage error.
  EXPECT_EQ(RunCli({"db", "export", "--db", Path("w.db")}).exit_code, 2);
}

// A winner for a call count travels with its count and preparation time: through db merge
// (the same records as export and import) and in the winners' JSON lines.
TEST_F(MergeExportTest, WinnersForACallCountTravel) {
  {
    auto db = Database::Open(Path("a.db"), OpenMode::kReadWrite);
    Populate(*db, 0, 0);
    const TuningKey key = SpmmKey("fp0", *db->FindMachine(TestMachine()));
    db->SetWinnerForCalls(key, 50, db->TopK(key, 2)[1].schedule.id, 2.0, 0.5, 2.5);
  }
  auto merged = Database::Open(Path("m.db"), OpenMode::kReadWrite);
  merged->MergeDatabase(Path("a.db"));
  const TuningKey key = SpmmKey("fp0", *merged->FindMachine(TestMachine()));
  const auto for_50 = merged->FindWinner(key, 50);
  ASSERT_TRUE(for_50);
  EXPECT_DOUBLE_EQ(for_50->time_ms, 2.0);
  EXPECT_DOUBLE_EQ(for_50->prepare_ms, 0.5);
  EXPECT_DOUBLE_EQ(merged->FindWinner(key)->time_ms, 1.0);

  auto r = RunCli({"db", "export", "--db", Path("m.db"), "--winners", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["calls"], 0);
  EXPECT_FALSE(lines[0].contains("prepare_ms"));
  EXPECT_EQ(lines[1]["calls"], 50);
  EXPECT_DOUBLE_EQ(lines[1]["prepare_ms"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(lines[1]["time_ms"].get<double>(), 2.0);
}

}  // namespace
}  // namespace sparsetune
