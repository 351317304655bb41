#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <numeric>

#include "tensor/generate.hpp"
#include "tensor/generate_internal.hpp"
#include "tensor/sort.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sparsetune {
namespace gen {

KeyLayout::KeyLayout(std::vector<int64_t> d) : dims(std::move(d)) {
  shift.assign(dims.size(), 0);
  mask.assign(dims.size(), 0);
  int total = 0;
  for (size_t m = dims.size(); m-- > 0;) {
    const int b = BitsFor(dims[m]);
    shift[m] = total;
    mask[m] = (uint64_t(1) << b) - 1;
    total += b;
  }
  bits = total;
  fits = total <= 64;
}

void RadixSortUnique(std::vector<uint64_t>& keys, int bits) {
  RadixSort(keys, bits);
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
}

CooTensor TensorFromKeys(const KeyLayout& layout, const std::vector<uint64_t>& keys) {
  CooTensor t;
  t.dims = layout.dims;
  const int order = static_cast<int>(layout.dims.size());
  const int64_t n = static_cast<int64_t>(keys.size());
  t.coords.assign(order, std::vector<int32_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < n; ++e) {
    for (int m = 0; m < order; ++m) {
      t.coords[m][e] = static_cast<int32_t>((keys[e] >> layout.shift[m]) & layout.mask[m]);
    }
  }
  return t;
}

std::vector<uint64_t> ComplementKeys(const KeyLayout& layout,
                                     const std::vector<uint64_t>& excluded) {
  const int order = static_cast<int>(layout.dims.size());
  const int64_t total = Product(layout.dims);
  std::vector<uint64_t> keys;
  keys.reserve(total - int64_t(excluded.size()));
  std::vector<int32_t> c(order, 0);
  size_t next = 0;
  for (int64_t e = 0; e < total; ++e) {
    const uint64_t key = layout.Pack(c.data());
    while (next < excluded.size() && excluded[next] < key) ++next;
    if (next == excluded.size() || excluded[next] != key) keys.push_back(key);
    for (int m = order - 1; m >= 0; --m) {  // odometer, last mode fastest
      if (++c[m] < layout.dims[m]) break;
      c[m] = 0;
    }
  }
  return keys;
}

void FillValues(CooTensor& tensor, uint64_t seed, bool pattern) {
  const int64_t n = static_cast<int64_t>(tensor.coords.empty() ? 0 : tensor.coords[0].size());
  tensor.values.assign(n, 1.0);
  tensor.pattern_only = pattern;
  tensor.explicit_zeros = 0;
  tensor.duplicates_summed = 0;
  if (pattern) return;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    Rng rng(seed, kStreamValues, ch);
    const int64_t end = std::min(n, (ch + 1) * kChunk);
    for (int64_t e = ch * kChunk; e < end; ++e) tensor.values[e] = RandomValue(rng);
  }
}

std::vector<int32_t> RandomPermutation(int64_t n, uint64_t seed, uint64_t index) {
  std::vector<int32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(seed, kStreamPermutation, index);
  for (int64_t k = n - 1; k > 0; --k) std::swap(perm[k], perm[rng.Below(uint64_t(k) + 1)]);
  return perm;
}

void CheckDimension(int64_t value, const char* what) {
  if (value <= 0) {
    throw InputError(std::string(what) + " must be positive (got " + std::to_string(value) + ")");
  }
  if (value > kMaxDimension) {
    throw InputError(std::string(what) + " = " + std::to_string(value) +
                     " exceeds the largest dimension, 2147483647 (coordinates are 32-bit)");
  }
}

void CheckEntryBudget(double expected) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const double memory = pages > 0 && page > 0 ? double(pages) * double(page) : 16e9;
  // About 40 bytes per entry while generating (coordinates, keys, values, sort buffers).
  const double limit = std::min(2147483647.0, 0.5 * memory / 40.0);
  if (expected > limit) {
    throw InputError("the request would make about " + std::to_string(int64_t(expected)) +
                     " nonzeros, more than the " + std::to_string(int64_t(limit)) +
                     " this machine can generate and store (32-bit positions, memory)");
  }
}

void CheckFraction(double value, const char* what) {
  if (!(value > 0.0 && value <= 1.0)) {
    throw InputError(std::string(what) + " must lie in (0, 1] (got " + std::to_string(value) + ")");
  }
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (d <= 0) return 0;
    if (p > std::numeric_limits<int64_t>::max() / d) return std::numeric_limits<int64_t>::max();
    p *= d;
  }
  return p;
}

}  // namespace gen

int64_t ParseCount(const std::string& text, const std::string& what) {
  auto fail = [&]() -> InputError {
    return InputError(what + ": '" + text +
                      "' is not a count (a non-negative integer, optionally with a suffix k, M, "
                      "G or T, such as 2k or 1.5M)");
  };
  size_t pos = 0;
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  size_t end = text.size();
  while (end > pos && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  if (pos == end) throw fail();
  int64_t multiplier = 1;
  switch (text[end - 1]) {
    case 'k':
    case 'K':
      multiplier = 1000;
      break;
    case 'm':
    case 'M':
      multiplier = 1000000;
      break;
    case 'g':
    case 'G':
      multiplier = 1000000000;
      break;
    case 't':
    case 'T':
      multiplier = 1000000000000;
      break;
    default:
      break;
  }
  if (multiplier != 1) --end;
  // Integer and fraction digits as exact integers: "1.5M" is 15 * 10^6 / 10.
  unsigned __int128 mantissa = 0;
  int64_t scale = 1;
  bool digits = false, point = false;
  for (size_t k = pos; k < end; ++k) {
    const char ch = text[k];
    if (ch == '.' && !point) {
      point = true;
      continue;
    }
    if (ch == '_' || ch == '\'') continue;  // digit separators: 10_000_000
    if (ch < '0' || ch > '9') throw fail();
    digits = true;
    mantissa = mantissa * 10 + unsigned(ch - '0');
    if (point) scale *= 10;
    if (mantissa > (unsigned __int128)1 << 100 || scale > int64_t(1) << 50) throw fail();
  }
  if (!digits) throw fail();
  using U128 = unsigned __int128;
  const U128 value = mantissa * U128(multiplier);
  if (value % U128(scale) != 0) {
    throw InputError(what + ": '" + text + "' is not a whole number");
  }
  const U128 result = value / U128(scale);
  if (result > U128(std::numeric_limits<int64_t>::max())) {
    throw InputError(what + ": '" + text + "' is too large");
  }
  return static_cast<int64_t>(result);
}

std::vector<int64_t> ParseCountList(const std::string& text, const std::string& what) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find_first_of(",x", start);
    out.push_back(ParseCount(text.substr(start, comma - start), what));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace sparsetune
