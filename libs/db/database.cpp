#include "db/database.hpp"
#include "db/machine_rows.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "base/errors.hpp"
#include "base/hash.hpp"
#include "base/paths.hpp"
#include "db/migrations.hpp"
#include "db/sqlite.hpp"
#include "ir/schedule.hpp"

namespace sparsetune {

namespace {

// PRAGMA application_id of every sparsetune database ("SPTU"): tells our files from other
// SQLite files.
constexpr int64_t kApplicationId = 0x53505455;
constexpr int kBusyTimeoutMs = 30000;

const char* kMeasurementColumns =
    "m.id, x.fingerprint, x.name, m.machine_id, s.id, s.kernel, s.expression, s.hash, "
    "s.canonical_json, m.dense, m.dtype, m.median_ms, m.min_ms, m.max_ms, m.reps, m.pack_ms, "
    "m.compile_ms, m.verified, m.source, m.created_at "
    "FROM measurements m JOIN matrices x ON x.id = m.matrix_id "
    "JOIN schedules s ON s.id = m.schedule_id ";

// A stored schedule is checked as any schedule from outside is (ParseScheduleText) before it
// leaves the database: a row written by hand or by an older version cannot reach codegen.
void CheckStoredSchedule(const std::string& db_path, int64_t id, const std::string& text) {
  try {
    ParseScheduleText(text, "schedule " + std::to_string(id));
  } catch (const InputError& e) {
    throw InputError(
        db_path, 0,
        "stored schedule " + std::to_string(id) + " is not a valid schedule (" + e.what() + ")");
  }
}

MeasurementRow ReadMeasurementRow(const Statement& stmt, const std::string& db_path) {
  MeasurementRow row;
  row.id = stmt.Int(0);
  row.fingerprint = stmt.Text(1);
  row.matrix_name = stmt.Text(2);
  row.machine_id = stmt.Int(3);
  row.schedule.id = stmt.Int(4);
  row.schedule.kernel = stmt.Text(5);
  row.schedule.expression = stmt.Text(6);
  row.schedule.hash = stmt.Text(7);
  row.schedule.canonical_json = stmt.Text(8);
  CheckStoredSchedule(db_path, row.schedule.id, row.schedule.canonical_json);
  row.dense = DenseSizesFromText(stmt.Text(9));
  row.dtype = ParseDType(stmt.Text(10));
  row.median_ms = stmt.Double(11);
  row.min_ms = stmt.Double(12);
  row.max_ms = stmt.Double(13);
  row.reps = stmt.Int(14);
  row.pack_ms = stmt.Double(15);
  row.compile_ms = stmt.Double(16);
  row.verified = stmt.Int(17) != 0;
  row.source = stmt.Text(18);
  row.created_at = stmt.Text(19);
  return row;
}

// Percent-encodes what a SQLite URI filename treats specially.
std::string UriEscape(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c <= ' ' || c >= 0x7f) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out;
}

}  // namespace

// --- Free helpers -----------------------------------------------------------------------------

std::string DenseSizesToText(const DenseSizes& dense) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [name, size] : dense) object[name] = size;
  return object.dump();
}

DenseSizes DenseSizesFromText(const std::string& text) {
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError("dense sizes '" + text + "': " + e.what());
  }
  if (!object.is_object()) throw InputError("dense sizes '" + text + "': not a JSON object");
  DenseSizes dense;
  for (const auto& [name, size] : object.items()) {
    if (!size.is_number_integer())
      throw InputError("dense sizes '" + text + "': size of " + name + " is not an integer");
    dense[name] = size.get<int64_t>();
  }
  return dense;
}

std::string CanonicalScheduleJson(const std::string& json_text) {
  // Checked as every schedule from outside is; nlohmann::json keeps object keys sorted, so
  // dump() is canonical.
  const nlohmann::json json = ParseBoundedJson(json_text, "schedule", ScheduleLimits::kMaxJsonDepth,
                                               ScheduleLimits::kMaxJsonBytes);
  Schedule::FromJson(json, "schedule");
  return json.dump();
}

std::string ScheduleHash(const std::string& json_text) {
  return StableHashHex(CanonicalScheduleJson(json_text));
}

DType ParseDType(const std::string& name) {
  DType dtype;
  if (ParseDTypeName(name, &dtype)) return dtype;
  throw InputError("unknown dtype '" + name + "' (expected f32, f64, c64 or c128)");
}

nlohmann::json DatabaseStatsToJson(const DatabaseStats& stats) {
  return {{"matrices", stats.matrices},         {"schedules", stats.schedules},
          {"measurements", stats.measurements}, {"winners", stats.winners},
          {"failures", stats.failures},         {"machines", stats.machines}};
}

nlohmann::json KernelStatsToJson(const std::vector<KernelStats>& stats) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : stats) {
    out.push_back({{"kernel", k.kernel},
                   {"matrices", k.matrices},
                   {"measurements", k.measurements},
                   {"failures", k.failures}});
  }
  return out;
}

// --- Opening ----------------------------------------------------------------------------------

Database::Database(std::string path, OpenMode mode) : path_(std::move(path)), mode_(mode) {}

Database::~Database() = default;

int Database::LatestSchemaVersion() {
  return Migrations().back().version;
}

int Database::SchemaVersion() {
  return int(connection_->QueryInt("PRAGMA user_version"));
}

void Database::CheckPath(const std::string& path) {
  if (path.empty()) throw InputError("database path is empty");
  // SQLite reads these as an in-memory database or a URI: nothing would be kept where the
  // name suggests. A file of such a name is still reachable as ./NAME.
  if (path == ":memory:" || path.rfind("file:", 0) == 0)
    throw InputError(path, 0,
                     "the database must be a file path; SQLite's special names (:memory:, "
                     "file: URIs) are not taken (for a file of this name, write ./" +
                         path + ")");
}

std::unique_ptr<Database> Database::Open(const std::string& path, OpenMode mode) {
  CheckPath(path);
  struct stat info;
  bool exists = ::stat(path.c_str(), &info) == 0;
  if (exists && S_ISDIR(info.st_mode))
    throw InputError(path, 0, "not a sparsetune database (it is a directory)");
  if (!exists && mode == OpenMode::kReadOnly) throw InputError(path, 0, "database does not exist");

  int flags = SQLITE_OPEN_READWRITE;
  if (mode == OpenMode::kReadWrite) {
    // SQLite would silently fall back to reading; say so now instead of at the first write.
    if (exists && ::access(path.c_str(), W_OK) != 0)
      throw InputError(path, 0, "database is not writable (" + std::string(strerror(errno)) + ")");
    std::string parent = std::filesystem::path(path).parent_path().string();
    if (!parent.empty()) EnsureDirectory(parent);
    flags |= SQLITE_OPEN_CREATE;
  } else if (::access(path.c_str(), W_OK) != 0) {
    // Not ours to write. (A writable file is opened read-write and held to reads with
    // query_only, so WAL bookkeeping and schema upgrades work as usual.)
    flags = SQLITE_OPEN_READONLY;
  }
  std::string target = path;
  if (flags == SQLITE_OPEN_READONLY && !std::filesystem::exists(path + "-shm")) {
    // SQLite cannot read a WAL database without its shared-memory file, and cannot create one
    // in a directory it may not write: read such a database as immutable. No writer is active
    // then (a writer keeps the -shm file while it has the database open).
    std::string parent = std::filesystem::path(path).parent_path().string();
    if (::access(parent.empty() ? "." : parent.c_str(), W_OK) != 0) {
      target = "file:" + UriEscape(path) + "?immutable=1";
      flags |= SQLITE_OPEN_URI;
    }
  }
  std::unique_ptr<Database> db(new Database(path, mode));
  db->connection_ = std::make_unique<Connection>(path, target, flags);
  db->Initialize();
  return db;
}

void Database::Initialize() {
  Connection& conn = *connection_;
  sqlite3_busy_timeout(conn.handle(), kBusyTimeoutMs);
  const int latest = LatestSchemaVersion();

  // Reading the header and the schema table is what fails on a file that is not SQLite.
  auto check = [&](bool allow_empty) {
    // One snapshot: another process may be creating the schema right now, and reading its id
    // before and its tables after that commit would look like a foreign database.
    const bool own_transaction = !conn.InTransaction();
    if (own_transaction) conn.Exec("BEGIN");
    int64_t application_id = 0, version = 0, objects = 0;
    try {
      application_id = conn.QueryInt("PRAGMA application_id");
      version = conn.QueryInt("PRAGMA user_version");
      objects = conn.QueryInt("SELECT count(*) FROM sqlite_master");
    } catch (...) {
      if (own_transaction) sqlite3_exec(conn.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    if (own_transaction) conn.Exec("COMMIT");
    if (application_id != kApplicationId) {
      if (application_id != 0 || objects > 0)
        throw InputError(path_, 0,
                         "not a sparsetune database (an SQLite database of another program)");
      if (!allow_empty) throw InputError(path_, 0, "not a sparsetune database (empty database)");
    }
    if (version > latest)
      throw InputError(path_, 0,
                       "database schema version " + std::to_string(version) +
                           " is newer than this sparsetune supports (" + std::to_string(latest) +
                           "); use a newer sparsetune");
    return version;
  };
  int64_t version = check(mode_ == OpenMode::kReadWrite);

  if (mode_ == OpenMode::kReadWrite) {
    // Changing the journal mode needs a moment of exclusive access; another process creating
    // the same file may hold it.
    for (int attempt = 1;; ++attempt) {
      try {
        conn.QueryText("PRAGMA journal_mode = WAL");
        break;
      } catch (const SqliteBusy&) {
        if (attempt >= 600) throw;
        usleep(50000);
      }
    }
    conn.Exec("PRAGMA synchronous = NORMAL");
  }
  conn.Exec("PRAGMA foreign_keys = ON");

  // A file this process may not write is read as it is when every pending migration leaves
  // what readers see unchanged (its text says "compatible-reads").
  auto reads_compatible = [&] {
    for (const Migration& migration : Migrations()) {
      if (migration.version > version &&
          std::string(migration.sql).find("-- compatible-reads:") == std::string::npos)
        return false;
    }
    return true;
  };
  const bool read_as_is = version < latest && mode_ == OpenMode::kReadOnly &&
                          sqlite3_db_readonly(conn.handle(), "main") == 1 && reads_compatible();
  if (version < latest && !read_as_is) {
    if (sqlite3_db_readonly(conn.handle(), "main") == 1)
      throw InputError(path_, 0,
                       "database schema version " + std::to_string(version) +
                           " needs an upgrade to " + std::to_string(latest) +
                           ", but the file is read-only");
    conn.WriteTransaction([&] {
      // Another process may have migrated while we waited for the lock.
      int64_t current = check(mode_ == OpenMode::kReadWrite);
      for (const Migration& migration : Migrations()) {
        if (migration.version <= current) continue;
        try {
          conn.Exec(migration.sql);
        } catch (const InternalError& e) {
          throw InternalError(std::string("migration ") + migration.name + " failed: " + e.what());
        }
        conn.Exec("PRAGMA user_version = " + std::to_string(migration.version));
      }
      conn.Exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    });
  }
  if (mode_ == OpenMode::kReadOnly) conn.Exec("PRAGMA query_only = ON");
}

void Database::RequireWritable(const char* operation) const {
  if (mode_ != OpenMode::kReadWrite)
    throw InternalError(std::string(operation) + ": database " + path_ + " was opened read-only");
}

// --- Writes -----------------------------------------------------------------------------------

int64_t Database::UpsertMachine(const MachineInfo& machine) {
  RequireWritable("UpsertMachine");
  const std::string key = MachineKey(machine);
  int64_t id = 0;
  connection_->WriteTransaction([&] { id = FindOrInsertMachine(*connection_, key, machine); });
  return id;
}

int64_t Database::UpsertMatrix(const MatrixRecord& matrix) {
  RequireWritable("UpsertMatrix");
  if (matrix.fingerprint.empty()) throw InternalError("UpsertMatrix: empty fingerprint");
  const std::string dims = nlohmann::json(matrix.dims).dump();
  const std::string stats = matrix.stats.is_null() ? "{}" : matrix.stats.dump();
  int64_t id = 0;
  connection_->WriteTransaction([&] {
    Statement insert = connection_->Prepare(
        "INSERT INTO matrices (fingerprint, name, dims, nnz, stats, source_path) "
        "VALUES (?,?,?,?,?,?) ON CONFLICT (fingerprint) DO UPDATE SET "
        "name = CASE WHEN name = '' THEN excluded.name ELSE name END, "
        "source_path = CASE WHEN source_path = '' THEN excluded.source_path ELSE source_path END, "
        "stats = CASE WHEN stats IN ('', '{}', 'null') THEN excluded.stats ELSE stats END "
        "WHERE name = '' OR source_path = '' OR stats IN ('', '{}', 'null') "
        "RETURNING id");
    insert.Bind(1, matrix.fingerprint)
        .Bind(2, matrix.name)
        .Bind(3, dims)
        .Bind(4, matrix.nnz)
        .Bind(5, stats)
        .Bind(6, matrix.source_path);
    if (insert.Step()) {
      id = insert.Int(0);
      return;
    }
    // The conflict's WHERE skipped the update, so RETURNING produced nothing.
    Statement find = connection_->Prepare("SELECT id FROM matrices WHERE fingerprint = ?");
    find.Bind(1, matrix.fingerprint);
    if (!find.Step()) throw InternalError("UpsertMatrix: row vanished for " + matrix.fingerprint);
    id = find.Int(0);
  });
  return id;
}

int64_t Database::UpsertScheduleInTransaction(const std::string& kernel,
                                              const std::string& expression,
                                              const std::string& canonical_json) {
  const std::string hash = StableHashHex(canonical_json);
  {
    Statement find = connection_->Prepare("SELECT id FROM schedules WHERE kernel = ? AND hash = ?");
    find.Bind(1, kernel).Bind(2, hash);
    if (find.Step()) return find.Int(0);
  }
  Statement insert = connection_->Prepare(
      "INSERT INTO schedules (kernel, expression, hash, canonical_json) VALUES (?,?,?,?)");
  insert.Bind(1, kernel).Bind(2, expression).Bind(3, hash).Bind(4, canonical_json).Run();
  return connection_->LastInsertId();
}

int64_t Database::UpsertSchedule(const std::string& kernel, const std::string& expression,
                                 const std::string& schedule_json) {
  RequireWritable("UpsertSchedule");
  const std::string canonical = CanonicalScheduleJson(schedule_json);
  int64_t id = 0;
  connection_->WriteTransaction(
      [&] { id = UpsertScheduleInTransaction(kernel, expression, canonical); });
  return id;
}

int64_t Database::MatrixIdOrThrow(const std::string& fingerprint) {
  Statement find = connection_->Prepare("SELECT id FROM matrices WHERE fingerprint = ?");
  find.Bind(1, fingerprint);
  if (!find.Step())
    throw InternalError("matrix " + fingerprint + " is not in the database (UpsertMatrix first)");
  return find.Int(0);
}

int64_t Database::RecordMeasurement(const MeasurementRecord& record) {
  RequireWritable("RecordMeasurement");
  const std::string canonical = CanonicalScheduleJson(record.schedule_json);
  const std::string dense = DenseSizesToText(record.key.dense);
  if (!std::isfinite(record.median_ms) || !std::isfinite(record.min_ms) ||
      !std::isfinite(record.max_ms))
    throw InternalError("RecordMeasurement: times must be finite");
  int64_t schedule_id = 0;
  connection_->WriteTransaction([&] {
    int64_t matrix_id = MatrixIdOrThrow(record.key.fingerprint);
    schedule_id = UpsertScheduleInTransaction(record.key.kernel, record.expression, canonical);
    Statement insert = connection_->Prepare(
        "INSERT INTO measurements (matrix_id, schedule_id, machine_id, dense, dtype, median_ms, "
        "min_ms, max_ms, reps, pack_ms, compile_ms, verified, source) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT (matrix_id, schedule_id, machine_id, dense, dtype) DO UPDATE SET "
        "median_ms = excluded.median_ms, min_ms = excluded.min_ms, max_ms = excluded.max_ms, "
        "reps = excluded.reps, pack_ms = excluded.pack_ms, compile_ms = excluded.compile_ms, "
        "verified = excluded.verified, source = excluded.source, "
        "created_at = excluded.created_at");
    insert.Bind(1, matrix_id)
        .Bind(2, schedule_id)
        .Bind(3, record.key.machine_id)
        .Bind(4, dense)
        .Bind(5, DTypeName(record.key.dtype))
        .Bind(6, record.median_ms)
        .Bind(7, record.min_ms)
        .Bind(8, record.max_ms)
        .Bind(9, record.reps)
        .Bind(10, record.pack_ms)
        .Bind(11, record.compile_ms)
        .Bind(12, int64_t(record.verified))
        .Bind(13, record.source)
        .Run();
    Statement clear = connection_->Prepare(
        "DELETE FROM failures WHERE matrix_id = ? AND schedule_id = ? AND machine_id = ? "
        "AND dense = ? AND dtype = ?");
    clear.Bind(1, matrix_id)
        .Bind(2, schedule_id)
        .Bind(3, record.key.machine_id)
        .Bind(4, dense)
        .Bind(5, DTypeName(record.key.dtype))
        .Run();
  });
  return schedule_id;
}

int64_t Database::RecordFailure(const FailureRecord& record) {
  RequireWritable("RecordFailure");
  const std::string canonical = CanonicalScheduleJson(record.schedule_json);
  const std::string dense = DenseSizesToText(record.key.dense);
  int64_t schedule_id = 0;
  connection_->WriteTransaction([&] {
    int64_t matrix_id = MatrixIdOrThrow(record.key.fingerprint);
    schedule_id = UpsertScheduleInTransaction(record.key.kernel, record.expression, canonical);
    Statement insert = connection_->Prepare(
        "INSERT INTO failures (matrix_id, schedule_id, machine_id, dense, dtype, reason) "
        "VALUES (?,?,?,?,?,?) "
        "ON CONFLICT (matrix_id, schedule_id, machine_id, dense, dtype) DO UPDATE SET "
        "reason = excluded.reason, created_at = excluded.created_at");
    insert.Bind(1, matrix_id)
        .Bind(2, schedule_id)
        .Bind(3, record.key.machine_id)
        .Bind(4, dense)
        .Bind(5, DTypeName(record.key.dtype))
        .Bind(6, record.reason)
        .Run();
  });
  return schedule_id;
}

namespace {

// Binds a winner's key (matrix_id, kernel, machine_id, dense, dtype) to parameters 1 to 5.
Statement& BindWinnerKey(Statement& statement, int64_t matrix_id, const TuningKey& key) {
  return statement.Bind(1, matrix_id)
      .Bind(2, key.kernel)
      .Bind(3, key.machine_id)
      .Bind(4, DenseSizesToText(key.dense))
      .Bind(5, DTypeName(key.dtype));
}

}  // namespace

void Database::SetWinner(const TuningKey& key, int64_t schedule_id, double time_ms,
                         std::optional<double> fixed_csr_ms) {
  RequireWritable("SetWinner");
  connection_->WriteTransaction([&] {
    int64_t matrix_id = MatrixIdOrThrow(key.fingerprint);
    Statement insert = connection_->Prepare(
        "INSERT INTO winners (matrix_id, kernel, machine_id, dense, dtype, schedule_id, time_ms, "
        "fixed_csr_ms) VALUES (?,?,?,?,?,?,?,?) "
        "ON CONFLICT (matrix_id, kernel, machine_id, dense, dtype) DO UPDATE SET "
        "schedule_id = excluded.schedule_id, time_ms = excluded.time_ms, "
        "fixed_csr_ms = excluded.fixed_csr_ms, updated_at = excluded.updated_at");
    BindWinnerKey(insert, matrix_id, key)
        .Bind(6, schedule_id)
        .Bind(7, time_ms)
        .Bind(8, fixed_csr_ms)
        .Run();
  });
}

void Database::SetWinnerForCalls(const TuningKey& key, int64_t calls, int64_t schedule_id,
                                 double time_ms, double prepare_ms,
                                 std::optional<double> fixed_csr_ms) {
  RequireWritable("SetWinnerForCalls");
  if (calls < 1) throw InternalError("SetWinnerForCalls: calls must be at least 1");
  connection_->WriteTransaction([&] {
    int64_t matrix_id = MatrixIdOrThrow(key.fingerprint);
    Statement insert = connection_->Prepare(
        "INSERT INTO call_count_winners (matrix_id, kernel, machine_id, dense, dtype, calls, "
        "schedule_id, time_ms, prepare_ms, fixed_csr_ms) VALUES (?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT (matrix_id, kernel, machine_id, dense, dtype, calls) DO UPDATE SET "
        "schedule_id = excluded.schedule_id, time_ms = excluded.time_ms, "
        "prepare_ms = excluded.prepare_ms, fixed_csr_ms = excluded.fixed_csr_ms, "
        "updated_at = excluded.updated_at");
    BindWinnerKey(insert, matrix_id, key)
        .Bind(6, calls)
        .Bind(7, schedule_id)
        .Bind(8, time_ms)
        .Bind(9, prepare_ms)
        .Bind(10, fixed_csr_ms)
        .Run();
  });
}

// --- Reads ------------------------------------------------------------------------------------

std::optional<int64_t> Database::FindMachine(const MachineInfo& machine) {
  Statement find = connection_->Prepare("SELECT id FROM machines WHERE machine_key = ?");
  find.Bind(1, MachineKey(machine));
  if (!find.Step()) return std::nullopt;
  return find.Int(0);
}

std::optional<MachineInfo> Database::GetMachine(int64_t machine_id) {
  Statement find = connection_->Prepare(
      "SELECT cpu_model, cores, threads, l1d_bytes, l2_bytes, l3_bytes, isa, compiler, "
      "compiler_version, flags FROM machines WHERE id = ?");
  find.Bind(1, machine_id);
  if (!find.Step()) return std::nullopt;
  MachineInfo machine;
  machine.cpu_model = find.Text(0);
  machine.cores = int(find.Int(1));
  machine.threads = int(find.Int(2));
  machine.l1d_bytes = find.Int(3);
  machine.l2_bytes = find.Int(4);
  machine.l3_bytes = find.Int(5);
  machine.isa = find.Text(6);
  machine.compiler = find.Text(7);
  machine.compiler_version = find.Text(8);
  machine.flags = find.Text(9);
  return machine;
}

std::optional<MatrixRecord> Database::FindMatrix(const std::string& fingerprint) {
  Statement find = connection_->Prepare(
      "SELECT name, dims, nnz, stats, source_path FROM matrices WHERE fingerprint = ?");
  find.Bind(1, fingerprint);
  if (!find.Step()) return std::nullopt;
  MatrixRecord matrix;
  matrix.fingerprint = fingerprint;
  matrix.name = find.Text(0);
  matrix.dims = nlohmann::json::parse(find.Text(1)).get<std::vector<int64_t>>();
  matrix.nnz = find.Int(2);
  matrix.stats = nlohmann::json::parse(find.Text(3));
  matrix.source_path = find.Text(4);
  return matrix;
}

namespace {
std::optional<ScheduleRecord> ReadSchedule(Statement& find, const std::string& db_path) {
  if (!find.Step()) return std::nullopt;
  ScheduleRecord schedule;
  schedule.id = find.Int(0);
  schedule.kernel = find.Text(1);
  schedule.expression = find.Text(2);
  schedule.hash = find.Text(3);
  schedule.canonical_json = find.Text(4);
  CheckStoredSchedule(db_path, schedule.id, schedule.canonical_json);
  return schedule;
}
}  // namespace

std::optional<ScheduleRecord> Database::FindSchedule(const std::string& kernel,
                                                     const std::string& hash) {
  Statement find = connection_->Prepare(
      "SELECT id, kernel, expression, hash, canonical_json FROM schedules "
      "WHERE kernel = ? AND hash = ?");
  find.Bind(1, kernel).Bind(2, hash);
  return ReadSchedule(find, path_);
}

std::optional<ScheduleRecord> Database::GetSchedule(int64_t schedule_id) {
  Statement find = connection_->Prepare(
      "SELECT id, kernel, expression, hash, canonical_json FROM schedules WHERE id = ?");
  find.Bind(1, schedule_id);
  return ReadSchedule(find, path_);
}

bool Database::HasMeasurement(const TuningKey& key, const std::string& schedule_hash) {
  Statement find = connection_->Prepare(
      "SELECT 1 FROM measurements m "
      "WHERE m.matrix_id = (SELECT id FROM matrices WHERE fingerprint = ?) "
      "AND m.schedule_id = (SELECT id FROM schedules WHERE kernel = ? AND hash = ?) "
      "AND m.machine_id = ? AND m.dense = ? AND m.dtype = ?");
  find.Bind(1, key.fingerprint)
      .Bind(2, key.kernel)
      .Bind(3, schedule_hash)
      .Bind(4, key.machine_id)
      .Bind(5, DenseSizesToText(key.dense))
      .Bind(6, DTypeName(key.dtype));
  return find.Step();
}

std::set<std::string> Database::MeasuredScheduleHashes(const TuningKey& key,
                                                       bool include_failures) {
  std::set<std::string> hashes;
  const char* tables[2] = {"measurements", "failures"};
  for (int t = 0; t < (include_failures ? 2 : 1); ++t) {
    Statement find = connection_->Prepare(
        std::string("SELECT s.hash FROM ") + tables[t] +
        " r JOIN schedules s ON s.id = r.schedule_id "
        "WHERE r.matrix_id = (SELECT id FROM matrices WHERE fingerprint = ?) "
        "AND s.kernel = ? AND r.machine_id = ? AND r.dense = ? AND r.dtype = ?");
    find.Bind(1, key.fingerprint)
        .Bind(2, key.kernel)
        .Bind(3, key.machine_id)
        .Bind(4, DenseSizesToText(key.dense))
        .Bind(5, DTypeName(key.dtype));
    while (find.Step()) hashes.insert(find.Text(0));
  }
  return hashes;
}

std::optional<WinnerRecord> Database::FindWinner(const TuningKey& key, int64_t calls) {
  // A database of schema 2 opened read-only as it is has no winners for a call count.
  if (calls > 0 && SchemaVersion() < kCallCountWinnersVersion) return std::nullopt;
  Statement find = connection_->Prepare(
      std::string("SELECT s.id, s.kernel, s.expression, s.hash, s.canonical_json, w.time_ms, "
                  "w.fixed_csr_ms, w.updated_at, ") +
      (calls > 0 ? "w.prepare_ms FROM call_count_winners w " : "0 FROM winners w ") +
      "JOIN schedules s ON s.id = w.schedule_id "
      "WHERE w.matrix_id = (SELECT id FROM matrices WHERE fingerprint = ?) "
      "AND w.kernel = ? AND w.machine_id = ? AND w.dense = ? AND w.dtype = ?" +
      (calls > 0 ? " AND w.calls = ?" : ""));
  find.Bind(1, key.fingerprint)
      .Bind(2, key.kernel)
      .Bind(3, key.machine_id)
      .Bind(4, DenseSizesToText(key.dense))
      .Bind(5, DTypeName(key.dtype));
  if (calls > 0) find.Bind(6, calls);
  if (!find.Step()) return std::nullopt;
  WinnerRecord winner;
  winner.key = key;
  winner.calls = calls;
  winner.prepare_ms = find.Double(8);
  winner.schedule.id = find.Int(0);
  winner.schedule.kernel = find.Text(1);
  winner.schedule.expression = find.Text(2);
  winner.schedule.hash = find.Text(3);
  winner.schedule.canonical_json = find.Text(4);
  CheckStoredSchedule(path_, winner.schedule.id, winner.schedule.canonical_json);
  winner.time_ms = find.Double(5);
  winner.fixed_csr_ms = find.OptionalDouble(6);
  winner.updated_at = find.Text(7);
  return winner;
}

std::vector<MeasurementRow> Database::TopK(const TuningKey& key, int k) {
  std::vector<MeasurementRow> rows;
  if (k <= 0) return rows;
  Statement find = connection_->Prepare(
      std::string("SELECT ") + kMeasurementColumns +
      "WHERE x.fingerprint = ? AND s.kernel = ? AND m.machine_id = ? AND m.dense = ? "
      "AND m.dtype = ? AND m.verified = 1 ORDER BY m.median_ms, m.id LIMIT ?");
  find.Bind(1, key.fingerprint)
      .Bind(2, key.kernel)
      .Bind(3, key.machine_id)
      .Bind(4, DenseSizesToText(key.dense))
      .Bind(5, DTypeName(key.dtype))
      .Bind(6, int64_t(k));
  while (find.Step()) rows.push_back(ReadMeasurementRow(find, path_));
  return rows;
}

std::vector<MeasurementRow> Database::Measurements(const MeasurementFilter& filter) {
  std::string sql = std::string("SELECT ") + kMeasurementColumns + "WHERE 1";
  if (filter.kernel) sql += " AND s.kernel = ?1";
  if (filter.fingerprint) sql += " AND x.fingerprint = ?2";
  if (filter.machine_id) sql += " AND m.machine_id = ?3";
  if (filter.verified_only) sql += " AND m.verified = 1";
  sql += " ORDER BY m.matrix_id, m.machine_id, s.kernel, m.dense, m.dtype, m.median_ms, m.id";
  Statement find = connection_->Prepare(sql);
  if (filter.kernel) find.Bind(1, *filter.kernel);
  if (filter.fingerprint) find.Bind(2, *filter.fingerprint);
  if (filter.machine_id) find.Bind(3, *filter.machine_id);
  std::vector<MeasurementRow> rows;
  while (find.Step()) rows.push_back(ReadMeasurementRow(find, path_));
  return rows;
}

DatabaseStats Database::Statistics() {
  // One statement, so the counts come from one snapshot even while others write.
  Statement count = connection_->Prepare(
      std::string("SELECT (SELECT count(*) FROM matrices), (SELECT count(*) FROM schedules), "
                  "(SELECT count(*) FROM measurements), (SELECT count(*) FROM winners)") +
      (SchemaVersion() >= kCallCountWinnersVersion
           ? " + (SELECT count(*) FROM call_count_winners), "
           : ", ") +
      "(SELECT count(*) FROM failures), (SELECT count(*) FROM machines)");
  DatabaseStats stats;
  if (!count.Step()) return stats;
  stats.matrices = count.Int(0);
  stats.schedules = count.Int(1);
  stats.measurements = count.Int(2);
  stats.winners = count.Int(3);
  stats.failures = count.Int(4);
  stats.machines = count.Int(5);
  return stats;
}

std::vector<KernelStats> Database::KernelStatistics() {
  std::map<std::string, KernelStats> by_kernel;
  {
    Statement rows = connection_->Prepare(
        "SELECT s.kernel, count(*) FROM measurements m JOIN schedules s ON s.id = m.schedule_id "
        "GROUP BY s.kernel");
    while (rows.Step()) by_kernel[rows.Text(0)].measurements = rows.Int(1);
  }
  {
    Statement rows = connection_->Prepare(
        "SELECT s.kernel, substr(f.reason, 1, instr(f.reason || ':', ':') - 1) AS cause, "
        "count(*) FROM failures f JOIN schedules s ON s.id = f.schedule_id "
        "GROUP BY s.kernel, cause");
    while (rows.Step()) by_kernel[rows.Text(0)].failures[rows.Text(1)] = rows.Int(2);
  }
  {
    Statement rows = connection_->Prepare(
        "SELECT kernel, count(DISTINCT matrix_id) FROM ("
        "SELECT s.kernel AS kernel, m.matrix_id AS matrix_id FROM measurements m "
        "JOIN schedules s ON s.id = m.schedule_id UNION "
        "SELECT s.kernel, f.matrix_id FROM failures f JOIN schedules s ON s.id = f.schedule_id) "
        "GROUP BY kernel");
    while (rows.Step()) by_kernel[rows.Text(0)].matrices = rows.Int(1);
  }
  std::vector<KernelStats> out;
  for (auto& [kernel, stats] : by_kernel) {
    stats.kernel = kernel;
    out.push_back(std::move(stats));
  }
  return out;
}

}  // namespace sparsetune
