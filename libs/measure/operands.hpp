#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/bulk_allocator.hpp"
#include "base/dtype.hpp"
#include "ir/expression.hpp"

namespace sparsetune {

// A value array in the kernel's element type; the reference reads it as double (exactly).
class ValueBuffer {
 public:
  ValueBuffer() = default;
  ValueBuffer(DType dtype, int64_t size);
  DType dtype() const { return dtype_; }
  int64_t size() const { return size_; }
  void* data() {
    return dtype_ == DType::kF32 ? static_cast<void*>(f32_.data())
                                 : static_cast<void*>(f64_.data());
  }
  const void* data() const {
    return dtype_ == DType::kF32 ? static_cast<const void*>(f32_.data())
                                 : static_cast<const void*>(f64_.data());
  }
  double Get(int64_t k) const { return dtype_ == DType::kF32 ? double(f32_[k]) : f64_[k]; }
  void Set(int64_t k, double v) {
    if (dtype_ == DType::kF32)
      f32_[k] = float(v);
    else
      f64_[k] = v;
  }
  void Fill(double v);

 private:
  DType dtype_ = DType::kF32;
  int64_t size_ = 0;
  // Cache-line aligned, as a user's own dense operands would be (Eigen's, PyTorch's).
  BulkVector<float> f32_;
  BulkVector<double> f64_;
};

using IndexSizes = std::map<std::string, int64_t>;

// Elements of a tensor of the expression at the given index sizes.
int64_t TensorElements(const TensorInfo& tensor, const IndexSizes& sizes);

// Deterministic, never-constant, never-zero values in [-1, 1) with 2^-10 resolution (exact in
// f32), seeded by the tensor's name: the same operands on every run and machine.
void FillDeterministic(ValueBuffer& buffer, const std::string& seed_name);

// The dense inputs of an expression, by tensor id (empty buffers for the output and the sparse
// operand). Throws InputError when they would not fit in memory.
std::vector<ValueBuffer> MakeDenseInputs(const Expression& expression, const IndexSizes& sizes,
                                         DType dtype);

// Bytes of physical memory; used to refuse operands that cannot fit.
int64_t PhysicalMemoryBytes();
// Bytes this process can still allocate without swapping: MemoryAvailableToProcess (the
// system's MemAvailable, less under an address-space or cgroup limit).
int64_t AvailableMemoryBytes();

}  // namespace sparsetune
