#pragma once

#include <filesystem>
#include <random>
#include <string>

#include "tensor/coo.hpp"

namespace sparsetune::testing {

// A random canonical tensor with a few empty rows and uneven dims.
inline CooTensor RandomSparse(std::vector<int64_t> dims, int64_t entries, uint64_t seed) {
  std::mt19937_64 rng(seed);
  CooTensor t;
  t.Reset(dims, entries);
  std::vector<int32_t> c(dims.size());
  for (int64_t e = 0; e < entries; ++e) {
    for (size_t m = 0; m < dims.size(); ++m) c[m] = int32_t(rng() % uint64_t(dims[m]));
    if (c[0] % 7 == 3) continue;  // leave some rows empty
    t.Append(c.data(), double(int64_t(rng() % 17) - 8) / 8.0 + 0.0625);
  }
  t.Canonicalize();
  return t;
}

inline std::string SharedPath(const std::string& relative) {
  const std::string path = std::string(SPARSETUNE_SHARED_DIR) + "/" + relative;
  return std::filesystem::exists(path) ? path : std::string();
}

}  // namespace sparsetune::testing
