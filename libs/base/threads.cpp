#include "base/threads.hpp"

#include <sched.h>

#include <thread>

namespace sparsetune {

int HardwareThreads() {
  // The CPUs this process may run on: a batch scheduler's task bound to some cores of a node
  // must time (and record) those, not the node's.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace sparsetune
