// The machines table, shared by the database's writes and the measurement import (internal).
#pragma once

#include <cstdint>
#include <string>

#include "db/machine.hpp"
#include "db/sqlite.hpp"

namespace sparsetune {

// The id of the machine row with this key, inserted from `info` when there is none. Runs
// inside the caller's write transaction.
int64_t FindOrInsertMachine(Connection& connection, const std::string& key,
                            const MachineInfo& info);

}  // namespace sparsetune
