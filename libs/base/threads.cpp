#include "base/threads.hpp"

#include <thread>

namespace sparsetune {

int HardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace sparsetune
