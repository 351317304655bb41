// The data cache sizes of this machine, from sysfs (Linux), for choices that must fit a working
// set in a cache level: column segments, blocks, tiles.
#pragma once

#include <cstdint>

namespace sparsetune {

struct CacheSizes {
  int64_t l1d = 0;  // per core
  int64_t l2 = 0;   // per core (or per cluster, as sysfs reports it)
  int64_t llc = 0;  // the last level (shared)
};

// Read once from /sys/devices/system/cpu/cpu0/cache; a level that cannot be read takes a
// common size (32 KiB, 1 MiB, 32 MiB).
const CacheSizes& MachineCaches();

}  // namespace sparsetune
