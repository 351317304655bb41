#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "db/database.hpp"

namespace sparsetune::testing {

// A fresh directory per test, removed afterwards.
class DbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "sparsetune-db-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

inline MachineInfo TestMachine(const std::string& cpu = "Test CPU 9000") {
  MachineInfo machine;
  machine.cpu_model = cpu;
  machine.cores = 2;
  machine.threads = 4;
  machine.l1d_bytes = 32 << 10;
  machine.l2_bytes = 512 << 10;
  machine.l3_bytes = 32 << 20;
  machine.isa = "avx2 fma";
  machine.compiler = "c++ (Test) 12.2.0";
  machine.compiler_version = "12.2.0";
  machine.flags = "-O3 -march=native -fopenmp";
  return machine;
}

inline MatrixRecord TestMatrix(int index) {
  MatrixRecord matrix;
  matrix.fingerprint = "fp" + std::to_string(index);
  matrix.name = "matrix" + std::to_string(index);
  matrix.dims = {100 + index, 200 + index};
  matrix.nnz = 1000 + index;
  matrix.stats = {{"row_mean", 10.5 + index}, {"row_histogram", {1, 2, 3}}};
  matrix.source_path = "/data/matrix" + std::to_string(index) + ".mtx";
  return matrix;
}

// A valid schedule per index from -1 on (its chunk is index + 2).
inline std::string TestSchedule(int index) {
  return "{\"format\": [\"i:U\", \"k:C\"], \"loop_order\": [\"i\", \"k\"], "
         "\"parallel\": {\"index\": \"i\", \"chunk\": " +
         std::to_string(index + 2) + ", \"threads\": 2}}";
}

inline TuningKey SpmmKey(const std::string& fingerprint, int64_t machine_id) {
  TuningKey key;
  key.fingerprint = fingerprint;
  key.kernel = "spmm";
  key.machine_id = machine_id;
  key.dense = {{"j", 256}};
  key.dtype = DType::kF32;
  return key;
}

inline MeasurementRecord TestMeasurement(const TuningKey& key, int schedule, double median_ms) {
  MeasurementRecord record;
  record.key = key;
  record.expression = "C(i,j) = A(i,k) * B(k,j)";
  record.schedule_json = TestSchedule(schedule);
  record.median_ms = median_ms;
  record.min_ms = median_ms * 0.9;
  record.max_ms = median_ms * 1.2;
  record.reps = 11;
  record.pack_ms = 1.5;
  record.compile_ms = 250;
  record.verified = true;
  record.source = "sampled";
  return record;
}

// Runs a query on a separate raw SQLite connection and returns the first column of the first
// row as text ("" if none).
inline std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string result;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 30000);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
      result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return result;
}

}  // namespace sparsetune::testing
