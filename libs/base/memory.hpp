#pragma once

#include <cstdint>

namespace sparsetune {

// Bytes this process can still allocate: the system's available memory (MemAvailable), or
// less when an address-space limit (ulimit -v) or a cgroup's memory limit leaves less.
int64_t MemoryAvailableToProcess();

}  // namespace sparsetune
