#include "tensor/sort.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#ifdef _OPENMP
#include <parallel/algorithm>
#endif

namespace sparsetune {

namespace {
int BitsFor(int64_t extent) {
  int bits = 0;
  while (bits < 63 && (int64_t(1) << bits) < extent) ++bits;
  return bits;
}

template <typename It, typename Cmp>
void ParallelSort(It first, It last, Cmp cmp) {
#ifdef _OPENMP
  if (last - first > (1 << 16)) {
    __gnu_parallel::stable_sort(first, last, cmp);
    return;
  }
#endif
  std::stable_sort(first, last, cmp);
}
}  // namespace

std::vector<int64_t> SortedPermutation(const std::vector<const int32_t*>& keys,
                                       const std::vector<int64_t>& extents, int64_t n) {
  std::vector<int> bits;
  int total_bits = 0;
  for (int64_t extent : extents) total_bits += bits.emplace_back(BitsFor(extent));

  std::vector<int64_t> perm(n);
  if (total_bits <= 64) {
    // Pack every coordinate into one 64-bit key: one comparison per pair.
    std::vector<std::pair<uint64_t, int64_t>> packed(n);
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < n; ++e) {
      uint64_t key = 0;
      for (size_t l = 0; l < keys.size(); ++l) {
        key = (bits[l] ? (key << bits[l]) : key) | uint64_t(keys[l][e]);
      }
      packed[e] = {key, e};
    }
    ParallelSort(packed.begin(), packed.end(),
                 [](const auto& a, const auto& b) { return a.first < b.first; });
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < n; ++e) perm[e] = packed[e].second;
    return perm;
  }
  std::iota(perm.begin(), perm.end(), int64_t(0));
  ParallelSort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    for (const int32_t* k : keys) {
      if (k[a] != k[b]) return k[a] < k[b];
    }
    return false;
  });
  return perm;
}

}  // namespace sparsetune
