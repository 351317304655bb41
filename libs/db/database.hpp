#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.hpp"
#include "db/machine.hpp"

namespace sparsetune {

class Connection;

enum class OpenMode {
  kReadWrite,  // creates the parent directories and the file; applies pending migrations
  kReadOnly,   // the file must exist (InputError otherwise); no writes
};

// Sizes of a kernel's dense index variables, e.g. {"j": 256}; empty for SpMV.
using DenseSizes = std::map<std::string, int64_t>;
// Canonical text, as stored and compared in keys: compact JSON with sorted keys ("{}" if empty).
std::string DenseSizesToText(const DenseSizes& dense);
// Inverse of DenseSizesToText; throws InputError on anything else.
DenseSizes DenseSizesFromText(const std::string& text);

// A schedule's canonical text: compact JSON with sorted keys. Throws InputError if not JSON.
std::string CanonicalScheduleJson(const std::string& json_text);
// StableHashHex of the canonical text: a schedule's identity within its kernel.
std::string ScheduleHash(const std::string& json_text);

// "f32", "f64", "c64" or "c128"; throws InputError on anything else.
DType ParseDType(const std::string& name);

// What a tuning result is for. Every lookup below is keyed by it.
struct TuningKey {
  std::string fingerprint;  // the matrix (PatternFingerprint)
  std::string kernel;
  int64_t machine_id = 0;  // from UpsertMachine / FindMachine
  DenseSizes dense;  // of the dense-only indices (DenseOnlySizes): the pattern does not fix them
  DType dtype = DType::kF32;
};

struct MatrixRecord {
  std::string fingerprint;
  std::string name;
  std::vector<int64_t> dims;
  int64_t nnz = 0;
  nlohmann::json stats = nlohmann::json::object();  // PatternStatsToJson
  std::string source_path;
};

struct ScheduleRecord {
  int64_t id = 0;
  std::string kernel;
  std::string expression;
  std::string hash;
  std::string canonical_json;
};

// One timing. The schedule is upserted together with the measurement, in one transaction; the
// matrix (key.fingerprint) must have been stored with UpsertMatrix.
struct MeasurementRecord {
  TuningKey key;
  std::string expression;
  std::string schedule_json;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int64_t reps = 0;
  double pack_ms = 0;
  double compile_ms = 0;
  bool verified = false;
  std::string source;  // "fixed_csr", "sampled", "model", "heuristic", "sparseauto", ...
};

// A schedule that failed (compile, pack, verification, timeout), so collection skips it.
struct FailureRecord {
  TuningKey key;
  std::string expression;
  std::string schedule_json;
  std::string reason;
};

struct MeasurementRow {
  int64_t id = 0;
  std::string fingerprint;
  std::string matrix_name;
  int64_t machine_id = 0;
  ScheduleRecord schedule;
  DenseSizes dense;
  DType dtype = DType::kF32;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int64_t reps = 0;
  double pack_ms = 0;
  double compile_ms = 0;
  bool verified = false;
  std::string source;
  std::string created_at;  // ISO-8601 UTC
};

struct WinnerRecord {
  TuningKey key;
  // 0: the winner per call (the least time a call); N: the winner for N calls on one prepared
  // operand (the least preparation plus N calls; tune --calls N).
  int64_t calls = 0;
  ScheduleRecord schedule;
  double time_ms = 0;
  double prepare_ms = 0;  // ordering and packing, stored with the winners for a call count
  std::optional<double> fixed_csr_ms;
  std::string updated_at;  // ISO-8601 UTC
};

// Selects rows for Measurements(); unset fields match everything.
struct MeasurementFilter {
  std::optional<std::string> kernel;
  std::optional<std::string> fingerprint;
  std::optional<int64_t> machine_id;
  bool verified_only = true;
};

// Row counts (or, from Import/Merge, rows added).
struct DatabaseStats {
  int64_t matrices = 0;
  int64_t schedules = 0;
  int64_t measurements = 0;
  int64_t winners = 0;
  int64_t failures = 0;
  int64_t machines = 0;
};
nlohmann::json DatabaseStatsToJson(const DatabaseStats& stats);

// What is stored for one kernel: how far a collection has come.
struct KernelStats {
  std::string kernel;
  int64_t matrices = 0;  // with at least one measurement or failure
  int64_t measurements = 0;
  std::map<std::string, int64_t> failures;  // by reason: the reason's text up to its first ':'
};
nlohmann::json KernelStatsToJson(const std::vector<KernelStats>& stats);

// The schema version that added the winners for a call count (schemas/003_*.sql).
constexpr int kCallCountWinnersVersion = 3;

// The schedule database (SQLite). Safe to use from several processes at once: every write is
// one IMMEDIATE transaction, retried while another process holds the lock. One object per
// thread.
class Database {
 public:
  // Throws InputError for a missing file (kReadOnly), a file that is not a sparsetune
  // database ("FILE: not a sparsetune database (...)") or one written by a newer sparsetune.
  static std::unique_ptr<Database> Open(const std::string& path, OpenMode mode);
  // Throws InputError when `path` is empty or one of SQLite's special names (":memory:", a
  // "file:" URI), which would keep nothing where the name says. Open checks it.
  static void CheckPath(const std::string& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Highest schema version this build knows (the number of schemas/NNN_*.sql files).
  static int LatestSchemaVersion();
  int SchemaVersion();
  const std::string& path() const { return path_; }
  OpenMode mode() const { return mode_; }

  // --- Writes (all idempotent) ---------------------------------------------------------------
  int64_t UpsertMachine(const MachineInfo& machine);
  // Keeps the first name, path and statistics seen for a fingerprint, filling empty ones.
  int64_t UpsertMatrix(const MatrixRecord& matrix);
  // Identity is (kernel, ScheduleHash(canonical_json)).
  int64_t UpsertSchedule(const std::string& kernel, const std::string& expression,
                         const std::string& schedule_json);
  // Replaces an earlier measurement of the same key and schedule and clears a failure
  // recorded for it. Returns the schedule id.
  int64_t RecordMeasurement(const MeasurementRecord& record);
  // Replaces an earlier failure of the same key and schedule. Returns the schedule id.
  int64_t RecordFailure(const FailureRecord& record);
  // Overwrites the winner of key.
  void SetWinner(const TuningKey& key, int64_t schedule_id, double time_ms,
                 std::optional<double> fixed_csr_ms = std::nullopt);
  // Overwrites the winner of key for `calls` (at least 1) calls on one prepared operand.
  void SetWinnerForCalls(const TuningKey& key, int64_t calls, int64_t schedule_id, double time_ms,
                         double prepare_ms, std::optional<double> fixed_csr_ms);

  // --- Reads ---------------------------------------------------------------------------------
  std::optional<int64_t> FindMachine(const MachineInfo& machine);
  std::optional<MachineInfo> GetMachine(int64_t machine_id);
  std::optional<MatrixRecord> FindMatrix(const std::string& fingerprint);
  std::optional<ScheduleRecord> FindSchedule(const std::string& kernel, const std::string& hash);
  std::optional<ScheduleRecord> GetSchedule(int64_t schedule_id);

  // Whether this schedule (by ScheduleHash) has a measurement for key.
  bool HasMeasurement(const TuningKey& key, const std::string& schedule_hash);
  // Hashes of the schedules measured for key (and, with include_failures, those that failed):
  // what a resumed collection skips.
  std::set<std::string> MeasuredScheduleHashes(const TuningKey& key, bool include_failures = true);
  // The winner per call (calls 0) or for `calls` calls on one prepared operand.
  std::optional<WinnerRecord> FindWinner(const TuningKey& key, int64_t calls = 0);
  // The k fastest verified measurements of key by median time, fastest first.
  std::vector<MeasurementRow> TopK(const TuningKey& key, int k);
  // Ordered by matrix, then machine and median time.
  std::vector<MeasurementRow> Measurements(const MeasurementFilter& filter);
  DatabaseStats Statistics();
  // Per kernel, in name order.
  std::vector<KernelStats> KernelStatistics();

  // --- Transfer ------------------------------------------------------------------------------
  // Writes every machine, matrix, schedule, measurement, failure and winner to a gzip-compressed
  // JSON-lines file (atomically: a temporary file renamed into place). Returns the row counts
  // written.
  DatabaseStats ExportMeasurements(const std::string& path);
  // Reads such a file in one transaction. Idempotent: rows already present (same key) are kept
  // unless the file's copy is newer. Returns the rows added. Bad files throw InputError naming
  // the file and line.
  DatabaseStats ImportMeasurements(const std::string& path);
  // Copies everything from another database file, with the same rules as import.
  DatabaseStats MergeDatabase(const std::string& other_path);
  // Copies several database files in one transaction, so a bad one (missing, not a sparsetune
  // database, this database itself) throws InputError naming it and changes nothing. Returns
  // the rows each added.
  std::vector<DatabaseStats> MergeDatabases(const std::vector<std::string>& other_paths);
  // Writes one JSON object per line per stored winner: fingerprint, matrix (name), kernel,
  // expression, dense, dtype, machine {id, key, cpu_model}, schedule (the JSON object),
  // time_ms, fixed_csr_ms (null when unknown), updated_at. Returns the lines written.
  int64_t ExportWinners(std::ostream& out);

 private:
  Database(std::string path, OpenMode mode);
  void Initialize();
  void RequireWritable(const char* operation) const;
  int64_t MatrixIdOrThrow(const std::string& fingerprint);
  int64_t UpsertScheduleInTransaction(const std::string& kernel, const std::string& expression,
                                      const std::string& canonical_json);

  std::string path_;
  OpenMode mode_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace sparsetune
