#pragma once

namespace sparsetune {

// The hardware threads this process may use: its CPU affinity (a task bound to some cores),
// else the machine's count; at least 1.
int HardwareThreads();

}  // namespace sparsetune
