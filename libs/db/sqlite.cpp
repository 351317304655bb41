#include "db/sqlite.hpp"

#include <chrono>
#include <random>
#include <thread>

namespace sparsetune {

void ThrowSqliteError(int code, const std::string& message, const std::string& path) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw SqliteBusy(path + ": database is locked by another process (" + message + ")");
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      throw InputError(path, 0, "not a sparsetune database (" + message + ")");
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      throw InternalError(path + ": " + message);
    default:
      throw InternalError(path + ": SQLite error: " + message);
  }
}

// --- Statement --------------------------------------------------------------------------------

Statement::~Statement() {
  if (!stmt_) return;
  if (in_use_) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *in_use_ = false;
  } else {
    sqlite3_finalize(stmt_);
  }
}

namespace {
void CheckBind(int rc, sqlite3_stmt* stmt, const std::string* path) {
  if (rc != SQLITE_OK) ThrowSqliteError(rc, sqlite3_errmsg(sqlite3_db_handle(stmt)), *path);
}
}  // namespace

Statement& Statement::Bind(int index, int64_t value) {
  CheckBind(sqlite3_bind_int64(stmt_, index, value), stmt_, path_);
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  CheckBind(sqlite3_bind_double(stmt_, index, value), stmt_, path_);
  return *this;
}

Statement& Statement::Bind(int index, const std::string& value) {
  CheckBind(sqlite3_bind_text(stmt_, index, value.data(), int(value.size()), SQLITE_TRANSIENT),
            stmt_, path_);
  return *this;
}

Statement& Statement::Bind(int index, const std::optional<double>& value) {
  return value ? Bind(index, *value) : BindNull(index);
}

Statement& Statement::BindNull(int index) {
  CheckBind(sqlite3_bind_null(stmt_, index), stmt_, path_);
  return *this;
}

bool Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Read the message before reset, which may replace it.
  std::string message = sqlite3_errmsg(sqlite3_db_handle(stmt_));
  sqlite3_reset(stmt_);
  ThrowSqliteError(rc, message, *path_);
}

void Statement::Run() {
  while (Step()) {
  }
}

bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::Int(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double Statement::Double(int column) const {
  return sqlite3_column_double(stmt_, column);
}

std::optional<double> Statement::OptionalDouble(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Double(column);
}

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (!text) return std::string();
  return std::string(reinterpret_cast<const char*>(text),
                     size_t(sqlite3_column_bytes(stmt_, column)));
}

// --- Connection -------------------------------------------------------------------------------

Connection::Connection(const std::string& path, const std::string& target, int flags)
    : path_(path) {
  int rc = sqlite3_open_v2(target.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
      ThrowSqliteError(rc, message, path);
    throw InputError(path, 0, "cannot open database (" + message + ")");
  }
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() {
  for (auto& entry : cache_) sqlite3_finalize(entry.second.stmt);
  if (db_) sqlite3_close_v2(db_);
}

Statement Connection::Prepare(const std::string& sql) {
  Cached& cached = cache_[sql];
  if (cached.stmt && !cached.in_use) {
    cached.in_use = true;
    return Statement(cached.stmt, &cached.in_use, &path_);
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), int(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    ThrowSqliteError(rc, message + " in: " + sql, path_);
  }
  if (!cached.stmt) {
    cached.stmt = stmt;
    cached.in_use = true;
    return Statement(stmt, &cached.in_use, &path_);
  }
  return Statement(stmt, nullptr, &path_);
}

void Connection::Exec(const std::string& sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    ThrowSqliteError(rc, message, path_);
  }
}

int64_t Connection::QueryInt(const std::string& sql) {
  Statement stmt = Prepare(sql);
  return stmt.Step() ? stmt.Int(0) : 0;
}

std::string Connection::QueryText(const std::string& sql) {
  Statement stmt = Prepare(sql);
  return stmt.Step() ? stmt.Text(0) : std::string();
}

void Connection::Rollback() {
  if (InTransaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Connection::BackOff(int attempt) {
  // Randomised so that writers that collided do not collide again in lockstep.
  static thread_local std::minstd_rand rng(std::random_device{}());
  int cap_ms = std::min(50 * attempt, 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(1 + int(rng() % unsigned(cap_ms))));
}

}  // namespace sparsetune
