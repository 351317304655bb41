// The kernels a user would otherwise call or write, on the same operands as sparsetune's own
// kernels, for `sparsetune bench`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/expression.hpp"
#include "measure/operands.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

class Jit;

// What every contender computes on: the sparse operand (with its values), the dense inputs by
// tensor id in the layout the kernel names, the index sizes and the thread count.
struct BaselineOperands {
  std::string kernel;  // spmv, spmm, sddmm or sddmm_nt
  const Expression* expression = nullptr;
  const CooTensor* sparse = nullptr;
  const std::vector<ValueBuffer>* inputs = nullptr;
  IndexSizes sizes;
  DType dtype = DType::kF32;
  int threads = 1;
  // Compiles Eigen and the textbook kernels with the generated kernels' flags; null: a Jit
  // with the default cache.
  Jit* jit = nullptr;
};

// One contender's kernel. Prepare() converts the operands into the library's structures (its
// time is reported apart, as `prepare_ms`; any transposition the call needs is not done
// there); Call() computes once; Output() is the result in the reference's layout (dense
// row-major, or for a sparse output its values in canonical entry order). A library whose call
// accumulates into its output (GraphBLAS's C += A*B) has that output zeroed by Prepare(), so
// that the first Call() gives the result.
class Baseline {
 public:
  virtual ~Baseline() = default;
  virtual std::string name() const = 0;
  // "library" for a library call, "hand" for a textbook kernel.
  virtual std::string kind() const { return "library"; }
  virtual void Prepare() = 0;
  virtual void Call() = 0;
  virtual ValueBuffer Output() = 0;
  double prepare_ms = 0;
  // What runs: the library and its version ("SuiteSparse:GraphBLAS 7.4.0"), the call or path
  // taken, and how it was built: for code compiled by sparsetune's JIT the compiler and its
  // flags, for a prebuilt library the shared object it was loaded from. Set by Prepare().
  std::string version;
  std::string method;
  std::string flags;
};

// The contenders that have this kernel, each only where it supports the value type:
//   eigen         Eigen's sparse times dense (spmv, spmm), JIT-compiled with the kernels' flags
//   hand          textbook CSR kernels (all four), JIT-compiled with the kernels' flags, one
//                 range of rows a thread, equal in nonzeros
//   hand_dynamic  the same kernels with OpenMP's dynamic schedule over chunks of rows
//   librsb, librsb_tuned   librsb plain and after rsb_tune_spmm (spmv, spmm)
//   graphblas     SuiteSparse:GraphBLAS: w += A*u, C += A*B into full outputs, SDDMM as the
//                 masked dot product C<A> = B*C' times A (all four)
//   pytorch       LibTorch (all four)
std::vector<std::unique_ptr<Baseline>> MakeBaselines(const BaselineOperands& operands);

// Kernels some baseline implements: spmv, spmm, sddmm, sddmm_nt.
bool HasBaselines(const std::string& kernel);

// The peak fused multiply-add rate of this machine on `threads` threads for one value type,
// measured by a probe compiled with the generated kernels' flags (independent FMA chains in
// registers of the native vector width).
struct FlopProbe {
  double gflops = 0;  // an FMA counts two
  std::string isa;    // avx512, avx2-fma or sse2
  int lanes = 0;      // values per vector
};
FlopProbe MeasureFlopRate(Jit& jit, DType dtype, int threads);

}  // namespace sparsetune
