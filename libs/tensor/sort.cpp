#include "tensor/sort.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <utility>

#ifdef _OPENMP
#include <omp.h>

#include <parallel/algorithm>
#endif

#include "tensor/level_packer.hpp"  // packer::ForEachSlice

namespace sparsetune {

namespace {

int BitsFor(int64_t extent) {
  int bits = 0;
  while (bits < 63 && (int64_t(1) << bits) < extent) ++bits;
  return bits;
}

int Threads() {
#ifdef _OPENMP
  return std::max(1, omp_get_max_threads());
#else
  return 1;
#endif
}

// Stable LSD radix sort of `items` by key(item), whose significant bits are the low `bits`.
template <typename T, typename KeyOf>
void RadixSortBy(std::vector<T>& items, int bits, KeyOf key) {
  const int64_t n = static_cast<int64_t>(items.size());
  if (n <= (int64_t(1) << 14)) {
    std::stable_sort(items.begin(), items.end(),
                     [&](const T& a, const T& b) { return key(a) < key(b); });
    return;
  }
  const int threads = Threads();
  const int64_t per = (n + threads - 1) / threads;
  std::vector<T> tmp(n);
  std::vector<std::array<int64_t, 256>> hist(threads);
  for (int shift = 0; shift < bits; shift += 8) {
#pragma omp parallel num_threads(threads)
    packer::ForEachSlice(threads, [&](int t) {
      auto& h = hist[t];
      h.fill(0);
      const int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
      for (int64_t e = begin; e < end; ++e) ++h[(key(items[e]) >> shift) & 255];
    });
    // A pass where every key has the same digit changes nothing.
    bool trivial = false;
    for (int d = 0; d < 256 && !trivial; ++d) {
      int64_t total = 0;
      for (int t = 0; t < threads; ++t) total += hist[t][d];
      trivial = total == n;
    }
    if (trivial) continue;
    int64_t running = 0;
    for (int d = 0; d < 256; ++d) {
      for (int t = 0; t < threads; ++t) {
        const int64_t c = hist[t][d];
        hist[t][d] = running;
        running += c;
      }
    }
#pragma omp parallel num_threads(threads)
    packer::ForEachSlice(threads, [&](int t) {
      auto& offset = hist[t];
      const int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
      for (int64_t e = begin; e < end; ++e)
        tmp[offset[(key(items[e]) >> shift) & 255]++] = items[e];
    });
    items.swap(tmp);
  }
}

}  // namespace

void RadixSort(std::vector<uint64_t>& keys, int bits) {
  RadixSortBy(keys, bits, [](uint64_t k) { return k; });
}

void RadixSortPairs(std::vector<std::pair<uint64_t, double>>& items, int bits) {
  RadixSortBy(items, bits, [](const std::pair<uint64_t, double>& p) { return p.first; });
}

int CoordinateBits(int64_t extent) {
  return BitsFor(extent);
}

std::vector<int64_t> SortedPermutation(const std::vector<const int32_t*>& keys,
                                       const std::vector<int64_t>& extents, int64_t n) {
  std::vector<int> bits;
  int total_bits = 0;
  for (int64_t extent : extents) total_bits += bits.emplace_back(BitsFor(extent));

  std::vector<int64_t> perm(n);
  if (total_bits <= 64) {
    // Pack every coordinate into one 64-bit key.
    std::vector<std::pair<uint64_t, int64_t>> packed(n);
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < n; ++e) {
      uint64_t key = 0;
      for (size_t l = 0; l < keys.size(); ++l) {
        key = (bits[l] ? (key << bits[l]) : key) | uint64_t(keys[l][e]);
      }
      packed[e] = {key, e};
    }
    RadixSortBy(packed, total_bits, [](const std::pair<uint64_t, int64_t>& p) { return p.first; });
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < n; ++e) perm[e] = packed[e].second;
    return perm;
  }
  std::iota(perm.begin(), perm.end(), int64_t(0));
  auto less = [&](int64_t a, int64_t b) {
    for (const int32_t* k : keys) {
      if (k[a] != k[b]) return k[a] < k[b];
    }
    return a < b;
  };
#ifdef _OPENMP
  if (n > (1 << 16)) {
    __gnu_parallel::sort(perm.begin(), perm.end(), less);
    return perm;
  }
#endif
  std::sort(perm.begin(), perm.end(), less);
  return perm;
}

}  // namespace sparsetune
