#pragma once

// Thin RAII layer over the SQLite C API, internal to the db component.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <sqlite3.h>

#include "base/errors.hpp"

namespace sparsetune {

// The database was locked by another process for longer than the busy timeout. Write
// transactions catch it and retry from the start.
class SqliteBusy : public InternalError {
 public:
  using InternalError::InternalError;
};

// A prepared statement borrowed from a Connection's cache. Bind parameters are 1-based,
// columns 0-based. Reset (and its bindings cleared) when the handle goes out of scope, so a
// read never keeps a transaction open by accident.
class Statement {
 public:
  // in_use: the cache's flag for this statement, cleared on release; null for a statement
  // this handle owns and finalizes.
  Statement(sqlite3_stmt* stmt, bool* in_use, const std::string* path)
      : stmt_(stmt), in_use_(in_use), path_(path) {}
  Statement(Statement&& other) noexcept
      : stmt_(other.stmt_), in_use_(other.in_use_), path_(other.path_) {
    other.stmt_ = nullptr;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, int value) { return Bind(index, int64_t(value)); }
  Statement& Bind(int index, double value);
  Statement& Bind(int index, const std::string& value);
  Statement& Bind(int index, const char* value) { return Bind(index, std::string(value)); }
  Statement& Bind(int index, const std::optional<double>& value);
  Statement& BindNull(int index);

  // True while there is a row to read.
  bool Step();
  // Runs a statement that returns no rows (or ignores them).
  void Run();

  bool IsNull(int column) const;
  int64_t Int(int column) const;
  double Double(int column) const;
  std::optional<double> OptionalDouble(int column) const;
  std::string Text(int column) const;

 private:
  sqlite3_stmt* stmt_;
  bool* in_use_;
  const std::string* path_;
};

class Connection {
 public:
  // Opens `target` (path unless a URI is needed); messages name `path`. Throws InputError
  // when the file cannot be opened.
  Connection(const std::string& path, const std::string& target, int flags);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Prepares once per connection and caches by SQL text. A statement still borrowed (nested
  // use of the same SQL) gets a fresh, uncached copy.
  Statement Prepare(const std::string& sql);
  // Runs one or more statements without results.
  void Exec(const std::string& sql);
  int64_t QueryInt(const std::string& sql);
  std::string QueryText(const std::string& sql);

  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  int64_t Changes() const { return sqlite3_changes64(db_); }
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

  // Runs body inside BEGIN IMMEDIATE ... COMMIT. If another writer holds the lock past the
  // busy timeout the transaction is rolled back and body runs again, so body must not have
  // side effects outside the database. Any other exception rolls back and propagates.
  template <class Body>
  void WriteTransaction(Body&& body);

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  void Rollback();
  void BackOff(int attempt);

  std::string path_;
  sqlite3* db_ = nullptr;
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  std::map<std::string, Cached> cache_;
};

// Throws the error matching an SQLite result code: SqliteBusy, InputError for a file that is
// not a database or is corrupt, InternalError otherwise.
[[noreturn]] void ThrowSqliteError(int code, const std::string& message, const std::string& path);

template <class Body>
void Connection::WriteTransaction(Body&& body) {
  constexpr int kAttempts = 20;
  for (int attempt = 1;; ++attempt) {
    try {
      Exec("BEGIN IMMEDIATE");
      body();
      Exec("COMMIT");
      return;
    } catch (const SqliteBusy&) {
      Rollback();
      if (attempt >= kAttempts) throw;
      BackOff(attempt);
    } catch (...) {
      Rollback();
      throw;
    }
  }
}

}  // namespace sparsetune
