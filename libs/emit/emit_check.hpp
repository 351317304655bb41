// Checks an emitted kernel the way a user builds it: the system compiler alone, then the C ABI.
#pragma once

#include <string>

#include "base/dtype.hpp"
#include "ir/expression.hpp"
#include "measure/operands.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

struct EmittedCheck {
  bool ok = false;
  std::string reason;    // why not, when !ok: the compiler's output, a missing symbol, a mismatch
  double max_error = 0;  // largest error relative to the reference's term magnitudes
  double compile_ms = 0;
};

// Compiles <dir>/<name>.cpp, written by EmitKernel, with `c++ -O3 -fopenmp` into a shared
// object, loads it, packs `tensor` through its COO entry point, computes with the same dense
// inputs `run` uses and compares every output value with the reference, at the tolerance of
// `run`'s verification.
EmittedCheck CheckEmittedKernel(const std::string& dir, const std::string& kernel,
                                const Expression& expression, const IndexSizes& sizes, DType dtype,
                                const CooTensor& tensor);

}  // namespace sparsetune
