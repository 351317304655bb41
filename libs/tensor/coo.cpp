#include "tensor/coo.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

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

void CooTensor::Reset(std::vector<int64_t> new_dims, int64_t capacity) {
  dims = std::move(new_dims);
  coords.assign(dims.size(), {});
  for (auto& c : coords) c.reserve(capacity);
  values.clear();
  values.reserve(capacity);
}

void CooTensor::Append(const int32_t* coordinate, double value) {
  for (size_t m = 0; m < coords.size(); ++m) coords[m].push_back(coordinate[m]);
  values.push_back(value);
}

bool CooTensor::IsCanonical() const {
  const int64_t n = nnz();
  for (int64_t e = 1; e < n; ++e) {
    int cmp = 0;
    for (int m = 0; m < order() && cmp == 0; ++m) {
      if (coords[m][e - 1] != coords[m][e]) cmp = coords[m][e - 1] < coords[m][e] ? -1 : 1;
    }
    if (cmp >= 0) return false;
  }
  return true;
}

void CooTensor::Canonicalize() {
  const int64_t n = nnz();
  if (n == 0 || IsCanonical()) return;
  std::vector<int64_t> extents(dims.begin(), dims.end());
  std::vector<const int32_t*> keys;
  for (auto& c : coords) keys.push_back(c.data());
  std::vector<int64_t> perm = SortedPermutation(keys, extents, n);

  std::vector<std::vector<int32_t>> new_coords(order());
  for (auto& c : new_coords) c.reserve(n);
  std::vector<double> new_values;
  new_values.reserve(n);
  int64_t merged = 0;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t e = perm[r];
    bool same = !new_values.empty();
    for (int m = 0; m < order() && same; ++m) same = new_coords[m].back() == coords[m][e];
    if (same) {
      new_values.back() += values[e];
      ++merged;
      continue;
    }
    for (int m = 0; m < order(); ++m) new_coords[m].push_back(coords[m][e]);
    new_values.push_back(values[e]);
  }
  coords = std::move(new_coords);
  values = std::move(new_values);
  duplicates_summed += merged;
}

}  // namespace sparsetune
