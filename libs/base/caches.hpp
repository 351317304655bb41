// The data cache sizes of this machine, from sysfs (Linux), for choices that must fit a working
// set in a cache level (column segments, blocks, tiles) and for the machine a time was measured
// on.
#pragma once

#include <cstdint>

namespace sparsetune {

struct CacheSizes {
  int64_t l1d = 0;  // per core
  int64_t l2 = 0;   // per core (or per cluster, as sysfs reports it)
  int64_t llc = 0;  // the last level (shared)
};

// The levels as /sys/devices/system/cpu/cpu0/cache describes them (sysconf where it does not):
// the level 1 data cache, level 2 and level 3 (`llc` 0 without one); 0 where a level cannot be
// read. What the database records of a machine.
CacheSizes ReportedCaches();

// ReportedCaches, read once, for sizing working sets: the last level is level 2 on a machine
// without a level 3, and a level that cannot be read takes a common size (32 KiB, 1 MiB, 32 MiB).
const CacheSizes& MachineCaches();

}  // namespace sparsetune
