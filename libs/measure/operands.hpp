#pragma once

#include <complex>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/bulk_allocator.hpp"
#include "base/dtype.hpp"
#include "ir/expression.hpp"

namespace sparsetune {

// A value array in the kernel's element type; the reference reads it as double (exactly).
// Complex elements are (real, imaginary) pairs of the real type.
class ValueBuffer {
 public:
  ValueBuffer() = default;
  ValueBuffer(DType dtype, int64_t size);
  DType dtype() const { return dtype_; }
  int64_t size() const { return size_; }
  void* data() {
    return single() ? static_cast<void*>(f32_.data()) : static_cast<void*>(f64_.data());
  }
  const void* data() const {
    return single() ? static_cast<const void*>(f32_.data()) : static_cast<const void*>(f64_.data());
  }
  // Element k (its real part when complex).
  double Get(int64_t k) const { return Part(k * parts_); }
  // Sets element k (to a real value when complex).
  void Set(int64_t k, double v) { SetComplex(k, v); }
  std::complex<double> GetComplex(int64_t k) const {
    return parts_ == 1 ? std::complex<double>(Part(k))
                       : std::complex<double>(Part(2 * k), Part(2 * k + 1));
  }
  void SetComplex(int64_t k, std::complex<double> v) {
    SetPart(k * parts_, v.real());
    if (parts_ == 2) SetPart(2 * k + 1, v.imag());
  }
  void Fill(double v);

 private:
  bool single() const { return RealPart(dtype_) == DType::kF32; }
  double Part(int64_t q) const { return single() ? double(f32_[q]) : f64_[q]; }
  void SetPart(int64_t q, double v) {
    if (single())
      f32_[q] = float(v);
    else
      f64_[q] = v;
  }

  DType dtype_ = DType::kF32;
  int64_t size_ = 0;
  int parts_ = 1;  // 2 for complex elements
  // Cache-line aligned, as a user's own dense operands would be (Eigen's, PyTorch's).
  BulkVector<float> f32_;
  BulkVector<double> f64_;
};

using IndexSizes = std::map<std::string, int64_t>;

// Elements of a tensor of the expression at the given index sizes.
int64_t TensorElements(const TensorInfo& tensor, const IndexSizes& sizes);

// Deterministic, never-constant, never-zero values in [-1, 1) with 2^-10 resolution (exact in
// f32), seeded by the tensor's name: the same operands on every run and machine. Complex
// elements take two of them.
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
