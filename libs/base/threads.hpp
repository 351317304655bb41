#pragma once

#include <vector>

namespace sparsetune {

// The CPUs this process may run on (a batch scheduler's task bound to some cores of a node
// must time and record those, not the node's), as the process first asked: pinning its own
// threads later narrows the calling thread's affinity, which must not change the answer.
// Empty when the affinity cannot be read.
const std::vector<int>& AllowedCpus();

// How many threads to use: the allowed CPUs, else the machine's count; at least 1.
int HardwareThreads();

}  // namespace sparsetune
