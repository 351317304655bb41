#pragma once

namespace sparsetune {

// The machine's hardware thread count (at least 1).
int HardwareThreads();

}  // namespace sparsetune
