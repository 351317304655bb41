// Export, import and merge: a database travels as gzip-compressed JSON lines.
//
// Line 1 is a header {"format": "sparsetune-measurements", "version": 1, "schema": N,
// "machines": [...]}; then one line per matrix ("t": "matrix") and schedule ("t": "schedule"),
// each once, under a small id that the measurement ("t": "m"), failure ("t": "f"), winner
// ("t": "w") and winner for a call count ("t": "cw") lines refer to. Ids are local to one file.

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <ostream>
#include <unordered_map>

#include "base/errors.hpp"
#include "base/hash.hpp"
#include "base/paths.hpp"
#include "db/database.hpp"
#include "db/machine_rows.hpp"
#include "db/sqlite.hpp"
#include "ir/schedule.hpp"

namespace sparsetune {

namespace {

constexpr const char* kFormat = "sparsetune-measurements";
constexpr int kFormatVersion = 1;

using Json = nlohmann::json;
using Emit = std::function<void(const Json&)>;

Json ParseStored(const std::string& text) {
  return text.empty() ? Json::object() : Json::parse(text);
}

// Streams every row of conn to emit, in the order the reader needs. Returns the counts.
DatabaseStats DumpRecords(Connection& conn, const Emit& emit) {
  DatabaseStats counts;
  Json header = {{"format", kFormat},
                 {"version", kFormatVersion},
                 {"schema", conn.QueryInt("PRAGMA user_version")}};
  Json machines = Json::array();
  {
    Statement rows = conn.Prepare(
        "SELECT id, machine_key, cpu_model, cores, threads, l1d_bytes, l2_bytes, l3_bytes, isa, "
        "compiler, compiler_version, flags FROM machines ORDER BY id");
    while (rows.Step()) {
      machines.push_back({{"id", rows.Int(0)},
                          {"key", rows.Text(1)},
                          {"cpu_model", rows.Text(2)},
                          {"cores", rows.Int(3)},
                          {"threads", rows.Int(4)},
                          {"l1d_bytes", rows.Int(5)},
                          {"l2_bytes", rows.Int(6)},
                          {"l3_bytes", rows.Int(7)},
                          {"isa", rows.Text(8)},
                          {"compiler", rows.Text(9)},
                          {"compiler_version", rows.Text(10)},
                          {"flags", rows.Text(11)}});
      ++counts.machines;
    }
  }
  header["machines"] = std::move(machines);
  emit(header);
  {
    Statement rows = conn.Prepare(
        "SELECT id, fingerprint, name, dims, nnz, stats, source_path FROM matrices ORDER BY id");
    while (rows.Step()) {
      emit({{"t", "matrix"},
            {"id", rows.Int(0)},
            {"fingerprint", rows.Text(1)},
            {"name", rows.Text(2)},
            {"dims", ParseStored(rows.Text(3))},
            {"nnz", rows.Int(4)},
            {"stats", ParseStored(rows.Text(5))},
            {"source_path", rows.Text(6)}});
      ++counts.matrices;
    }
  }
  {
    // The canonical text travels as a string so the hash is reproduced byte for byte.
    Statement rows =
        conn.Prepare("SELECT id, kernel, expression, canonical_json FROM schedules ORDER BY id");
    while (rows.Step()) {
      emit({{"t", "schedule"},
            {"id", rows.Int(0)},
            {"kernel", rows.Text(1)},
            {"expression", rows.Text(2)},
            {"json", rows.Text(3)}});
      ++counts.schedules;
    }
  }
  {
    Statement rows = conn.Prepare(
        "SELECT matrix_id, schedule_id, machine_id, dense, dtype, median_ms, min_ms, max_ms, "
        "reps, pack_ms, compile_ms, verified, source, created_at FROM measurements ORDER BY id");
    while (rows.Step()) {
      emit({{"t", "m"},
            {"matrix", rows.Int(0)},
            {"schedule", rows.Int(1)},
            {"machine", rows.Int(2)},
            {"dense", ParseStored(rows.Text(3))},
            {"dtype", rows.Text(4)},
            {"median_ms", rows.Double(5)},
            {"min_ms", rows.Double(6)},
            {"max_ms", rows.Double(7)},
            {"reps", rows.Int(8)},
            {"pack_ms", rows.Double(9)},
            {"compile_ms", rows.Double(10)},
            {"verified", rows.Int(11) != 0},
            {"source", rows.Text(12)},
            {"created_at", rows.Text(13)}});
      ++counts.measurements;
    }
  }
  {
    Statement rows = conn.Prepare(
        "SELECT matrix_id, schedule_id, machine_id, dense, dtype, reason, created_at "
        "FROM failures ORDER BY id");
    while (rows.Step()) {
      emit({{"t", "f"},
            {"matrix", rows.Int(0)},
            {"schedule", rows.Int(1)},
            {"machine", rows.Int(2)},
            {"dense", ParseStored(rows.Text(3))},
            {"dtype", rows.Text(4)},
            {"reason", rows.Text(5)},
            {"created_at", rows.Text(6)}});
      ++counts.failures;
    }
  }
  {
    Statement rows = conn.Prepare(
        "SELECT matrix_id, kernel, machine_id, dense, dtype, schedule_id, time_ms, fixed_csr_ms, "
        "updated_at FROM winners ORDER BY id");
    while (rows.Step()) {
      std::optional<double> fixed_csr = rows.OptionalDouble(7);
      emit({{"t", "w"},
            {"matrix", rows.Int(0)},
            {"kernel", rows.Text(1)},
            {"machine", rows.Int(2)},
            {"dense", ParseStored(rows.Text(3))},
            {"dtype", rows.Text(4)},
            {"schedule", rows.Int(5)},
            {"time_ms", rows.Double(6)},
            {"fixed_csr_ms", fixed_csr ? Json(*fixed_csr) : Json(nullptr)},
            {"updated_at", rows.Text(8)}});
      ++counts.winners;
    }
  }
  if (conn.QueryInt("PRAGMA user_version") >= kCallCountWinnersVersion) {
    Statement rows = conn.Prepare(
        "SELECT matrix_id, kernel, machine_id, dense, dtype, calls, schedule_id, time_ms, "
        "prepare_ms, fixed_csr_ms, updated_at FROM call_count_winners ORDER BY id");
    while (rows.Step()) {
      std::optional<double> fixed_csr = rows.OptionalDouble(9);
      emit({{"t", "cw"},
            {"matrix", rows.Int(0)},
            {"kernel", rows.Text(1)},
            {"machine", rows.Int(2)},
            {"dense", ParseStored(rows.Text(3))},
            {"dtype", rows.Text(4)},
            {"calls", rows.Int(5)},
            {"schedule", rows.Int(6)},
            {"time_ms", rows.Double(7)},
            {"prepare_ms", rows.Double(8)},
            {"fixed_csr_ms", fixed_csr ? Json(*fixed_csr) : Json(nullptr)},
            {"updated_at", rows.Text(10)}});
      ++counts.winners;
    }
  }
  return counts;
}

// Runs body inside a read transaction, so a dump is one consistent snapshot.
template <class Body>
void ReadTransaction(Connection& conn, Body&& body) {
  conn.Exec("BEGIN");
  try {
    body();
  } catch (...) {
    if (conn.InTransaction()) sqlite3_exec(conn.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  conn.Exec("COMMIT");
}

// Applies dumped lines to a database inside the caller's write transaction. Existing rows win
// unless the incoming row is newer, which makes applying the same lines twice a no-op.
class RecordApplier {
 public:
  RecordApplier(Connection& conn, std::string source) : conn_(conn), source_(std::move(source)) {}

  void Apply(const Json& line, int64_t line_number) {
    line_ = line_number;
    try {
      if (!seen_header_) {
        ApplyHeader(line);
        seen_header_ = true;
        return;
      }
      const std::string type = line.at("t").get<std::string>();
      if (type == "matrix") {
        ApplyMatrix(line);
      } else if (type == "schedule") {
        ApplySchedule(line);
      } else if (type == "m") {
        ApplyMeasurement(line);
      } else if (type == "f") {
        ApplyFailure(line);
      } else if (type == "w") {
        ApplyWinner(line);
      } else if (type == "cw") {
        ApplyCallCountWinner(line);
      }
      // Other types are additions of a later version within the same format; skip them.
    } catch (const Json::exception& e) {
      Fail(std::string("malformed record: ") + e.what());
    } catch (const InputError& e) {
      if (!e.file().empty()) throw;
      Fail(e.cause());
    }
  }

  void Finish() {
    if (!seen_header_) Fail("empty file (no header line)");
  }

 private:
  [[noreturn]] void Fail(const std::string& cause) { throw InputError(source_, line_, cause); }

  // A whole number in [lo, hi]: a float or one out of range is refused by name (converting it
  // would be undefined).
  int64_t Whole(const Json& value, const char* field, int64_t lo = INT64_MIN,
                int64_t hi = INT64_MAX) {
    bool ok = value.is_number_integer();
    if (ok && value.is_number_unsigned()) ok = value.get<uint64_t>() <= static_cast<uint64_t>(hi);
    int64_t n = 0;
    if (ok && !value.is_number_unsigned()) n = value.get<int64_t>();
    if (ok && value.is_number_unsigned()) n = static_cast<int64_t>(value.get<uint64_t>());
    if (!ok || n < lo || n > hi)
      Fail(std::string("\"") + field + "\" must be a whole number from " + std::to_string(lo) +
           " to " + std::to_string(hi) + ", not " + value.dump());
    return n;
  }

  void ApplyHeader(const Json& header) {
    if (!header.is_object() || header.value("format", "") != kFormat)
      Fail(std::string("not a sparsetune measurements file (expected a \"") + kFormat +
           "\" header)");
    int version = static_cast<int>(Whole(header.at("version"), "version", 0, INT32_MAX));
    if (version > kFormatVersion)
      Fail("format version " + std::to_string(version) + " is newer than this sparsetune reads (" +
           std::to_string(kFormatVersion) + ")");
    for (const Json& machine : header.at("machines")) {
      MachineInfo info;
      info.cpu_model = machine.at("cpu_model").get<std::string>();
      info.cores = static_cast<int>(Whole(machine.at("cores"), "cores", 0, INT32_MAX));
      info.threads = static_cast<int>(Whole(machine.at("threads"), "threads", 0, INT32_MAX));
      info.l1d_bytes = Whole(machine.at("l1d_bytes"), "l1d_bytes");
      info.l2_bytes = Whole(machine.at("l2_bytes"), "l2_bytes");
      info.l3_bytes = Whole(machine.at("l3_bytes"), "l3_bytes");
      info.isa = machine.value("isa", "");
      info.compiler = machine.at("compiler").get<std::string>();
      info.compiler_version = machine.at("compiler_version").get<std::string>();
      info.flags = machine.value("flags", "");
      // The key is the machine's identity where it was measured; keep it as written.
      std::string key = machine.value("key", "");
      if (key.empty()) key = MachineKey(info);
      machines_[Whole(machine.at("id"), "id")] = FindOrInsertMachine(conn_, key, info);
    }
  }

  void ApplyMatrix(const Json& line) {
    const std::string fingerprint = line.at("fingerprint").get<std::string>();
    if (fingerprint.empty()) Fail("matrix without fingerprint");
    Json stats = line.value("stats", Json::object());
    Statement insert = conn_.Prepare(
        "INSERT INTO matrices (fingerprint, name, dims, nnz, stats, source_path) "
        "VALUES (?,?,?,?,?,?) ON CONFLICT (fingerprint) DO UPDATE SET "
        "name = CASE WHEN name = '' THEN excluded.name ELSE name END, "
        "source_path = CASE WHEN source_path = '' THEN excluded.source_path ELSE source_path END, "
        "stats = CASE WHEN stats IN ('', '{}', 'null') THEN excluded.stats ELSE stats END "
        "WHERE name = '' OR source_path = '' OR stats IN ('', '{}', 'null')");
    insert.Bind(1, fingerprint)
        .Bind(2, line.value("name", ""))
        .Bind(3, line.at("dims").dump())
        .Bind(4, Whole(line.at("nnz"), "nnz"))
        .Bind(5, stats.is_null() ? std::string("{}") : stats.dump())
        .Bind(6, line.value("source_path", ""))
        .Run();
    Statement find = conn_.Prepare("SELECT id FROM matrices WHERE fingerprint = ?");
    find.Bind(1, fingerprint);
    if (!find.Step()) Fail("matrix row missing after insert");
    matrices_[Whole(line.at("id"), "id")] = find.Int(0);
  }

  void ApplySchedule(const Json& line) {
    const std::string kernel = line.at("kernel").get<std::string>();
    const std::string canonical = line.at("json").get<std::string>();
    if (kernel.empty() || kernel.size() > 4096) Fail("schedule without a kernel name");
    // Checked as every schedule from outside is, before the transaction commits: a schedule
    // that does not parse or holds values the generated code cannot (a chunk of 2^31) stops
    // the import with nothing stored.
    try {
      ParseScheduleText(canonical, "schedule");
    } catch (const InputError& e) {
      Fail("schedule " + std::to_string(Whole(line.at("id"), "id")) + " is not valid (" + e.what() +
           ")");
    }
    const std::string hash = StableHashHex(canonical);
    {
      Statement insert = conn_.Prepare(
          "INSERT INTO schedules (kernel, expression, hash, canonical_json) VALUES (?,?,?,?) "
          "ON CONFLICT (kernel, hash) DO NOTHING");
      insert.Bind(1, kernel)
          .Bind(2, line.value("expression", ""))
          .Bind(3, hash)
          .Bind(4, canonical)
          .Run();
    }
    Statement find = conn_.Prepare("SELECT id FROM schedules WHERE kernel = ? AND hash = ?");
    find.Bind(1, kernel).Bind(2, hash);
    if (!find.Step()) Fail("schedule row missing after insert");
    schedules_[Whole(line.at("id"), "id")] = find.Int(0);
  }

  int64_t Resolve(const std::unordered_map<int64_t, int64_t>& ids, const Json& line,
                  const char* field) {
    int64_t id = Whole(line.at(field), field);
    auto found = ids.find(id);
    if (found == ids.end()) Fail(std::string("unknown ") + field + " id " + std::to_string(id));
    return found->second;
  }

  // The stored forms of the key columns shared by m, f and w lines.
  std::string DenseText(const Json& line) {
    const Json& dense = line.at("dense");
    if (!dense.is_object()) Fail("\"dense\" must be an object of index sizes");
    DenseSizes sizes;
    for (auto it = dense.begin(); it != dense.end(); ++it)
      sizes[it.key()] = Whole(it.value(), "dense", 1, INT32_MAX);
    return DenseSizesToText(sizes);
  }
  std::string DTypeText(const Json& line) {
    std::string dtype = line.at("dtype").get<std::string>();
    ParseDType(dtype);
    return dtype;
  }

  // A time or count that no measurement gives (negative) is refused.
  double NonNegative(const Json& line, const char* field) {
    const double value = line.at(field).get<double>();
    if (!(value >= 0) || !std::isfinite(value))
      Fail(std::string(field) + " is " + line.at(field).dump() + "; it must be 0 or more");
    return value;
  }

  int64_t Reps(const Json& line) {
    const int64_t reps = Whole(line.at("reps"), "reps");
    if (reps < 0) Fail("reps is " + std::to_string(reps) + "; it must be 0 or more");
    return reps;
  }

  void ApplyMeasurement(const Json& line) {
    Statement insert = conn_.Prepare(
        "INSERT INTO measurements (matrix_id, schedule_id, machine_id, dense, dtype, median_ms, "
        "min_ms, max_ms, reps, pack_ms, compile_ms, verified, source, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT (matrix_id, schedule_id, machine_id, dense, dtype) DO UPDATE SET "
        "median_ms = excluded.median_ms, min_ms = excluded.min_ms, max_ms = excluded.max_ms, "
        "reps = excluded.reps, pack_ms = excluded.pack_ms, compile_ms = excluded.compile_ms, "
        "verified = excluded.verified, source = excluded.source, "
        "created_at = excluded.created_at WHERE excluded.created_at > created_at");
    insert.Bind(1, Resolve(matrices_, line, "matrix"))
        .Bind(2, Resolve(schedules_, line, "schedule"))
        .Bind(3, Resolve(machines_, line, "machine"))
        .Bind(4, DenseText(line))
        .Bind(5, DTypeText(line))
        .Bind(6, NonNegative(line, "median_ms"))
        .Bind(7, NonNegative(line, "min_ms"))
        .Bind(8, NonNegative(line, "max_ms"))
        .Bind(9, Reps(line))
        .Bind(10, line.value("pack_ms", 0.0))
        .Bind(11, line.value("compile_ms", 0.0))
        .Bind(12, int64_t(line.at("verified").get<bool>()))
        .Bind(13, line.at("source").get<std::string>())
        .Bind(14, line.at("created_at").get<std::string>())
        .Run();
  }

  void ApplyFailure(const Json& line) {
    Statement insert = conn_.Prepare(
        "INSERT INTO failures (matrix_id, schedule_id, machine_id, dense, dtype, reason, "
        "created_at) VALUES (?,?,?,?,?,?,?) "
        "ON CONFLICT (matrix_id, schedule_id, machine_id, dense, dtype) DO UPDATE SET "
        "reason = excluded.reason, created_at = excluded.created_at "
        "WHERE excluded.created_at > created_at");
    insert.Bind(1, Resolve(matrices_, line, "matrix"))
        .Bind(2, Resolve(schedules_, line, "schedule"))
        .Bind(3, Resolve(machines_, line, "machine"))
        .Bind(4, DenseText(line))
        .Bind(5, DTypeText(line))
        .Bind(6, line.at("reason").get<std::string>())
        .Bind(7, line.at("created_at").get<std::string>())
        .Run();
  }

  void ApplyWinner(const Json& line) {
    const Json& fixed_csr = line.at("fixed_csr_ms");
    Statement insert = conn_.Prepare(
        "INSERT INTO winners (matrix_id, kernel, machine_id, dense, dtype, schedule_id, time_ms, "
        "fixed_csr_ms, updated_at) VALUES (?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT (matrix_id, kernel, machine_id, dense, dtype) DO UPDATE SET "
        "schedule_id = excluded.schedule_id, time_ms = excluded.time_ms, "
        "fixed_csr_ms = excluded.fixed_csr_ms, updated_at = excluded.updated_at "
        "WHERE excluded.updated_at > updated_at");
    insert.Bind(1, Resolve(matrices_, line, "matrix"))
        .Bind(2, line.at("kernel").get<std::string>())
        .Bind(3, Resolve(machines_, line, "machine"))
        .Bind(4, DenseText(line))
        .Bind(5, DTypeText(line))
        .Bind(6, Resolve(schedules_, line, "schedule"))
        .Bind(7, NonNegative(line, "time_ms"))
        .Bind(8, fixed_csr.is_null() ? std::optional<double>() : fixed_csr.get<double>())
        .Bind(9, line.at("updated_at").get<std::string>())
        .Run();
  }

  void ApplyCallCountWinner(const Json& line) {
    const Json& fixed_csr = line.at("fixed_csr_ms");
    const int64_t calls = Whole(line.at("calls"), "calls");
    if (calls < 1) Fail("calls is " + std::to_string(calls) + "; it must be 1 or more");
    Statement insert = conn_.Prepare(
        "INSERT INTO call_count_winners (matrix_id, kernel, machine_id, dense, dtype, calls, "
        "schedule_id, time_ms, prepare_ms, fixed_csr_ms, updated_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT (matrix_id, kernel, machine_id, dense, dtype, calls) DO UPDATE SET "
        "schedule_id = excluded.schedule_id, time_ms = excluded.time_ms, "
        "prepare_ms = excluded.prepare_ms, fixed_csr_ms = excluded.fixed_csr_ms, "
        "updated_at = excluded.updated_at WHERE excluded.updated_at > updated_at");
    insert.Bind(1, Resolve(matrices_, line, "matrix"))
        .Bind(2, line.at("kernel").get<std::string>())
        .Bind(3, Resolve(machines_, line, "machine"))
        .Bind(4, DenseText(line))
        .Bind(5, DTypeText(line))
        .Bind(6, calls)
        .Bind(7, Resolve(schedules_, line, "schedule"))
        .Bind(8, NonNegative(line, "time_ms"))
        .Bind(9, NonNegative(line, "prepare_ms"))
        .Bind(10, fixed_csr.is_null() ? std::optional<double>() : fixed_csr.get<double>())
        .Bind(11, line.at("updated_at").get<std::string>())
        .Run();
  }

  Connection& conn_;
  std::string source_;
  int64_t line_ = 0;
  bool seen_header_ = false;
  std::unordered_map<int64_t, int64_t> machines_, matrices_, schedules_;
};

// Reads newline-separated lines from a gzip file (or a plain one: zlib reads both).
class GzLineReader {
 public:
  explicit GzLineReader(const std::string& path) : path_(path) {
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) throw InputError(path, 0, std::string("cannot open (") + strerror(errno) + ")");
    gzbuffer(file_, 1 << 17);
  }
  ~GzLineReader() {
    if (file_) gzclose(file_);
  }
  GzLineReader(const GzLineReader&) = delete;
  GzLineReader& operator=(const GzLineReader&) = delete;

  bool Next(std::string& line) {
    line.clear();
    // Bytes from start_ to scanned_ hold no newline: a long line is searched once.
    size_t scanned = start_;
    while (true) {
      size_t newline = buffer_.find('\n', scanned);
      if (newline != std::string::npos) {
        line.assign(buffer_, start_, newline - start_);
        start_ = newline + 1;
        return true;
      }
      scanned = buffer_.size();
      if (eof_) {
        if (start_ >= buffer_.size()) return false;
        line.assign(buffer_, start_, std::string::npos);
        start_ = buffer_.size();
        return true;
      }
      scanned -= start_;
      buffer_.erase(0, start_);
      start_ = 0;
      char chunk[1 << 16];
      int got = gzread(file_, chunk, sizeof chunk);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(file_, &code);
        throw InputError(path_, 0, std::string("cannot read compressed data (") + message + ")");
      }
      if (got == 0) {
        // gzread reports a stream cut short as end of file; gzerror tells them apart.
        int code = 0;
        const char* message = gzerror(file_, &code);
        if (code != Z_OK && code != Z_STREAM_END)
          throw InputError(path_, 0, std::string("cannot read compressed data (") + message + ")");
        eof_ = true;
      }
      buffer_.append(chunk, size_t(got));
      inflated_ += size_t(got);
      // A file that inflates far more than JSON lines do is a decompression bomb.
      const z_off_t consumed = gzoffset(file_);
      if (inflated_ > (size_t(64) << 20) && consumed > 0 && inflated_ / size_t(consumed) > 200)
        throw InputError(path_, 0,
                         "compressed data inflates to over 200 times its size: refused as a "
                         "decompression bomb");
      if (buffer_.size() - start_ > kMaxLineBytes)
        throw InputError(path_, 0,
                         "a line longer than " + std::to_string(kMaxLineBytes >> 20) +
                             " MiB: not a measurements file");
    }
  }

  static constexpr size_t kMaxLineBytes = size_t(64) << 20;

 private:
  std::string path_;
  gzFile file_ = nullptr;
  std::string buffer_;
  size_t start_ = 0;
  size_t inflated_ = 0;
  bool eof_ = false;
};

DatabaseStats Difference(const DatabaseStats& after, const DatabaseStats& before) {
  DatabaseStats added;
  added.matrices = after.matrices - before.matrices;
  added.schedules = after.schedules - before.schedules;
  added.measurements = after.measurements - before.measurements;
  added.winners = after.winners - before.winners;
  added.failures = after.failures - before.failures;
  added.machines = after.machines - before.machines;
  return added;
}

}  // namespace

DatabaseStats Database::ExportMeasurements(const std::string& path) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  if (!parent.empty()) EnsureDirectory(parent);
  // Written beside the target and renamed, so a reader never sees half a file.
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  gzFile out = gzopen(temporary.c_str(), "wb6");
  if (!out) throw InternalError("cannot create " + temporary + ": " + strerror(errno));
  DatabaseStats counts;
  bool write_failed = false;
  try {
    ReadTransaction(*connection_, [&] {
      counts = DumpRecords(*connection_, [&](const Json& line) {
        std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace);
        text += '\n';
        if (gzwrite(out, text.data(), unsigned(text.size())) != int(text.size()))
          write_failed = true;
      });
    });
  } catch (...) {
    gzclose(out);
    std::remove(temporary.c_str());
    throw;
  }
  if (gzclose(out) != Z_OK || write_failed) {
    std::remove(temporary.c_str());
    throw InternalError("cannot write " + temporary + " (disk full?)");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string error = strerror(errno);
    std::remove(temporary.c_str());
    throw InternalError("cannot rename " + temporary + " to " + path + ": " + error);
  }
  return counts;
}

DatabaseStats Database::ImportMeasurements(const std::string& path) {
  RequireWritable("ImportMeasurements");
  DatabaseStats before, after;
  connection_->WriteTransaction([&] {
    before = Statistics();
    RecordApplier applier(*connection_, path);
    GzLineReader reader(path);
    std::string text;
    int64_t line_number = 0;
    while (reader.Next(text)) {
      ++line_number;
      if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
      Json line;
      try {
        line = Json::parse(text);
      } catch (const Json::exception& e) {
        throw InputError(path, line_number, std::string("invalid JSON: ") + e.what());
      }
      applier.Apply(line, line_number);
    }
    applier.Finish();
    after = Statistics();
  });
  return Difference(after, before);
}

DatabaseStats Database::MergeDatabase(const std::string& other_path) {
  return MergeDatabases({other_path}).front();
}

std::vector<DatabaseStats> Database::MergeDatabases(const std::vector<std::string>& other_paths) {
  RequireWritable("MergeDatabases");
  // Every input is opened (and so checked) before anything is written.
  std::vector<std::unique_ptr<Database>> others;
  for (const auto& other_path : other_paths) {
    std::error_code error;
    if (std::filesystem::equivalent(path_, other_path, error))
      throw InputError(other_path, 0, "is the database merged into");
    others.push_back(Database::Open(other_path, OpenMode::kReadOnly));
  }
  std::vector<DatabaseStats> added;
  connection_->WriteTransaction([&] {
    added.clear();
    DatabaseStats before = Statistics();
    for (size_t k = 0; k < others.size(); ++k) {
      Database& other = *others[k];
      RecordApplier applier(*connection_, other_paths[k]);
      int64_t record = 0;
      ReadTransaction(*other.connection_, [&] {
        DumpRecords(*other.connection_, [&](const Json& line) { applier.Apply(line, ++record); });
      });
      applier.Finish();
      const DatabaseStats after = Statistics();
      added.push_back(Difference(after, before));
      before = after;
    }
  });
  return added;
}

int64_t Database::ExportWinners(std::ostream& out) {
  int64_t lines = 0;
  // A stored schedule is checked before it is written out, as every read of one is.
  auto StoredSchedule = [&](const std::string& text) {
    try {
      ParseScheduleText(text, "schedule");
    } catch (const InputError& e) {
      throw InputError(path_, 0,
                       std::string("a stored winner's schedule is not valid (") + e.what() + ")");
    }
    return Json::parse(text);
  };
  // The winners per call ("calls": 0), then those for a call count.
  auto write = [&](const std::string& table, const char* calls, const char* prepare_ms) {
    Statement rows = connection_->Prepare(
        "SELECT x.fingerprint, x.name, w.kernel, s.expression, w.dense, w.dtype, w.machine_id, "
        "c.machine_key, c.cpu_model, s.canonical_json, w.time_ms, w.fixed_csr_ms, w.updated_at, " +
        std::string(calls) + ", " + prepare_ms + " FROM " + table +
        " w JOIN matrices x ON x.id = w.matrix_id "
        "JOIN schedules s ON s.id = w.schedule_id JOIN machines c ON c.id = w.machine_id "
        "ORDER BY w.id");
    while (rows.Step()) {
      const std::optional<double> fixed_csr = rows.OptionalDouble(11);
      Json line = {
          {"fingerprint", rows.Text(0)},
          {"matrix", rows.Text(1)},
          {"kernel", rows.Text(2)},
          {"expression", rows.Text(3)},
          {"dense", ParseStored(rows.Text(4))},
          {"dtype", rows.Text(5)},
          {"machine", {{"id", rows.Int(6)}, {"key", rows.Text(7)}, {"cpu_model", rows.Text(8)}}},
          {"calls", rows.Int(13)},
          {"schedule", StoredSchedule(rows.Text(9))},
          {"time_ms", rows.Double(10)},
          {"fixed_csr_ms", fixed_csr ? Json(*fixed_csr) : Json(nullptr)},
          {"updated_at", rows.Text(12)}};
      if (rows.Int(13) > 0) line["prepare_ms"] = rows.Double(14);
      out << line.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
      ++lines;
    }
  };
  ReadTransaction(*connection_, [&] {
    write("winners", "0", "0");
    if (SchemaVersion() >= kCallCountWinnersVersion)
      write("call_count_winners", "w.calls", "w.prepare_ms");
  });
  if (!out) throw InternalError("cannot write the winners (disk full?)");
  return lines;
}

}  // namespace sparsetune
