#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>

#include "base/errors.hpp"
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

using TransferTest = DbTest;

// Two machines, three matrices, measurements (one unverified), a failure and winners.
void Populate(Database& db) {
  int64_t machines[2] = {db.UpsertMachine(TestMachine()), db.UpsertMachine(TestMachine("B"))};
  for (int m = 0; m < 3; ++m) {
    db.UpsertMatrix(TestMatrix(m));
    for (int64_t machine : machines) {
      TuningKey key = SpmmKey("fp" + std::to_string(m), machine);
      for (int s = 0; s < 5; ++s) {
        MeasurementRecord record = TestMeasurement(key, s, 1.0 / 3.0 + m + s * 0.1);
        record.verified = s != 4;
        record.source = s == 0 ? "fixed_csr" : "model";
        db.RecordMeasurement(record);
      }
      auto best = db.TopK(key, 1);
      db.SetWinner(key, best[0].schedule.id, best[0].median_ms,
                   m == 0 ? std::nullopt : std::optional<double>(7.25));
    }
  }
  FailureRecord failure;
  failure.key = SpmmKey("fp1", machines[0]);
  failure.expression = "C(i,j) = A(i,k) * B(k,j)";
  failure.schedule_json = TestSchedule(50);
  failure.reason = "padding over cap";
  db.RecordFailure(failure);
}

void ExpectSameStats(const DatabaseStats& a, const DatabaseStats& b) {
  EXPECT_EQ(a.matrices, b.matrices);
  EXPECT_EQ(a.schedules, b.schedules);
  EXPECT_EQ(a.measurements, b.measurements);
  EXPECT_EQ(a.winners, b.winners);
  EXPECT_EQ(a.failures, b.failures);
  EXPECT_EQ(a.machines, b.machines);
}

void ExpectSameContent(Database& a, Database& b) {
  ExpectSameStats(a.Statistics(), b.Statistics());
  MeasurementFilter all;
  all.verified_only = false;
  auto rows_a = a.Measurements(all), rows_b = b.Measurements(all);
  ASSERT_EQ(rows_a.size(), rows_b.size());
  // Machine ids may differ between files; compare through the machine's key.
  std::vector<std::string> seen_a, seen_b;
  for (size_t i = 0; i < rows_a.size(); ++i) {
    auto text = [](Database& db, const MeasurementRow& r) {
      return r.fingerprint + "|" + r.matrix_name + "|" + MachineKey(*db.GetMachine(r.machine_id)) +
             "|" + r.schedule.kernel + "|" + r.schedule.expression + "|" + r.schedule.hash + "|" +
             r.schedule.canonical_json + "|" + DenseSizesToText(r.dense) + "|" +
             DTypeName(r.dtype) + "|" + std::to_string(r.reps) + "|" + std::to_string(r.verified) +
             "|" + r.source + "|" + r.created_at;
    };
    seen_a.push_back(text(a, rows_a[i]));
    seen_b.push_back(text(b, rows_b[i]));
  }
  std::sort(seen_a.begin(), seen_a.end());
  std::sort(seen_b.begin(), seen_b.end());
  EXPECT_EQ(seen_a, seen_b);
  // Times survive bit for bit (1/3 has no short decimal form).
  for (int m = 0; m < 3; ++m) {
    std::string fp = "fp" + std::to_string(m);
    auto machine_a = a.FindMachine(TestMachine()), machine_b = b.FindMachine(TestMachine());
    ASSERT_TRUE(machine_a && machine_b);
    auto top_a = a.TopK(SpmmKey(fp, *machine_a), 10), top_b = b.TopK(SpmmKey(fp, *machine_b), 10);
    ASSERT_EQ(top_a.size(), top_b.size());
    for (size_t i = 0; i < top_a.size(); ++i) {
      EXPECT_EQ(top_a[i].median_ms, top_b[i].median_ms);
      EXPECT_EQ(top_a[i].min_ms, top_b[i].min_ms);
      EXPECT_EQ(top_a[i].max_ms, top_b[i].max_ms);
      EXPECT_EQ(top_a[i].pack_ms, top_b[i].pack_ms);
      EXPECT_EQ(top_a[i].compile_ms, top_b[i].compile_ms);
      EXPECT_EQ(top_a[i].schedule.hash, top_b[i].schedule.hash);
    }
    auto winner_a = a.FindWinner(SpmmKey(fp, *machine_a));
    auto winner_b = b.FindWinner(SpmmKey(fp, *machine_b));
    ASSERT_TRUE(winner_a && winner_b);
    EXPECT_EQ(winner_a->schedule.hash, winner_b->schedule.hash);
    EXPECT_EQ(winner_a->time_ms, winner_b->time_ms);
    EXPECT_EQ(winner_a->fixed_csr_ms, winner_b->fixed_csr_ms);
    EXPECT_EQ(winner_a->updated_at, winner_b->updated_at);
    EXPECT_EQ(a.FindMatrix(fp)->stats, b.FindMatrix(fp)->stats);
    EXPECT_EQ(a.FindMatrix(fp)->dims, b.FindMatrix(fp)->dims);
    EXPECT_EQ(a.FindMatrix(fp)->source_path, b.FindMatrix(fp)->source_path);
  }
  EXPECT_EQ(RawQuery(a.path(), "SELECT reason FROM failures"),
            RawQuery(b.path(), "SELECT reason FROM failures"));
}

std::vector<std::string> ReadGzLines(const std::string& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  std::string text;
  char buffer[4096];
  for (int got; (got = gzread(in, buffer, sizeof buffer)) > 0;) text.append(buffer, size_t(got));
  gzclose(in);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  return lines;
}

TEST_F(TransferTest, ExportImportReproducesTheDatabase) {
  auto source = Database::Open(Path("source.db"), OpenMode::kReadWrite);
  Populate(*source);
  const std::string exported = Path("out/measurements.jsonl.gz");
  DatabaseStats written = source->ExportMeasurements(exported);
  ExpectSameStats(written, source->Statistics());

  // The file is gzip, starts with the header and names each matrix and schedule once.
  auto lines = ReadGzLines(exported);
  ASSERT_FALSE(lines.empty());
  auto header = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(header["format"], "sparsetune-measurements");
  EXPECT_EQ(header["version"], 1);
  EXPECT_EQ(header["machines"].size(), 2u);
  int matrix_lines = 0, schedule_lines = 0, measurement_lines = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    auto line = nlohmann::json::parse(lines[i]);
    matrix_lines += line["t"] == "matrix";
    schedule_lines += line["t"] == "schedule";
    measurement_lines += line["t"] == "m";
  }
  EXPECT_EQ(matrix_lines, 3);
  EXPECT_EQ(schedule_lines, 6);
  EXPECT_EQ(measurement_lines, 30);
  EXPECT_EQ(lines.size(), 1u + 3 + 6 + 30 + 1 + 6);

  auto target = Database::Open(Path("target.db"), OpenMode::kReadWrite);
  DatabaseStats added = target->ImportMeasurements(exported);
  ExpectSameStats(added, source->Statistics());
  ExpectSameContent(*source, *target);

  // Importing again adds nothing and changes nothing.
  DatabaseStats again = target->ImportMeasurements(exported);
  ExpectSameStats(again, DatabaseStats{});
  ExpectSameContent(*source, *target);
  EXPECT_EQ(RawQuery(target->path(), "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(RawQuery(target->path(), "PRAGMA foreign_key_check"), "");

  // Importing into the source itself is a no-op too.
  ExpectSameStats(source->ImportMeasurements(exported), DatabaseStats{});
}

TEST_F(TransferTest, ImportKeepsNewerLocalRowsAndTakesNewerRemoteOnes) {
  auto a = Database::Open(Path("a.db"), OpenMode::kReadWrite);
  int64_t machine = a->UpsertMachine(TestMachine());
  a->UpsertMatrix(TestMatrix(1));
  TuningKey key = SpmmKey("fp1", machine);
  a->RecordMeasurement(TestMeasurement(key, 1, 5.0));
  a->ExportMeasurements(Path("old.jsonl.gz"));
  // A later, faster re-measurement in a.
  RawQuery(a->path(), "UPDATE measurements SET created_at = '2000-01-01T00:00:00.000Z'");
  a->ExportMeasurements(Path("oldest.jsonl.gz"));
  a->RecordMeasurement(TestMeasurement(key, 1, 4.0));
  a->ExportMeasurements(Path("new.jsonl.gz"));

  auto b = Database::Open(Path("b.db"), OpenMode::kReadWrite);
  b->ImportMeasurements(Path("new.jsonl.gz"));
  b->ImportMeasurements(Path("oldest.jsonl.gz"));
  int64_t b_machine = *b->FindMachine(TestMachine());
  EXPECT_DOUBLE_EQ(b->TopK(SpmmKey("fp1", b_machine), 1)[0].median_ms, 4.0);

  auto c = Database::Open(Path("c.db"), OpenMode::kReadWrite);
  c->ImportMeasurements(Path("oldest.jsonl.gz"));
  c->ImportMeasurements(Path("new.jsonl.gz"));
  EXPECT_DOUBLE_EQ(c->TopK(SpmmKey("fp1", *c->FindMachine(TestMachine())), 1)[0].median_ms, 4.0);
  EXPECT_EQ(c->Statistics().measurements, 1);
}

TEST_F(TransferTest, MergeCopiesEverythingOnce) {
  auto source = Database::Open(Path("source.db"), OpenMode::kReadWrite);
  Populate(*source);
  auto target = Database::Open(Path("target.db"), OpenMode::kReadWrite);
  // The target already knows one matrix and machine under different ids.
  target->UpsertMachine(TestMachine("Only here"));
  target->UpsertMatrix(TestMatrix(7));
  target->UpsertMatrix(TestMatrix(2));
  DatabaseStats added = target->MergeDatabase(source->path());
  DatabaseStats total = source->Statistics();
  EXPECT_EQ(added.matrices, total.matrices - 1);
  EXPECT_EQ(added.machines, total.machines);
  EXPECT_EQ(added.measurements, total.measurements);
  EXPECT_EQ(added.winners, total.winners);
  EXPECT_EQ(added.failures, total.failures);
  ExpectSameStats(target->MergeDatabase(source->path()), DatabaseStats{});
  EXPECT_EQ(target->Statistics().matrices, total.matrices + 1);
  EXPECT_EQ(target->Statistics().machines, total.machines + 1);

  // The merged content matches: compare after removing what only the target had.
  auto copy = Database::Open(Path("copy.db"), OpenMode::kReadWrite);
  copy->MergeDatabase(source->path());
  ExpectSameContent(*source, *copy);
  EXPECT_EQ(RawQuery(target->path(), "PRAGMA foreign_key_check"), "");
  EXPECT_THROW(target->MergeDatabase(Path("missing.db")), InputError);
}

TEST_F(TransferTest, BadFilesAreInputErrorsAndChangeNothing) {
  auto source = Database::Open(Path("source.db"), OpenMode::kReadWrite);
  Populate(*source);
  const std::string good = Path("good.jsonl.gz");
  source->ExportMeasurements(good);
  auto lines = ReadGzLines(good);

  auto write_plain = [&](const std::string& name, const std::vector<std::string>& content) {
    std::ofstream out(Path(name));
    for (const auto& line : content) out << line << '\n';
    return Path(name);
  };
  auto target = Database::Open(Path("target.db"), OpenMode::kReadWrite);
  auto expect_error = [&](const std::string& path, int64_t line, const std::string& fragment) {
    try {
      target->ImportMeasurements(path);
      ADD_FAILURE() << path << " was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    ExpectSameStats(target->Statistics(), DatabaseStats{});
  };

  // Plain (uncompressed) JSON lines are accepted too.
  auto plain = write_plain("plain.jsonl", lines);
  ExpectSameStats(target->ImportMeasurements(plain), source->Statistics());
  target.reset();
  std::filesystem::remove(Path("target.db"));
  target = Database::Open(Path("target.db"), OpenMode::kReadWrite);

  // A broken line late in the file rolls back everything before it.
  auto broken = lines;
  broken[broken.size() - 2] = "{\"t\": \"m\", \"matrix\": ";
  expect_error(write_plain("broken.jsonl", broken), int64_t(broken.size() - 1), "invalid JSON");

  auto dangling = lines;
  dangling.push_back("{\"t\":\"m\",\"matrix\":999,\"schedule\":1,\"machine\":1}");
  expect_error(write_plain("dangling.jsonl", dangling), int64_t(dangling.size()),
               "unknown matrix id 999");

  auto missing_field = lines;
  auto measurement = nlohmann::json::parse(lines[10]);
  ASSERT_EQ(measurement["t"], "m");
  measurement.erase("median_ms");
  missing_field[10] = measurement.dump();
  expect_error(write_plain("missing.jsonl", missing_field), 11, "median_ms");

  expect_error(write_plain("foreign.jsonl", {"{\"hello\": 1}"}), 1, "not a sparsetune");
  auto newer = nlohmann::json::parse(lines[0]);
  newer["version"] = 99;
  expect_error(write_plain("newer.jsonl", {newer.dump()}), 1, "newer");
  expect_error(write_plain("empty.jsonl", {}), 0, "empty");

  // A gzip file cut short.
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(Path("cut.jsonl.gz"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_error(Path("cut.jsonl.gz"), 0, "compressed");

  EXPECT_THROW(target->ImportMeasurements(Path("nothing.gz")), InputError);
}

}  // namespace
}  // namespace sparsetune
