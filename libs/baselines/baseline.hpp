// The library kernels a user would otherwise call, on the same operands as sparsetune's own
// kernels, for `sparsetune bench`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/expression.hpp"
#include "measure/operands.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

// What every contender computes on: the sparse operand (with its values), the dense inputs by
// tensor id, the index sizes and the thread count.
struct BaselineOperands {
  std::string kernel;  // spmv, spmm or sddmm
  const Expression* expression = nullptr;
  const CooTensor* sparse = nullptr;
  const std::vector<ValueBuffer>* inputs = nullptr;
  IndexSizes sizes;
  DType dtype = DType::kF32;
  int threads = 1;
};

// One library's kernel. Prepare() converts the operand into the library's structure (its time
// is reported apart, as `prepare_ms`); Call() computes once; Output() is the result in the
// reference's layout (dense row-major, or for a sparse output its values in canonical entry
// order).
class Baseline {
 public:
  virtual ~Baseline() = default;
  virtual std::string name() const = 0;
  virtual void Prepare() = 0;
  virtual void Call() = 0;
  virtual ValueBuffer Output() = 0;
  double prepare_ms = 0;
};

// The libraries that have this kernel: Eigen (spmv, spmm), librsb plain and after its own
// tuning (spmv, spmm), SuiteSparse:GraphBLAS (spmv, spmm, sddmm as a masked product).
std::vector<std::unique_ptr<Baseline>> MakeBaselines(const BaselineOperands& operands);

// Kernels some library implements.
bool HasBaselines(const std::string& kernel);

}  // namespace sparsetune
