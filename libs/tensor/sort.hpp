#pragma once

#include <cstdint>
#include <vector>

namespace sparsetune {

// Sorts 64-bit keys whose significant bits are the low `bits` bits: parallel LSD radix sort,
// one pass per byte, skipping passes where every key has the same digit.
void RadixSort(std::vector<uint64_t>& keys, int bits);

// The permutation that sorts n entries lexicographically by keys[0][e], keys[1][e], ...
// where keys[l][e] lies in [0, extents[l]). Stable; a radix sort on packed keys when they fit
// in 64 bits, a parallel comparison sort otherwise.
std::vector<int64_t> SortedPermutation(const std::vector<const int32_t*>& keys,
                                       const std::vector<int64_t>& extents, int64_t n);

}  // namespace sparsetune
