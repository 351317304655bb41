#pragma once

// Building blocks shared by the generators (not part of the public API).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "tensor/coo.hpp"

namespace sparsetune::gen {

inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Independent random streams, one per purpose.
enum Stream : uint64_t {
  kStreamPattern = 1,
  kStreamValues = 2,
  kStreamPermutation = 3,
  kStreamLayout = 4,
  kStreamRowImportance = 5,
  kStreamColImportance = 6,
};

// SplitMix64. Its state is one word, so a fresh stream per (seed, purpose, chunk) costs
// nothing and chunks can be generated in parallel with a result that does not depend on the
// number of threads.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream, uint64_t index = 0)
      : state_(Mix64(Mix64(seed ^ 0x243f6a8885a308d3ULL) + Mix64(stream * 0x9e3779b97f4a7c15ULL) +
                     index * 0xd1b54a32d192ed03ULL)) {}

  uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return Mix64(state_);
  }
  // Uniform in [0, n) by Lemire's multiply-shift; the bias (n / 2^64) is negligible here.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  // Uniform in [0, 1) with 53 random bits.
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1]: safe to take the logarithm of.
  double OpenUnit() { return static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53; }
  // Standard normal by Box-Muller (one of the pair).
  double Normal() {
    const double r = std::sqrt(-2.0 * std::log(OpenUnit()));
    return r * std::cos(6.283185307179586 * Unit());
  }

 private:
  uint64_t state_;
};

// The entry value: a multiple of 1e-7 in [-1, 1), never 0.
inline double RandomValue(Rng& rng) {
  int64_t k = static_cast<int64_t>(rng.Below(19999999)) - 10000000;
  if (k >= 0) ++k;
  return static_cast<double>(k) / 1e7;
}

// Bits needed for coordinates in [0, extent).
inline int BitsFor(int64_t extent) {
  int bits = 0;
  while (bits < 63 && (int64_t(1) << bits) < extent) ++bits;
  return bits;
}

// Coordinates packed into one 64-bit key, mode 0 in the high bits, so sorting keys sorts
// entries canonically.
struct KeyLayout {
  std::vector<int64_t> dims;
  std::vector<int> shift;
  std::vector<uint64_t> mask;
  int bits = 0;
  bool fits = true;  // false when the bits of all modes exceed 64

  explicit KeyLayout(std::vector<int64_t> d);
  uint64_t Pack(const int32_t* c) const {
    uint64_t key = 0;
    for (size_t m = 0; m < dims.size(); ++m) key |= uint64_t(c[m]) << shift[m];
    return key;
  }
  void Unpack(uint64_t key, int32_t* c) const {
    for (size_t m = 0; m < dims.size(); ++m)
      c[m] = static_cast<int32_t>((key >> shift[m]) & mask[m]);
  }
};

// Sorts and removes duplicates; keys use their low `bits` bits. Parallel LSD radix sort.
void RadixSortUnique(std::vector<uint64_t>& keys, int bits);

// A canonical tensor holding the entries of sorted, distinct keys; values are left empty.
CooTensor TensorFromKeys(const KeyLayout& layout, const std::vector<uint64_t>& keys);

// Every key of the layout's index space that is not in the sorted `excluded`, in order.
std::vector<uint64_t> ComplementKeys(const KeyLayout& layout,
                                     const std::vector<uint64_t>& excluded);

// Gives the tensor its values: RandomValue from the value stream, or 1 with `pattern`.
void FillValues(CooTensor& tensor, uint64_t seed, bool pattern);

constexpr int64_t kChunk = int64_t(1) << 16;

// Knuth's selection sampling: exactly `take` of [0, n) in increasing order.
template <typename Emit>
void SelectSorted(Rng& rng, int64_t n, int64_t take, Emit emit) {
  for (int64_t k = 0; k < n && take > 0; ++k) {
    if (int64_t(rng.Below(uint64_t(n - k))) < take) {
      emit(k);
      --take;
    }
  }
}

// Draws `count` distinct keys from `draw(Rng&, int32_t* coordinate)` in rounds, each round
// sorted and merged into the distinct set, until count is reached or `max_draws` draws were
// made. A round draws what is missing divided by the previous round's yield of new keys, so
// skewed distributions with many repeats need few rounds; when a round overshoots, a random
// subset of its new keys is kept. For uniform draws the result is a uniform count-subset.
template <typename Draw>
std::vector<uint64_t> SampleDistinctKeys(const KeyLayout& layout, int64_t count, uint64_t seed,
                                         Draw draw, int64_t max_draws = INT64_MAX) {
  std::vector<uint64_t> keys;
  int64_t drawn = 0;
  double yield = 1.0;  // share of the last round's draws that were new keys
  for (uint64_t round = 0; int64_t(keys.size()) < count && drawn < max_draws; ++round) {
    const int64_t missing = count - int64_t(keys.size());
    const double wanted = std::min(double(missing) / std::max(yield, 0.05), 4.0 * double(missing));
    const int64_t need =
        std::min<int64_t>(max_draws - drawn, round == 0 ? missing : int64_t(wanted * 1.02) + 64);
    std::vector<uint64_t> batch(need);
    const int64_t chunks = (need + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      Rng rng(seed, kStreamPattern, (round << 40) + uint64_t(ch));
      int32_t c[16];
      const int64_t end = std::min(need, (ch + 1) * kChunk);
      for (int64_t e = ch * kChunk; e < end; ++e) {
        draw(rng, c);
        batch[e] = layout.Pack(c);
      }
    }
    drawn += need;
    RadixSortUnique(batch, layout.bits);
    if (!keys.empty()) {
      std::vector<uint64_t> fresh;
      fresh.reserve(batch.size());
      std::set_difference(batch.begin(), batch.end(), keys.begin(), keys.end(),
                          std::back_inserter(fresh));
      batch = std::move(fresh);
    }
    yield = double(batch.size()) / double(std::max<int64_t>(need, 1));
    if (int64_t(batch.size()) > missing) {
      Rng rng(seed, kStreamPattern, (round << 40) + (uint64_t(1) << 39));
      std::vector<uint64_t> kept;
      kept.reserve(missing);
      SelectSorted(rng, int64_t(batch.size()), missing,
                   [&](int64_t k) { kept.push_back(batch[k]); });
      batch = std::move(kept);
    }
    if (keys.empty()) {
      keys = std::move(batch);
      continue;
    }
    std::vector<uint64_t> merged(keys.size() + batch.size());
    std::merge(keys.begin(), keys.end(), batch.begin(), batch.end(), merged.begin());
    keys = std::move(merged);
  }
  return keys;
}

// The same for index spaces wider than 64 bits (high-order tensors with huge dims): rounds
// of draws canonicalized through CooTensor.
template <typename Draw>
CooTensor SampleDistinctWide(const std::vector<int64_t>& dims, int64_t count, uint64_t seed,
                             Draw draw, int64_t max_draws = INT64_MAX) {
  CooTensor t;
  t.Reset(dims, count);
  int64_t drawn = 0;
  int32_t c[16];
  for (uint64_t round = 0; t.nnz() < count && drawn < max_draws; ++round) {
    const int64_t need = std::min<int64_t>(count - t.nnz(), max_draws - drawn);
    for (int64_t ch = 0; ch * kChunk < need; ++ch) {
      Rng rng(seed, kStreamPattern, (round << 40) + uint64_t(ch));
      const int64_t end = std::min(need, (ch + 1) * kChunk);
      for (int64_t e = ch * kChunk; e < end; ++e) {
        draw(rng, c);
        t.Append(c, 0.0);
      }
    }
    drawn += need;
    t.Canonicalize();
  }
  t.duplicates_summed = 0;
  return t;
}

// Entries produced independently per unit (a row, a block row), gathered in unit order.
struct Part {
  std::vector<int32_t> rows, cols;
  void Add(int64_t i, int64_t j) {
    rows.push_back(static_cast<int32_t>(i));
    cols.push_back(static_cast<int32_t>(j));
  }
};

// Runs produce(unit_begin, unit_end, Part&) over chunks of units in parallel and
// concatenates the parts into a matrix; produce must emit entries in canonical order.
template <typename Produce>
CooTensor BuildByUnits(int64_t rows, int64_t cols, int64_t units, int64_t units_per_chunk,
                       Produce produce) {
  const int64_t chunks = (units + units_per_chunk - 1) / units_per_chunk;
  std::vector<Part> parts(chunks);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    produce(ch * units_per_chunk, std::min(units, (ch + 1) * units_per_chunk), parts[ch]);
  }
  std::vector<int64_t> offset(chunks + 1, 0);
  for (int64_t ch = 0; ch < chunks; ++ch) offset[ch + 1] = offset[ch] + parts[ch].rows.size();
  CooTensor t;
  t.dims = {rows, cols};
  t.coords.assign(2, std::vector<int32_t>(offset[chunks]));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    std::copy(parts[ch].rows.begin(), parts[ch].rows.end(), t.coords[0].begin() + offset[ch]);
    std::copy(parts[ch].cols.begin(), parts[ch].cols.end(), t.coords[1].begin() + offset[ch]);
    Part().rows.swap(parts[ch].rows);
    Part().cols.swap(parts[ch].cols);
  }
  return t;
}

// Calls emit(k) for each k in [begin, end) independently with probability p: a comparison
// per position when p is large, geometric skips (cost proportional to the hits) when small.
template <typename Emit>
void BernoulliRange(Rng& rng, int64_t begin, int64_t end, double p, Emit emit) {
  if (p >= 1.0) {
    for (int64_t k = begin; k < end; ++k) emit(k);
  } else if (p >= 0.25) {
    const uint64_t threshold = static_cast<uint64_t>(std::ldexp(p, 64));
    for (int64_t k = begin; k < end; ++k) {
      if (rng.Next() < threshold) emit(k);
    }
  } else if (p > 0) {
    const double inv_log_q = 1.0 / std::log1p(-p);
    for (int64_t k = begin;;) {
      const double skip = std::floor(std::log(rng.OpenUnit()) * inv_log_q);
      if (skip >= double(end - k)) break;
      k += static_cast<int64_t>(skip);
      emit(k);
      ++k;
    }
  }
}

// A random permutation of [0, n) (Fisher-Yates).
std::vector<int32_t> RandomPermutation(int64_t n, uint64_t seed, uint64_t index);

// Argument checks shared by the generators; each throws InputError naming `what`.
void CheckDimension(int64_t value, const char* what);
void CheckFraction(double value, const char* what);  // in (0, 1]
// Refuses a request whose expected entry count cannot be stored: positions are 32-bit, and
// the entries must fit comfortably in this machine's memory.
void CheckEntryBudget(double expected_entries);
int64_t Product(const std::vector<int64_t>& dims);  // saturates at INT64_MAX

}  // namespace sparsetune::gen
