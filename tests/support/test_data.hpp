// Test inputs shared by the test areas: random canonical tensors and small real ones from the
// shared datasets, with a random stand-in when those are absent.
#pragma once

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "io/read.hpp"
#include "tensor/coo.hpp"

namespace sparsetune::testing {

// A random canonical tensor with uneven dims, nonzero values of both signs, duplicates summed
// and, unless `empty_rows` is false, every row whose index is 3 mod 7 left empty.
inline CooTensor RandomSparse(std::vector<int64_t> dims, int64_t entries, uint64_t seed,
                              bool empty_rows = true) {
  std::mt19937_64 rng(seed);
  CooTensor t;
  t.Reset(dims, entries);
  std::vector<int32_t> c(dims.size());
  for (int64_t e = 0; e < entries; ++e) {
    for (size_t m = 0; m < dims.size(); ++m) c[m] = int32_t(rng() % uint64_t(dims[m]));
    if (empty_rows && c[0] % 7 == 3) continue;
    t.Append(c.data(), double(int64_t(rng() % 17) - 8) / 8.0 + 0.0625);
  }
  t.Canonicalize();
  return t;
}

// An n x n band of ones: row i holds columns i - half_width ... i + half_width (within the
// matrix), in canonical order.
inline CooTensor Band(int32_t n, int32_t half_width) {
  CooTensor t;
  t.Reset({n, n});
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t k = std::max(0, i - half_width); k <= std::min(n - 1, i + half_width); ++k) {
      const int32_t c[2] = {i, k};
      t.Append(c, 1.0);
    }
  }
  return t;
}

// The path of a file under the shared folder, or "" when it is not there.
inline std::string SharedPath(const std::string& relative) {
  const std::string path = std::string(SPARSETUNE_SHARED_DIR) + "/" + relative;
  return std::filesystem::exists(path) ? path : std::string();
}

// A small real sparse operand of the given order (a matrix or a 3-tensor), or a random one of
// similar shape without the shared datasets.
inline CooTensor SmallWorkload(int order) {
  const std::string real = SharedPath(order == 2 ? "datasets/matrices/bcsstk01.mtx"
                                                 : "datasets/tensors/parti_3D_12031.tns");
  if (!real.empty()) return ReadTensorFile(real);
  return order == 2 ? RandomSparse({45, 38}, 300, 5) : RandomSparse({20, 17, 23}, 600, 6);
}

}  // namespace sparsetune::testing
