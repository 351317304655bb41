#pragma once

#include <cstdint>
#include <vector>

namespace sparsetune {

// The permutation that sorts n entries lexicographically by keys[0][e], keys[1][e], ...
// where keys[l][e] lies in [0, extents[l]). Stable; parallel when OpenMP is available.
std::vector<int64_t> SortedPermutation(const std::vector<const int32_t*>& keys,
                                       const std::vector<int64_t>& extents, int64_t n);

}  // namespace sparsetune
