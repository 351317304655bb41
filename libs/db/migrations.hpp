#pragma once

#include <vector>

namespace sparsetune {

// One numbered schema migration from schemas/NNN_name.sql, embedded at build time.
struct Migration {
  int version;       // NNN; the database's user_version after it ran
  const char* name;  // file name, for messages
  const char* sql;
};

// Ascending by version, numbered 1..N without gaps.
const std::vector<Migration>& Migrations();

}  // namespace sparsetune
