#include "tensor/coo.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "tensor/level_packer.hpp"
#include "tensor/sort.hpp"

namespace sparsetune {

const char* SymmetryName(Symmetry symmetry) {
  switch (symmetry) {
    case Symmetry::kGeneral:
      return "general";
    case Symmetry::kSymmetric:
      return "symmetric";
    case Symmetry::kSkewSymmetric:
      return "skew-symmetric";
    case Symmetry::kHermitian:
      return "hermitian";
  }
  return "general";
}

std::string ValuesLeftOut(const CooTensor& tensor, DType dtype) {
  if (!tensor.is_complex() || IsComplex(dtype)) return "";
  return std::string("complex values: ") + DTypeName(dtype) +
         " kernels use the real parts (--dtype c64 or c128 computes with complex values)";
}

int64_t FirstDifferingValue(const CooTensor& tensor, bool complex) {
  const int64_t n = tensor.nnz();
  for (int64_t e = 1; e < n; ++e) {
    if (tensor.values[e] != tensor.values[0]) return e;
    if (complex && tensor.Imag(e) != tensor.Imag(0)) return e;
  }
  return -1;
}

void CooTensor::Reset(std::vector<int64_t> new_dims, int64_t capacity) {
  dims = std::move(new_dims);
  coords.assign(dims.size(), {});
  for (auto& c : coords) c.reserve(capacity);
  values.clear();
  values.reserve(capacity);
  imag.clear();
}

void CooTensor::Append(const int32_t* coordinate, double value) {
  for (size_t m = 0; m < coords.size(); ++m) coords[m].push_back(coordinate[m]);
  values.push_back(value);
  if (!imag.empty()) imag.push_back(0.0);
}

void CooTensor::AppendComplex(const int32_t* coordinate, double real, double imaginary) {
  if (imag.size() < values.size()) imag.resize(values.size(), 0.0);
  for (size_t m = 0; m < coords.size(); ++m) coords[m].push_back(coordinate[m]);
  values.push_back(real);
  imag.push_back(imaginary);
}

bool CooTensor::IsCanonical() const {
  // The packer's check, which emitted kernels run on their callers' entries.
  std::vector<const int32_t*> modes;
  for (const auto& mode : coords) modes.push_back(mode.data());
  return packer::InCanonicalOrder(order(), nnz(), modes.data());
}

void CooTensor::Canonicalize() {
  const int64_t n = nnz();
  if (n == 0 || IsCanonical()) return;
  const int order_ = order();
  const bool complex = is_complex();
  std::vector<int> bits(order_);
  int total_bits = 0;
  for (int m = 0; m < order_; ++m) total_bits += bits[m] = CoordinateBits(dims[m]);

  std::vector<std::vector<int32_t>> new_coords(order_);
  std::vector<double> new_values, new_imag;
  new_values.reserve(n);
  if (complex) new_imag.reserve(n);
  for (auto& c : new_coords) c.reserve(n);
  int64_t merged = 0;
  auto append = [&](const int32_t* c, double value, double imaginary) {
    bool same = !new_values.empty();
    for (int m = 0; m < order_ && same; ++m) same = new_coords[m].back() == c[m];
    if (same) {
      new_values.back() += value;
      if (complex) new_imag.back() += imaginary;
      ++merged;
      return;
    }
    for (int m = 0; m < order_; ++m) new_coords[m].push_back(c[m]);
    new_values.push_back(value);
    if (complex) new_imag.push_back(imaginary);
  };

  if (total_bits <= 64 && !complex) {
    // Sort the entries themselves as (packed coordinates, value): no random gathers afterwards.
    std::vector<std::pair<uint64_t, double>> items(n);
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < n; ++e) {
      uint64_t key = 0;
      for (int m = 0; m < order_; ++m)
        key = (bits[m] ? key << bits[m] : key) | uint64_t(coords[m][e]);
      items[e] = {key, values[e]};
    }
    coords.clear();
    values.clear();
    RadixSortPairs(items, total_bits);
    std::vector<int32_t> c(order_);
    for (const auto& [key, value] : items) {
      uint64_t rest = key;
      for (int m = order_ - 1; m >= 0; --m) {
        c[m] = static_cast<int32_t>(bits[m] ? rest & ((uint64_t(1) << bits[m]) - 1) : 0);
        rest = bits[m] ? rest >> bits[m] : rest;
      }
      append(c.data(), value, 0.0);
    }
  } else {
    std::vector<const int32_t*> keys;
    for (auto& c : coords) keys.push_back(c.data());
    std::vector<int64_t> perm =
        SortedPermutation(keys, std::vector<int64_t>(dims.begin(), dims.end()), n);
    std::vector<int32_t> c(order_);
    for (int64_t r = 0; r < n; ++r) {
      for (int m = 0; m < order_; ++m) c[m] = coords[m][perm[r]];
      append(c.data(), values[perm[r]], complex ? imag[perm[r]] : 0.0);
    }
  }
  coords = std::move(new_coords);
  values = std::move(new_values);
  imag = std::move(new_imag);
  duplicates_summed += merged;
}

}  // namespace sparsetune
