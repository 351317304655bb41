// The contenders of the static library (the loaders and the JIT-compiled ones); the module's
// are declared in libraries/baselines_internal.hpp.
#pragma once

#include <memory>
#include <string>

#include "baselines/baseline.hpp"

namespace sparsetune {

// "eigen" (spmv, spmm) or "hand" (all four kernels), compiled by operands.jit; nullptr when
// the contender has no such kernel.
std::unique_ptr<Baseline> MakeJitBaseline(const BaselineOperands& operands,
                                          const std::string& which);

// PyTorch through the cost model's LibTorch module, loaded on first use.
std::unique_ptr<Baseline> MakeTorchBaseline(const BaselineOperands& operands);

}  // namespace sparsetune
