// Intervals as the project reports them: steady-clock milliseconds.
#pragma once

#include <chrono>

namespace sparsetune {

inline double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace sparsetune
