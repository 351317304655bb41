#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace sparsetune {

// Sorts 64-bit keys whose significant bits are the low `bits` bits: parallel LSD radix sort,
// one pass per byte, skipping passes where every key has the same digit.
void RadixSort(std::vector<uint64_t>& keys, int bits);

// Sorts (key, value) pairs by key the same way; stable, so equal keys keep their order.
void RadixSortPairs(std::vector<std::pair<uint64_t, double>>& items, int bits);

// Bits needed for coordinates in [0, extent).
int CoordinateBits(int64_t extent);

// The permutation that sorts n entries lexicographically by keys[0][e], keys[1][e], ...
// where keys[l][e] lies in [0, extents[l]). Stable; a radix sort on packed keys when they fit
// in 64 bits, a parallel comparison sort otherwise.
std::vector<int64_t> SortedPermutation(const std::vector<const int32_t*>& keys,
                                       const std::vector<int64_t>& extents, int64_t n);

}  // namespace sparsetune
