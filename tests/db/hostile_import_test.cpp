// Poisoned rows (tests/data/hostile/import_*.jsonl, and rows changed behind sparsetune's back):
// import and merge check every schedule before they commit and store nothing when one is bad;
// a stored schedule that is not valid is refused, naming the database, wherever it is read.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "cli/cli_support.hpp"
#include "db/database.hpp"
#include "db_test_util.hpp"

namespace sparsetune {
namespace {

using testing::DbTest;
using testing::RawQuery;
using testing::RunCli;

const std::string kHostile = std::string(SPARSETUNE_SOURCE_DIR) + "/tests/data/hostile/";

using HostileImport = DbTest;

// Every count of `db stats`; all zero for a database where nothing was stored.
nlohmann::json Counts(const std::string& db) {
  const auto r = RunCli({"db", "stats", "--db", db, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json stats = nlohmann::json::parse(r.out);
  stats.erase("database");
  return stats;
}

TEST_F(HostileImport, TheValidFileImports) {
  const auto r = RunCli({"db", "import", "--db", Path("t.db"), kHostile + "import_valid.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Counts(Path("t.db"))["winners"], 1);
  EXPECT_EQ(Counts(Path("t.db"))["schedules"], 1);
}

// A schedule that does not parse imported with exit 0 and failed query, export and train
// afterwards; a 2^31 chunk imported and crashed bench.
TEST_F(HostileImport, APoisonedScheduleStopsTheImportWithNothingStored) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"import_schedule_not_json.jsonl", "schedule 13 is not valid (schedule:1: invalid JSON"},
      {"import_chunk_2p31.jsonl",
       "schedule 13 is not valid (schedule: parallel chunk is 2147483648"}};
  for (const auto& [file, cause] : cases) {
    const std::string db = Path(file + ".db");
    // A database with something in it already: it must stay as it was.
    ASSERT_EQ(RunCli({"db", "import", "--db", db, kHostile + "import_valid.jsonl"}).exit_code, 0);
    RawQuery(db, "DELETE FROM winners");
    const nlohmann::json before = Counts(db);
    const auto r = RunCli({"db", "import", "--db", db, kHostile + file});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(kHostile + file + ":3: " + cause), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_EQ(Counts(db), before);
    EXPECT_EQ(Counts(db)["winners"], 0);
  }
}

TEST_F(HostileImport, NegativeTimesAreRefused) {
  std::ifstream in(kHostile + "import_valid.jsonl");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"time_ms\":");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 10, "-");
  const std::string file = Path("negative.jsonl");
  std::ofstream(file) << text;
  const auto r = RunCli({"db", "import", "--db", Path("n.db"), file});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(":5: time_ms is -"), std::string::npos) << r.err;
  EXPECT_EQ(Counts(Path("n.db"))["matrices"], 0);
}

// A database whose schedule row was changed behind sparsetune's back (an older version, a
// hand edit): merging it stores nothing, and reading the row names the database.
void Poison(const std::string& db, const std::string& json) {
  ASSERT_EQ(RunCli({"db", "import", "--db", db, kHostile + "import_valid.jsonl"}).exit_code, 0);
  RawQuery(db, "UPDATE schedules SET canonical_json = '" + json + "'");
  ASSERT_EQ(RawQuery(db, "SELECT canonical_json FROM schedules"), json);
}

TEST_F(HostileImport, MergingAPoisonedDatabaseStoresNothing) {
  const std::string poisoned = Path("poisoned.db"), into = Path("into.db");
  Poison(poisoned, "{not json");
  ASSERT_EQ(RunCli({"db", "import", "--db", into, kHostile + "import_valid.jsonl"}).exit_code, 0);
  RawQuery(into, "DELETE FROM winners");
  const nlohmann::json before = Counts(into);
  const auto r = RunCli({"db", "merge", "--db", into, poisoned});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(poisoned + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is not valid"), std::string::npos) << r.err;
  EXPECT_EQ(Counts(into), before);
}

TEST_F(HostileImport, AStoredScheduleThatIsNotValidIsRefusedWhereverItIsRead) {
  const std::string db = Path("stored.db");
  Poison(db, R"({"format":["i:U","k:C"],"loop_order":["i","k"],)"
             R"("parallel":{"chunk":2147483648,"index":"i","threads":0}})");
  auto r = RunCli({"db", "export", "--db", db, "--winners", "-"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(db + ": a stored winner's schedule is not valid"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("parallel chunk is 2147483648"), std::string::npos) << r.err;

  auto opened = Database::Open(db, OpenMode::kReadOnly);
  const std::string id = RawQuery(db, "SELECT id FROM schedules");
  try {
    opened->GetSchedule(std::stoll(id));
    ADD_FAILURE() << "a poisoned row was returned";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find(db + ": stored schedule " + id + " is not a valid schedule"),
        std::string::npos)
        << e.what();
  }
  TuningKey key;
  key.fingerprint = RawQuery(db, "SELECT fingerprint FROM matrices");
  key.kernel = "spmv";
  key.machine_id = std::stoll(RawQuery(db, "SELECT id FROM machines"));
  EXPECT_THROW(opened->FindWinner(key), InputError);
  EXPECT_THROW(opened->TopK(key, 10), InputError);
}

// A number where a whole one belongs (found by fuzz_db_import: a machine id of 3.3e41, whose
// conversion was undefined) is refused naming the field, and nothing is stored.
TEST_F(HostileImport, AFloatWhereAWholeNumberBelongsIsRefusedByName) {
  std::ifstream in(kHostile + "import_valid.jsonl");
  std::string header((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = header.find("\"id\":1,");
  ASSERT_NE(at, std::string::npos);
  header.replace(at, 7, "\"id\":3.3e41,");
  const std::string file = Path("float_id.jsonl");
  std::ofstream(file) << header;
  const auto r = RunCli({"db", "import", "--db", Path("f.db"), file});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(file + ":1: \"id\" must be a whole number"), std::string::npos) << r.err;
  EXPECT_EQ(Counts(Path("f.db"))["schedules"], 0);
  // The same for a dense index size (2e26) in a measurement.
  std::ifstream again(kHostile + "import_valid.jsonl");
  std::string rows((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  const size_t dense = rows.find("\"dense\":{}");
  ASSERT_NE(dense, std::string::npos);
  rows.replace(dense, 10, "\"dense\":{\"j\":2e26}");
  std::ofstream(Path("float_dense.jsonl")) << rows;
  const auto d = RunCli({"db", "import", "--db", Path("d.db"), Path("float_dense.jsonl")});
  EXPECT_EQ(d.exit_code, 2) << d.err;
  EXPECT_NE(d.err.find("\"dense\" must be a whole number"), std::string::npos) << d.err;
  EXPECT_EQ(Counts(Path("d.db"))["schedules"], 0);
}

}  // namespace
}  // namespace sparsetune
