#pragma once

#include <chrono>
#include <memory>

#include "baselines/baseline.hpp"

namespace sparsetune {

inline double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// nullptr when the library has no such kernel.
std::unique_ptr<Baseline> MakeRsbBaseline(const BaselineOperands& operands, bool tuned);
std::unique_ptr<Baseline> MakeGraphBlasBaseline(const BaselineOperands& operands);

}  // namespace sparsetune
