#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "db/database.hpp"
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

using ConcurrencyTest = DbTest;

// Runs body in a child process; the child exits 0 if body returns, 1 if it throws. Nothing of
// the parent's SQLite state is used in the child: each child opens its own connection.
pid_t Spawn(const std::function<void()>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      body();
    } catch (const std::exception& e) {
      fprintf(stderr, "child %d: %s\n", int(getpid()), e.what());
      code = 1;
    }
    _exit(code);
  }
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The database is whole and every row's references resolve.
void ExpectConsistent(const std::string& path) {
  EXPECT_EQ(RawQuery(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(RawQuery(path, "PRAGMA foreign_key_check"), "");
  EXPECT_EQ(RawQuery(path,
                     "SELECT count(*) FROM measurements m "
                     "LEFT JOIN schedules s ON s.id = m.schedule_id "
                     "LEFT JOIN matrices x ON x.id = m.matrix_id "
                     "LEFT JOIN machines c ON c.id = m.machine_id "
                     "WHERE s.id IS NULL OR x.id IS NULL OR c.id IS NULL"),
            "0");
  EXPECT_EQ(RawQuery(path,
                     "SELECT count(*) FROM winners w LEFT JOIN schedules s ON s.id = w.schedule_id "
                     "WHERE s.id IS NULL"),
            "0");
}

TEST_F(ConcurrencyTest, ParallelWritersKeepExactCounts) {
  // The file does not exist yet: the children also race to create and migrate it.
  const std::string path = Path("shared.db");
  constexpr int kChildren = 4, kPerChild = 200, kStride = 150, kFailures = 20;
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    children.push_back(Spawn([&, c] {
      auto db = Database::Open(path, OpenMode::kReadWrite);
      int64_t machine = db->UpsertMachine(TestMachine());
      db->UpsertMatrix(TestMatrix(0));
      db->UpsertMatrix(TestMatrix(1));
      for (int i = 0; i < kPerChild; ++i) {
        // Children c and c + 1 share kPerChild - kStride schedules.
        int s = c * kStride + i;
        TuningKey key = SpmmKey("fp" + std::to_string(s % 2), machine);
        int64_t schedule = db->RecordMeasurement(TestMeasurement(key, s, 1.0 + s));
        if (i % 10 < 2) db->SetWinner(key, schedule, 1.0 + s);
        if (i % 10 == 5) {
          FailureRecord failure;
          failure.key = SpmmKey("fp0", machine);
          failure.schedule_json = TestSchedule(100000 + (i / 10) % kFailures);
          failure.reason = "child " + std::to_string(c);
          db->RecordFailure(failure);
        }
      }
    }));
  }
  for (pid_t child : children) EXPECT_EQ(WaitExit(child), 0);

  auto db = Database::Open(path, OpenMode::kReadOnly);
  DatabaseStats stats = db->Statistics();
  const int distinct = (kChildren - 1) * kStride + kPerChild;
  EXPECT_EQ(stats.measurements, distinct);
  EXPECT_EQ(stats.schedules, distinct + kFailures);
  EXPECT_EQ(stats.matrices, 2);
  EXPECT_EQ(stats.machines, 1);
  EXPECT_EQ(stats.winners, 2);
  EXPECT_EQ(stats.failures, kFailures);
  // Every schedule's time is the one all writers agreed on.
  EXPECT_EQ(RawQuery(path,
                     "SELECT count(*) FROM measurements m JOIN schedules s ON s.id = "
                     "m.schedule_id WHERE m.median_ms != -1.0 + json_extract("
                     "s.canonical_json, '$.parallel.chunk')"),
            "0");
  EXPECT_EQ(db->SchemaVersion(), Database::LatestSchemaVersion());
  ExpectConsistent(path);
}

// A child that writes until it is killed with SIGKILL: delay_ms after it has written `signals`
// bytes to the pipe it is given (it writes one after its first commit).
void SpawnWriterAndKill(const std::function<void(int)>& writer, int delay_ms, int signals = 1) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = Spawn([&] {
    close(fds[0]);
    writer(fds[1]);
  });
  close(fds[1]);
  char byte;
  for (int i = 0; i < signals; ++i) EXPECT_EQ(read(fds[0], &byte, 1), 1);
  close(fds[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  kill(pid, SIGKILL);
  EXPECT_EQ(WaitExit(pid), 128 + SIGKILL);
}

TEST_F(ConcurrencyTest, SigkillMidWriteLeavesNoTornRows) {
  const std::string path = Path("killed.db");
  int64_t next = 0;
  for (int round = 0; round < 4; ++round) {
    const int64_t start = next;
    SpawnWriterAndKill(
        [&](int ready) {
          auto db = Database::Open(path, OpenMode::kReadWrite);
          int64_t machine = db->UpsertMachine(TestMachine());
          for (int64_t i = start;; ++i) {
            MatrixRecord matrix = TestMatrix(int(i % 7));
            db->UpsertMatrix(matrix);
            TuningKey key = SpmmKey(matrix.fingerprint, machine);
            int64_t schedule = db->RecordMeasurement(TestMeasurement(key, int(i), 1.0 + i));
            db->SetWinner(key, schedule, 1.0 + i);
            if (i == start) (void)!write(ready, "x", 1);
          }
        },
        30 + 40 * round);
    auto db = Database::Open(path, OpenMode::kReadWrite);
    DatabaseStats stats = db->Statistics();
    EXPECT_GT(stats.measurements, next);
    // Each measurement came with its own new schedule, in one transaction.
    EXPECT_EQ(stats.schedules, stats.measurements);
    next = stats.measurements;
    ExpectConsistent(path);
  }
  // Still writable after the crashes.
  auto db = Database::Open(path, OpenMode::kReadWrite);
  int64_t machine = db->UpsertMachine(TestMachine());
  db->RecordMeasurement(TestMeasurement(SpmmKey("fp0", machine), -1, 1.0));
  EXPECT_EQ(db->Statistics().measurements, next + 1);
}

TEST_F(ConcurrencyTest, SigkillDuringImportIsAllOrNothing) {
  // A file large enough that importing it takes a while.
  const std::string exported = Path("big.jsonl.gz");
  constexpr int kRows = 20000;
  {
    // Written directly: recording this many rows one transaction at a time takes seconds.
    auto db = Database::Open(Path("source.db"), OpenMode::kReadWrite);
    int64_t machine = db->UpsertMachine(TestMachine());
    db->UpsertMatrix(TestMatrix(0));
    db->RecordMeasurement(TestMeasurement(SpmmKey("fp0", machine), 0, 1.0));
    db->ExportMeasurements(Path("one.jsonl.gz"));
    std::vector<nlohmann::json> lines;
    gzFile in = gzopen(Path("one.jsonl.gz").c_str(), "rb");
    char buffer[1 << 16];
    while (gzgets(in, buffer, sizeof buffer)) lines.push_back(nlohmann::json::parse(buffer));
    gzclose(in);
    ASSERT_EQ(lines.size(), 4u);  // header, matrix, schedule, measurement
    gzFile out = gzopen(exported.c_str(), "wb1");
    auto put = [&](const nlohmann::json& line) { gzputs(out, (line.dump() + "\n").c_str()); };
    put(lines[0]);
    put(lines[1]);
    for (int s = 0; s < kRows; ++s) {
      nlohmann::json schedule = lines[2], measurement = lines[3];
      schedule["id"] = s;
      schedule["json"] = CanonicalScheduleJson(TestSchedule(s));
      measurement["schedule"] = s;
      measurement["median_ms"] = 1.0 + s;
      put(schedule);
      put(measurement);
    }
    gzclose(out);
  }
  // Killed mid-import at a few points, and once after the import finished.
  for (int delay : {0, 40, 120, -1}) {
    const std::string path = Path("import" + std::to_string(delay) + ".db");
    Database::Open(path, OpenMode::kReadWrite);
    SpawnWriterAndKill(
        [&](int ready) {
          auto db = Database::Open(path, OpenMode::kReadWrite);
          (void)!write(ready, "x", 1);
          db->ImportMeasurements(exported);
          (void)!write(ready, "y", 1);
          pause();
        },
        std::max(delay, 0), delay < 0 ? 2 : 1);
    auto db = Database::Open(path, OpenMode::kReadOnly);
    int64_t count = db->Statistics().measurements;
    EXPECT_TRUE(count == 0 || count == kRows) << count;
    EXPECT_EQ(db->Statistics().schedules, count);
    if (delay < 0) {
      EXPECT_EQ(count, kRows);
    }
    ExpectConsistent(path);
  }
}

}  // namespace
}  // namespace sparsetune
