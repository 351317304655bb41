// Checks an emitted kernel the way a user builds it: the system compiler alone, then the C ABI.
#pragma once

#include <memory>
#include <string>
#include <vector>

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
  // Packing the entries given in canonical order (as from CSR) through the C ABI: what a
  // caller's preparation costs, ordering included.
  double pack_in_order_ms = 0;
  bool wide_coordinates = false;  // the operand needed the 32-bit variant of the kernel
};

// <dir>/<name>.cpp, written by EmitKernel, compiled with `c++ -O3 -fopenmp` into a shared
// object and loaded, once for any number of checks.
class CompiledEmittedKernel {
 public:
  // `compiler_arguments` go after the source: libraries the kernel needs (a kernel ordered by
  // partition or community links libsparsetune_orderings).
  CompiledEmittedKernel(const std::string& dir, const std::string& kernel,
                        const std::vector<std::string>& compiler_arguments = {});
  ~CompiledEmittedKernel();
  CompiledEmittedKernel(const CompiledEmittedKernel&) = delete;
  CompiledEmittedKernel& operator=(const CompiledEmittedKernel&) = delete;

  // Empty when compiled and loaded, else why not.
  const std::string& failure() const { return failure_; }
  double compile_ms() const { return compile_ms_; }

  // Packs `tensor` through the COO entry point, its entries shuffled as a user may give them,
  // computes at the dense sizes of `sizes` (any, not only those emitted) with the dense inputs
  // `run` uses, and compares every output value with the reference at `run`'s tolerance; packs
  // it again from its entries in canonical order (as from CSR) and compares again. Then
  // gives the operand other values with update_values and compares again, once through the
  // default entry point and once in the tuned order (inputs converted, compute_tuned_order, the
  // output converted back).
  EmittedCheck Check(const Expression& expression, const IndexSizes& sizes, DType dtype,
                     const CooTensor& tensor) const;

  // The address of the kernel's function <name><suffix> ("_threads"), null when absent.
  void* Symbol(const std::string& suffix) const;

 private:
  std::string name_;
  std::string failure_;
  double compile_ms_ = 0;
  void* handle_ = nullptr;
};

// Compiles the kernel and checks `tensor` once (CompiledEmittedKernel::Check).
EmittedCheck CheckEmittedKernel(const std::string& dir, const std::string& kernel,
                                const Expression& expression, const IndexSizes& sizes, DType dtype,
                                const CooTensor& tensor,
                                const std::vector<std::string>& compiler_arguments = {});

}  // namespace sparsetune
