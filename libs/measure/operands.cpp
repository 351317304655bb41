#include "measure/operands.hpp"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <string>

#include "base/errors.hpp"
#include "base/hash.hpp"
#include "base/memory.hpp"

namespace sparsetune {

ValueBuffer::ValueBuffer(DType dtype, int64_t size)
    : dtype_(dtype), size_(size), parts_(IsComplex(dtype) ? 2 : 1) {
  if (single())
    f32_.assign(size * parts_, 0.0f);
  else
    f64_.assign(size * parts_, 0.0);
}

void ValueBuffer::Fill(double v) {
  for (int64_t k = 0; k < size_; ++k) Set(k, v);
}

int64_t TensorElements(const TensorInfo& tensor, const IndexSizes& sizes) {
  double elements = 1;
  int64_t exact = 1;
  for (const auto& index : tensor.indices) {
    elements *= double(sizes.at(index));
    exact *= sizes.at(index);
  }
  if (elements > 9e18)
    throw InputError("tensor " + tensor.name + " would have more than 2^63 elements");
  return exact;
}

void FillDeterministic(ValueBuffer& buffer, const std::string& seed_name) {
  StableHasher h;
  h.UpdateString(seed_name);
  uint64_t state = h.Digest64();
  auto next = [&state] {
    // splitmix64 stream
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double(int64_t(z % 2047)) - 1023.0 + 0.5) / 1024.0;
  };
  const bool complex = IsComplex(buffer.dtype());
  for (int64_t k = 0; k < buffer.size(); ++k) {
    const double re = next();
    buffer.SetComplex(k, complex ? std::complex<double>(re, next()) : std::complex<double>(re));
  }
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? int64_t(pages) * int64_t(page) : (int64_t(1) << 34);
}

int64_t AvailableMemoryBytes() {
  return MemoryAvailableToProcess();
}

std::vector<ValueBuffer> MakeDenseInputs(const Expression& e, const IndexSizes& sizes,
                                         DType dtype) {
  double bytes = 0;
  for (size_t t = 0; t < e.tensors.size(); ++t) {
    if (static_cast<int>(t) == e.sparse) continue;
    double elements = 1;
    for (const auto& index : e.tensors[t].indices) elements *= double(sizes.at(index));
    if (t == 0 && e.sparse_output_prefix > 0) continue;
    bytes += elements * double(DTypeSize(dtype));
  }
  const double limit = 0.6 * double(PhysicalMemoryBytes());
  if (bytes > limit) {
    throw InputError(
        "the dense operands and output would need " + std::to_string(int64_t(bytes / 1e6)) +
        " MB, more than 60% of this machine's memory (" +
        std::to_string(int64_t(limit / 0.6 / 1e6)) + " MB); use smaller --dense sizes");
  }
  std::vector<ValueBuffer> inputs(e.tensors.size());
  for (size_t t = 1; t < e.tensors.size(); ++t) {
    if (static_cast<int>(t) == e.sparse) continue;
    inputs[t] = ValueBuffer(dtype, TensorElements(e.tensors[t], sizes));
    FillDeterministic(inputs[t], e.tensors[t].name);
  }
  return inputs;
}

}  // namespace sparsetune
