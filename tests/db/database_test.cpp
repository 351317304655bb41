#include <gtest/gtest.h>

#include <fstream>

#include "base/caches.hpp"
#include "base/errors.hpp"
#include "base/hash.hpp"
#include "db/database.hpp"
#include "db/migrations.hpp"
#include "db_test_util.hpp"

namespace sparsetune {
namespace {

using testing::DbTest;
using testing::RawQuery;
using testing::SpmmKey;
using testing::TestMachine;
using testing::TestMatrix;
using testing::TestMeasurement;
using testing::TestSchedule;

using DatabaseTest = DbTest;

TEST_F(DatabaseTest, MigrationsApplyAndSetUserVersion) {
  const std::string path = Path("nested/dir/tune.db");
  {
    auto db = Database::Open(path, OpenMode::kReadWrite);
    EXPECT_GE(Database::LatestSchemaVersion(), 1);
    EXPECT_EQ(db->SchemaVersion(), Database::LatestSchemaVersion());
  }
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), std::to_string(Database::LatestSchemaVersion()));
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
  for (const char* table :
       {"machines", "matrices", "schedules", "measurements", "failures", "winners"}) {
    EXPECT_EQ(RawQuery(path, std::string("SELECT count(*) FROM sqlite_master WHERE type = "
                                         "'table' AND name = '") +
                                 table + "'"),
              "1")
        << table;
  }
  // Reopening applies nothing and keeps the version.
  auto db = Database::Open(path, OpenMode::kReadWrite);
  EXPECT_EQ(db->SchemaVersion(), Database::LatestSchemaVersion());
  DatabaseStats stats = db->Statistics();
  EXPECT_EQ(stats.matrices + stats.schedules + stats.measurements + stats.machines, 0);
}

TEST_F(DatabaseTest, UpsertsAreIdempotent) {
  auto db = Database::Open(Path("tune.db"), OpenMode::kReadWrite);
  int64_t machine = db->UpsertMachine(TestMachine());
  EXPECT_EQ(db->UpsertMachine(TestMachine()), machine);
  EXPECT_NE(db->UpsertMachine(TestMachine("Other CPU")), machine);
  EXPECT_EQ(db->FindMachine(TestMachine()), machine);
  EXPECT_FALSE(db->FindMachine(TestMachine("Unknown CPU")).has_value());
  auto stored_machine = db->GetMachine(machine);
  ASSERT_TRUE(stored_machine);
  EXPECT_EQ(MachineKey(*stored_machine), MachineKey(TestMachine()));

  int64_t matrix = db->UpsertMatrix(TestMatrix(1));
  EXPECT_EQ(db->UpsertMatrix(TestMatrix(1)), matrix);
  // A later name and path for the same pattern do not replace the first ones.
  MatrixRecord renamed = TestMatrix(1);
  renamed.name = "renamed";
  EXPECT_EQ(db->UpsertMatrix(renamed), matrix);
  auto stored = db->FindMatrix("fp1");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->name, "matrix1");
  EXPECT_EQ(stored->dims, (std::vector<int64_t>{101, 201}));
  EXPECT_EQ(stored->nnz, 1001);
  EXPECT_EQ(stored->stats, TestMatrix(1).stats);
  EXPECT_EQ(stored->source_path, "/data/matrix1.mtx");
  // Missing statistics are filled in by a later upsert.
  MatrixRecord bare = TestMatrix(2);
  bare.stats = nlohmann::json::object();
  int64_t matrix2 = db->UpsertMatrix(bare);
  EXPECT_EQ(db->UpsertMatrix(TestMatrix(2)), matrix2);
  EXPECT_EQ(db->FindMatrix("fp2")->stats, TestMatrix(2).stats);

  // Formatting does not change a schedule's identity.
  int64_t schedule = db->UpsertSchedule("spmm", "expr", TestSchedule(4));
  EXPECT_EQ(db->UpsertSchedule("spmm", "expr",
                               "{\"parallel\":{\"threads\":2,\"chunk\":6,\"index\":\"i\"},"
                               "\"loop_order\":[\"i\",\"k\"],\"format\":[\"i:U\",\"k:C\"]}"),
            schedule);
  EXPECT_NE(db->UpsertSchedule("spmv", "expr", TestSchedule(4)), schedule);
  auto found = db->FindSchedule("spmm", ScheduleHash(TestSchedule(4)));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, schedule);
  EXPECT_EQ(found->hash, StableHashHex(found->canonical_json));
  EXPECT_EQ(found->canonical_json, CanonicalScheduleJson(TestSchedule(4)));
  EXPECT_EQ(db->GetSchedule(schedule)->hash, found->hash);

  DatabaseStats stats = db->Statistics();
  EXPECT_EQ(stats.machines, 2);
  EXPECT_EQ(stats.matrices, 2);
  EXPECT_EQ(stats.schedules, 2);
}

TEST_F(DatabaseTest, RemeasuringReplacesInsteadOfDuplicating) {
  auto db = Database::Open(Path("tune.db"), OpenMode::kReadWrite);
  int64_t machine = db->UpsertMachine(TestMachine());
  db->UpsertMatrix(TestMatrix(1));
  TuningKey key = SpmmKey("fp1", machine);
  int64_t schedule = db->RecordMeasurement(TestMeasurement(key, 1, 5.0));
  EXPECT_EQ(db->RecordMeasurement(TestMeasurement(key, 1, 4.0)), schedule);
  EXPECT_EQ(db->RecordMeasurement(TestMeasurement(key, 1, 4.5)), schedule);
  EXPECT_EQ(db->Statistics().measurements, 1);
  EXPECT_EQ(db->Statistics().schedules, 1);
  auto rows = db->TopK(key, 10);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].median_ms, 4.5);

  // Another dtype, dense size or machine is another measurement.
  TuningKey f64 = key;
  f64.dtype = DType::kF64;
  db->RecordMeasurement(TestMeasurement(f64, 1, 9.0));
  TuningKey wide = key;
  wide.dense = {{"j", 512}};
  db->RecordMeasurement(TestMeasurement(wide, 1, 9.0));
  TuningKey other = key;
  other.machine_id = db->UpsertMachine(TestMachine("Other CPU"));
  db->RecordMeasurement(TestMeasurement(other, 1, 9.0));
  EXPECT_EQ(db->Statistics().measurements, 4);
  EXPECT_EQ(RawQuery(Path("tune.db"),
                     "SELECT count(*) FROM measurements WHERE dense = "
                     "'{\"j\":256}' AND dtype = 'f32' AND machine_id = " +
                         std::to_string(machine)),
            "1");
}

TEST_F(DatabaseTest, TopKOrdersVerifiedByMedian) {
  auto db = Database::Open(Path("tune.db"), OpenMode::kReadWrite);
  int64_t machine = db->UpsertMachine(TestMachine());
  db->UpsertMatrix(TestMatrix(1));
  db->UpsertMatrix(TestMatrix(2));
  TuningKey key = SpmmKey("fp1", machine);
  const double times[] = {7.0, 3.0, 9.0, 1.0, 5.0, 2.0};
  for (int s = 0; s < 6; ++s) db->RecordMeasurement(TestMeasurement(key, s, times[s]));
  // Unverified results never rank, however fast.
  MeasurementRecord wrong = TestMeasurement(key, 10, 0.1);
  wrong.verified = false;
  db->RecordMeasurement(wrong);
  // Other matrices and kernels do not leak in.
  db->RecordMeasurement(TestMeasurement(SpmmKey("fp2", machine), 11, 0.2));
  TuningKey spmv = key;
  spmv.kernel = "spmv";
  spmv.dense = {};
  db->RecordMeasurement(TestMeasurement(spmv, 12, 0.3));

  auto top = db->TopK(key, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_DOUBLE_EQ(top[0].median_ms, 1.0);
  EXPECT_DOUBLE_EQ(top[1].median_ms, 2.0);
  EXPECT_DOUBLE_EQ(top[2].median_ms, 3.0);
  EXPECT_EQ(top[0].schedule.canonical_json, CanonicalScheduleJson(TestSchedule(3)));
  EXPECT_EQ(top[0].schedule.kernel, "spmm");
  EXPECT_EQ(top[0].fingerprint, "fp1");
  EXPECT_EQ(top[0].matrix_name, "matrix1");
  EXPECT_EQ(top[0].dense, (DenseSizes{{"j", 256}}));
  EXPECT_EQ(top[0].dtype, DType::kF32);
  EXPECT_EQ(top[0].reps, 11);
  EXPECT_DOUBLE_EQ(top[0].pack_ms, 1.5);
  EXPECT_DOUBLE_EQ(top[0].compile_ms, 250);
  EXPECT_TRUE(top[0].verified);
  EXPECT_EQ(top[0].source, "sampled");
  EXPECT_FALSE(top[0].created_at.empty());
  EXPECT_EQ(db->TopK(key, 100).size(), 6u);
  EXPECT_TRUE(db->TopK(key, 0).empty());
  EXPECT_TRUE(db->TopK(SpmmKey("unknown", machine), 5).empty());

  MeasurementFilter all;
  all.kernel = "spmm";
  all.verified_only = false;
  EXPECT_EQ(db->Measurements(all).size(), 8u);
  all.verified_only = true;
  EXPECT_EQ(db->Measurements(all).size(), 7u);
  all.fingerprint = "fp1";
  all.machine_id = machine;
  EXPECT_EQ(db->Measurements(all).size(), 6u);
  EXPECT_EQ(db->Measurements(MeasurementFilter{}).size(), 8u);
}

TEST_F(DatabaseTest, ResumableCollectionLookups) {
  auto db = Database::Open(Path("tune.db"), OpenMode::kReadWrite);
  int64_t machine = db->UpsertMachine(TestMachine());
  db->UpsertMatrix(TestMatrix(1));
  TuningKey key = SpmmKey("fp1", machine);
  db->RecordMeasurement(TestMeasurement(key, 1, 2.0));
  db->RecordMeasurement(TestMeasurement(key, 2, 3.0));
  FailureRecord failure;
  failure.key = key;
  failure.expression = "C(i,j) = A(i,k) * B(k,j)";
  failure.schedule_json = TestSchedule(3);
  failure.reason = "verification failed";
  db->RecordFailure(failure);
  failure.reason = "compile error";
  db->RecordFailure(failure);
  EXPECT_EQ(db->Statistics().failures, 1);

  EXPECT_TRUE(db->HasMeasurement(key, ScheduleHash(TestSchedule(1))));
  EXPECT_FALSE(db->HasMeasurement(key, ScheduleHash(TestSchedule(3))));
  TuningKey f64 = key;
  f64.dtype = DType::kF64;
  EXPECT_FALSE(db->HasMeasurement(f64, ScheduleHash(TestSchedule(1))));

  std::set<std::string> measured = db->MeasuredScheduleHashes(key, false);
  EXPECT_EQ(measured,
            (std::set<std::string>{ScheduleHash(TestSchedule(1)), ScheduleHash(TestSchedule(2))}));
  std::set<std::string> done = db->MeasuredScheduleHashes(key);
  EXPECT_EQ(done.size(), 3u);
  EXPECT_TRUE(done.count(ScheduleHash(TestSchedule(3))));
  EXPECT_TRUE(db->MeasuredScheduleHashes(f64).empty());

  // A successful re-measurement clears the failure.
  db->RecordMeasurement(TestMeasurement(key, 3, 4.0));
  EXPECT_EQ(db->Statistics().failures, 0);
  EXPECT_TRUE(db->HasMeasurement(key, ScheduleHash(TestSchedule(3))));
}

TEST_F(DatabaseTest, Winners) {
  auto db = Database::Open(Path("tune.db"), OpenMode::kReadWrite);
  int64_t machine = db->UpsertMachine(TestMachine());
  db->UpsertMatrix(TestMatrix(1));
  TuningKey key = SpmmKey("fp1", machine);
  EXPECT_FALSE(db->FindWinner(key).has_value());
  int64_t slow = db->RecordMeasurement(TestMeasurement(key, 1, 5.0));
  int64_t fast = db->RecordMeasurement(TestMeasurement(key, 2, 2.0));
  db->SetWinner(key, slow, 5.0);
  db->SetWinner(key, fast, 2.0, 8.0);
  EXPECT_EQ(db->Statistics().winners, 1);
  auto winner = db->FindWinner(key);
  ASSERT_TRUE(winner);
  EXPECT_EQ(winner->schedule.id, fast);
  EXPECT_EQ(winner->schedule.canonical_json, CanonicalScheduleJson(TestSchedule(2)));
  EXPECT_EQ(winner->schedule.expression, "C(i,j) = A(i,k) * B(k,j)");
  EXPECT_DOUBLE_EQ(winner->time_ms, 2.0);
  ASSERT_TRUE(winner->fixed_csr_ms);
  EXPECT_DOUBLE_EQ(*winner->fixed_csr_ms, 8.0);
  EXPECT_FALSE(winner->updated_at.empty());
  EXPECT_EQ(winner->key.fingerprint, "fp1");

  TuningKey other = key;
  other.dense = {{"j", 64}};
  EXPECT_FALSE(db->FindWinner(other).has_value());
  other.kernel = "spmv";
  db->SetWinner(other, slow, 5.0);
  EXPECT_FALSE(db->FindWinner(other)->fixed_csr_ms.has_value());
  EXPECT_EQ(db->Statistics().winners, 2);
  EXPECT_THROW(db->SetWinner(SpmmKey("unknown", machine), fast, 1.0), InternalError);
}

// A caller who prepares an operand once and calls it N times is served by the winner for N
// calls, kept apart from the winner per call and from other counts.
TEST_F(DatabaseTest, WinnersForACallCountAreKeptApart) {
  auto db = Database::Open(Path("tune.db"), OpenMode::kReadWrite);
  int64_t machine = db->UpsertMachine(TestMachine());
  db->UpsertMatrix(TestMatrix(1));
  const TuningKey key = SpmmKey("fp1", machine);
  const int64_t fast_call = db->RecordMeasurement(TestMeasurement(key, 1, 2.0));
  const int64_t fast_prepare = db->RecordMeasurement(TestMeasurement(key, 2, 2.1));
  db->SetWinner(key, fast_call, 2.0, 8.0);
  EXPECT_FALSE(db->FindWinner(key, 10).has_value());
  db->SetWinnerForCalls(key, 10, fast_prepare, 2.1, 3.0, 8.0);
  db->SetWinnerForCalls(key, 1000, fast_call, 2.0, 40.0, 8.0);
  EXPECT_EQ(db->FindWinner(key)->schedule.id, fast_call);
  const auto for_ten = db->FindWinner(key, 10);
  ASSERT_TRUE(for_ten);
  EXPECT_EQ(for_ten->schedule.id, fast_prepare);
  EXPECT_EQ(for_ten->calls, 10);
  EXPECT_DOUBLE_EQ(for_ten->time_ms, 2.1);
  EXPECT_DOUBLE_EQ(for_ten->prepare_ms, 3.0);
  EXPECT_EQ(db->FindWinner(key, 1000)->schedule.id, fast_call);
  EXPECT_FALSE(db->FindWinner(key, 11).has_value());
  EXPECT_EQ(db->Statistics().winners, 3);
  // Tuned again for 10 calls: replaced, not added.
  db->SetWinnerForCalls(key, 10, fast_call, 2.0, 40.0, 8.0);
  EXPECT_EQ(db->FindWinner(key, 10)->schedule.id, fast_call);
  EXPECT_EQ(db->Statistics().winners, 3);
  EXPECT_THROW(db->SetWinnerForCalls(key, 0, fast_call, 2.0, 1.0, 8.0), InternalError);
}

TEST_F(DatabaseTest, StatisticsCounts) {
  auto db = Database::Open(Path("tune.db"), OpenMode::kReadWrite);
  int64_t machine = db->UpsertMachine(TestMachine());
  for (int m = 0; m < 3; ++m) {
    db->UpsertMatrix(TestMatrix(m));
    TuningKey key = SpmmKey("fp" + std::to_string(m), machine);
    for (int s = 0; s < 4; ++s) db->RecordMeasurement(TestMeasurement(key, s, 1.0 + s));
    db->SetWinner(key, db->TopK(key, 1)[0].schedule.id, 1.0);
  }
  FailureRecord failure;
  failure.key = SpmmKey("fp0", machine);
  failure.schedule_json = TestSchedule(99);
  failure.reason = "timeout";
  db->RecordFailure(failure);
  DatabaseStats stats = db->Statistics();
  EXPECT_EQ(stats.matrices, 3);
  EXPECT_EQ(stats.schedules, 5);
  EXPECT_EQ(stats.measurements, 12);
  EXPECT_EQ(stats.winners, 3);
  EXPECT_EQ(stats.failures, 1);
  EXPECT_EQ(stats.machines, 1);
  nlohmann::json json = DatabaseStatsToJson(stats);
  EXPECT_EQ(json["matrices"], 3);
  EXPECT_EQ(json["schedules"], 5);
  EXPECT_EQ(json["measurements"], 12);
  EXPECT_EQ(json["winners"], 3);
}

// A database at `path` with one SpMM winner (2 ms) of matrix 1 ("fp1"); its machine's id.
int64_t StoreOneWinner(const std::string& path) {
  auto db = Database::Open(path, OpenMode::kReadWrite);
  const int64_t machine = db->UpsertMachine(TestMachine());
  db->UpsertMatrix(TestMatrix(1));
  const TuningKey key = SpmmKey("fp1", machine);
  db->SetWinner(key, db->RecordMeasurement(TestMeasurement(key, 1, 2.0)), 2.0);
  return machine;
}

// A database of schema 1 (f32 and f64 only) is upgraded in place when opened: its rows stay,
// and complex winners can be stored next to them.
TEST_F(DatabaseTest, SchemaOneUpgradesToComplexDtypes) {
  const std::string path = Path("old.db");
  const int64_t machine = StoreOneWinner(path);
  // Back to schema 1: the tables of later migrations dropped, migration 2 run with schema 1's
  // dtype constraint.
  ASSERT_GE(Migrations().size(), 2u);
  std::string downgrade = "DROP TABLE call_count_winners;" + std::string(Migrations()[1].sql);
  const std::string complex_dtypes = "('f32', 'f64', 'c64', 'c128')";
  for (size_t at; (at = downgrade.find(complex_dtypes)) != std::string::npos;)
    downgrade.replace(at, complex_dtypes.size(), "('f32', 'f64')");
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, (downgrade + "PRAGMA user_version = 1;").c_str(), nullptr, nullptr,
                           nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  ASSERT_EQ(RawQuery(path, "PRAGMA user_version"), "1");
  ASSERT_NE(
      RawQuery(path, "SELECT sql FROM sqlite_master WHERE name = 'winners'").find("('f32', 'f64')"),
      std::string::npos);

  auto db = Database::Open(path, OpenMode::kReadWrite);
  EXPECT_EQ(db->SchemaVersion(), Database::LatestSchemaVersion());
  const auto kept = db->FindWinner(SpmmKey("fp1", machine));
  ASSERT_TRUE(kept);
  EXPECT_DOUBLE_EQ(kept->time_ms, 2.0);
  TuningKey complex_key = SpmmKey("fp1", machine);
  complex_key.dtype = DType::kC64;
  EXPECT_FALSE(db->FindWinner(complex_key));
  db->SetWinner(complex_key, db->RecordMeasurement(TestMeasurement(complex_key, 2, 3.0)), 3.0);
  ASSERT_TRUE(db->FindWinner(complex_key));
  EXPECT_DOUBLE_EQ(db->FindWinner(complex_key)->time_ms, 3.0);
  EXPECT_DOUBLE_EQ(db->FindWinner(SpmmKey("fp1", machine))->time_ms, 2.0);
}

// A database of schema 2 (no winners for a call count) is upgraded in place when opened: its
// winners stay, and winners for a call count can be stored beside them.
TEST_F(DatabaseTest, SchemaTwoUpgradesToCallCountWinners) {
  const std::string path = Path("two.db");
  const int64_t machine = StoreOneWinner(path);
  RawQuery(path, "DROP TABLE call_count_winners");
  RawQuery(path, "PRAGMA user_version = 2");
  ASSERT_EQ(RawQuery(path, "PRAGMA user_version"), "2");
  auto db = Database::Open(path, OpenMode::kReadWrite);
  EXPECT_EQ(db->SchemaVersion(), Database::LatestSchemaVersion());
  const TuningKey key = SpmmKey("fp1", machine);
  ASSERT_TRUE(db->FindWinner(key));
  EXPECT_DOUBLE_EQ(db->FindWinner(key)->time_ms, 2.0);
  EXPECT_FALSE(db->FindWinner(key, 5));
  db->SetWinnerForCalls(key, 5, db->FindWinner(key)->schedule.id, 2.0, 0.25, std::nullopt);
  EXPECT_DOUBLE_EQ(db->FindWinner(key, 5)->prepare_ms, 0.25);
  EXPECT_EQ(db->Statistics().winners, 2);
}

TEST_F(DatabaseTest, ReadOnlyMode) {
  EXPECT_THROW(Database::Open(Path("missing.db"), OpenMode::kReadOnly), InputError);
  EXPECT_FALSE(std::filesystem::exists(Path("missing.db")));
  {
    auto db = Database::Open(Path("tune.db"), OpenMode::kReadWrite);
    int64_t machine = db->UpsertMachine(TestMachine());
    db->UpsertMatrix(TestMatrix(1));
    db->RecordMeasurement(TestMeasurement(SpmmKey("fp1", machine), 1, 2.0));
  }
  auto db = Database::Open(Path("tune.db"), OpenMode::kReadOnly);
  EXPECT_EQ(db->Statistics().measurements, 1);
  auto machine = db->FindMachine(TestMachine());
  ASSERT_TRUE(machine);
  EXPECT_EQ(db->TopK(SpmmKey("fp1", *machine), 1).size(), 1u);
  EXPECT_THROW(db->UpsertMatrix(TestMatrix(2)), InternalError);
  EXPECT_EQ(db->Statistics().matrices, 1);

  // A database on read-only storage still answers.
  std::filesystem::permissions(Path("tune.db"), std::filesystem::perms::owner_read,
                               std::filesystem::perm_options::replace);
  if (access(Path("tune.db").c_str(), W_OK) != 0) {  // root ignores permissions
    auto readonly = Database::Open(Path("tune.db"), OpenMode::kReadOnly);
    EXPECT_EQ(readonly->Statistics().measurements, 1);
  }
}

TEST_F(DatabaseTest, NewerSchemaVersionIsRefused) {
  const std::string path = Path("tune.db");
  Database::Open(path, OpenMode::kReadWrite);
  RawQuery(path, "PRAGMA user_version = " + std::to_string(Database::LatestSchemaVersion() + 1));
  for (OpenMode mode : {OpenMode::kReadWrite, OpenMode::kReadOnly}) {
    try {
      Database::Open(path, mode);
      FAIL() << "newer database was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
      EXPECT_EQ(e.file(), path);
    }
  }
}

TEST_F(DatabaseTest, CorruptOrForeignFileIsRefused) {
  auto expect_refused = [](const std::string& path, OpenMode mode) {
    try {
      Database::Open(path, mode);
      ADD_FAILURE() << path << " was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": not a sparsetune database (", 0), 0u)
          << e.what();
    }
  };
  const std::string text = Path("notes.txt");
  std::ofstream(text) << "this is not a database, just some text\n" << std::string(5000, 'x');
  const auto size = std::filesystem::file_size(text);
  expect_refused(text, OpenMode::kReadWrite);
  expect_refused(text, OpenMode::kReadOnly);
  // The text file was not touched.
  EXPECT_EQ(std::filesystem::file_size(text), size);

  // A real database whose pages were overwritten.
  const std::string damaged = Path("damaged.db");
  {
    auto db = Database::Open(damaged, OpenMode::kReadWrite);
    db->UpsertMatrix(TestMatrix(1));
  }
  {
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    std::string garbage(8000, '\x5a');
    file.write(garbage.data(), std::streamsize(garbage.size()));
  }
  expect_refused(damaged, OpenMode::kReadWrite);

  // Another program's SQLite database.
  const std::string foreign = Path("foreign.db");
  {
    sqlite3* raw = nullptr;
    sqlite3_open(foreign.c_str(), &raw);
    sqlite3_exec(raw, "CREATE TABLE notes (text TEXT)", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  expect_refused(foreign, OpenMode::kReadWrite);
  expect_refused(foreign, OpenMode::kReadOnly);

  // An empty file becomes a database when written, but is no database to read.
  const std::string empty = Path("empty.db");
  std::ofstream(empty).flush();
  expect_refused(empty, OpenMode::kReadOnly);
  EXPECT_EQ(Database::Open(empty, OpenMode::kReadWrite)->SchemaVersion(),
            Database::LatestSchemaVersion());

  expect_refused(dir_, OpenMode::kReadOnly);
}

TEST(DatabaseHelpers, CanonicalForms) {
  EXPECT_EQ(DenseSizesToText({}), "{}");
  EXPECT_EQ(DenseSizesToText({{"l", 16}, {"k", 256}}), "{\"k\":256,\"l\":16}");
  EXPECT_EQ(DenseSizesFromText("{\"k\":256,\"l\":16}"), (DenseSizes{{"k", 256}, {"l", 16}}));
  EXPECT_THROW(DenseSizesFromText("[1]"), InputError);
  EXPECT_THROW(DenseSizesFromText("{\"k\":1.5}"), InputError);
  EXPECT_EQ(CanonicalScheduleJson("{ \"loop_order\": [\"i\"],\n \"format\": [\"i:U\"] }"),
            "{\"format\":[\"i:U\"],\"loop_order\":[\"i\"]}");
  EXPECT_EQ(ScheduleHash("{\"loop_order\":[\"i\"],\"format\":[\"i:U\"]}"),
            ScheduleHash("{ \"format\": [\"i:U\"], \"loop_order\": [\"i\"] }"));
  EXPECT_EQ(ScheduleHash(TestSchedule(1)).size(), 32u);
  EXPECT_THROW(CanonicalScheduleJson("{not json"), InputError);
  // What is stored is a schedule: one that is not, or holds values the generated code cannot,
  // is refused.
  EXPECT_THROW(CanonicalScheduleJson("{\"b\": 1}"), InputError);
  EXPECT_THROW(CanonicalScheduleJson("{\"loop_order\": [\"i\"], \"format\": [\"i:U\"], "
                                     "\"parallel\": {\"index\": \"i\", \"chunk\": 2147483648}}"),
               InputError);
  EXPECT_EQ(ParseDType("f64"), DType::kF64);
  EXPECT_THROW(ParseDType("f16"), InputError);
}

TEST(Machine, DetectsThisMachine) {
  MachineInfo machine = DetectMachine();
  EXPECT_GE(machine.threads, 1);
  EXPECT_GE(machine.cores, 1);
  EXPECT_LE(machine.cores, machine.threads);
  EXPECT_EQ(MachineKey(machine), MachineKey(DetectMachine()));
  EXPECT_EQ(MachineKey(machine).size(), 32u);
  MachineInfo flagged = machine;
  flagged.flags = "-O2";
  EXPECT_NE(MachineKey(flagged), MachineKey(machine));
  EXPECT_EQ(DetectMachine("c++", "-O2").flags, "-O2");
  // A missing compiler leaves the compiler fields empty instead of failing.
  EXPECT_TRUE(DetectMachine("/nonexistent/compiler").compiler.empty());
}

// The machine a time is stored under has the caches the rules sized their working sets by:
// what sysfs reports, with MachineCaches' common sizes only where it reports nothing.
TEST(Machine, RecordsTheCachesTheRulesSizeBy) {
  const MachineInfo machine = DetectMachine();
  const CacheSizes& sized = MachineCaches();
  EXPECT_GT(sized.l1d, 0);
  EXPECT_GE(sized.l2, sized.l1d);
  EXPECT_GE(sized.llc, sized.l2);
  if (machine.l1d_bytes > 0) EXPECT_EQ(sized.l1d, machine.l1d_bytes);
  if (machine.l2_bytes > 0) EXPECT_EQ(sized.l2, machine.l2_bytes);
  if (machine.l3_bytes > 0) EXPECT_EQ(sized.llc, machine.l3_bytes);
}

}  // namespace
}  // namespace sparsetune
