#pragma once

// The hand-written scanner shared by the Matrix Market and FROSTT parsers: token readers over
// a memory buffer that either return a value or throw InputError naming the file and line, and
// the helpers that split a buffer into line-aligned chunks parsed on separate threads.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/errors.hpp"

namespace sparsetune::io_internal {

inline bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
inline bool IsDigit(char c) {
  return static_cast<unsigned>(c - '0') < 10u;
}
inline bool AtLineEnd(const char* p, const char* end) {
  return p == end || *p == '\n';
}
inline bool AtTokenEnd(const char* p, const char* end) {
  return p == end || *p == '\n' || IsBlank(*p);
}
inline const char* SkipBlanks(const char* p, const char* end) {
  while (p < end && IsBlank(*p)) ++p;
  return p;
}
// The start of the next line (just past the '\n'), or `end`.
inline const char* NextLine(const char* p, const char* end) {
  const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
  return nl ? static_cast<const char*>(nl) + 1 : end;
}

// The token starting at p, quoted and with unprintable bytes escaped, for messages.
std::string DescribeToken(const char* p, const char* end);

// Number of lines in `text` (a last line without '\n' counts); at least 1 when not empty.
int64_t CountLines(std::string_view text);

[[noreturn]] void Fail(const std::string& name, int64_t line, const std::string& cause);

// Cold paths of the readers below: classify a bad token and throw.
[[noreturn]] void FailIndex(const char* token, const char* end, int64_t dim, const char* what,
                            const std::string& name, int64_t line);
[[noreturn]] void FailReal(const char* token, const char* end, const char* what,
                           const std::string& name, int64_t line);
[[noreturn]] void FailInteger(const char* token, const char* end, const char* what,
                              const std::string& name, int64_t line);
double SlowReal(const char*& p, const char* end, const char* what, const std::string& name,
                int64_t line);

// Exact decimal-to-double conversion for the common shapes of numbers: at most 19 significant
// digits and a decimal exponent within +-19 (+-22 when the digits fit in 53 bits). Writes the
// value and the end of the number and returns true, or returns false, leaving other shapes
// (and malformed text) to std::from_chars. Integer arithmetic plus one correctly rounded
// conversion keep the result identical to from_chars, which is several times slower.
bool ParseDecimalSlowPath(uint64_t digits, int exponent, double* value);

// Eight bytes at p with the first one lowest, as the digit tricks below expect.
inline uint64_t LoadEight(const char* p) {
  uint64_t chunk;
  std::memcpy(&chunk, p, sizeof chunk);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  chunk = __builtin_bswap64(chunk);
#endif
  return chunk;
}

// Eight ASCII digits (loaded by LoadEight) as a number.
inline uint64_t EightDigits(uint64_t chunk) {
  chunk -= 0x3030303030303030ull;
  chunk = (chunk * 10) + (chunk >> 8);  // pairs
  return (((chunk & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
          (((chunk >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >>
         32;
}
inline bool IsEightDigits(uint64_t chunk) {
  return (((chunk & 0xF0F0F0F0F0F0F0F0ull) |
           (((chunk + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ==
          0x3333333333333333ull);
}

inline bool ParseDecimalFast(const char* p, const char* end, const char** stop, double* value) {
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  uint64_t w = 0;
  int significant = 0;  // digits in w, which has no leading zeros, so w < 10^19
  int exponent = 0;
  const char* int_start = p;
  while (p < end && *p == '0') ++p;
  for (; p < end && IsDigit(*p); ++p) {
    if (significant == 19) return false;
    w = w * 10 + static_cast<unsigned>(*p - '0');
    ++significant;
  }
  bool any = p > int_start;
  if (p < end && *p == '.') {
    const char* frac_start = ++p;
    if (significant == 0) {
      while (p < end && *p == '0') ++p;
      if (p - frac_start > 30000) return false;
      exponent -= static_cast<int>(p - frac_start);
    }
    // Eight digits at a time while they fit: values often carry 16 or 17 digits.
    while (end - p >= 8 && significant <= 11) {
      const uint64_t chunk = LoadEight(p);
      if (!IsEightDigits(chunk)) break;
      w = w * 100000000 + EightDigits(chunk);
      significant += 8;
      exponent -= 8;
      p += 8;
    }
    for (; p < end && IsDigit(*p); ++p) {
      if (significant == 19) return false;
      w = w * 10 + static_cast<unsigned>(*p - '0');
      ++significant;
      --exponent;
    }
    any = any || p > frac_start;
  }
  if (!any) return false;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    const bool exponent_negative = p < end && *p == '-';
    if (p < end && (*p == '-' || *p == '+')) ++p;
    if (p == end || !IsDigit(*p)) return false;
    int e = 0;
    for (; p < end && IsDigit(*p); ++p) {
      if (e > 10000) return false;
      e = e * 10 + (*p - '0');
    }
    exponent += exponent_negative ? -e : e;
  }
  if (!AtTokenEnd(p, end)) return false;
  double v = 0;
  if (w != 0) {
    static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (w <= (uint64_t(1) << 53) && exponent >= -22 && exponent <= 22) {
      // Both operands are exact doubles, so one IEEE operation rounds correctly.
      v = static_cast<double>(w);
      v = exponent < 0 ? v / kPow10[-exponent] : v * kPow10[exponent];
    } else if (!ParseDecimalSlowPath(w, exponent, &v)) {
      return false;
    }
  }
  *value = negative ? -v : v;
  *stop = p;
  return true;
}

// How many of the eight bytes (loaded by LoadEight) are digits before the first non-digit.
inline int LeadingDigits(uint64_t chunk) {
  // A byte is a digit when its high nibble is 3 and adding 6 keeps it so. Carries only leave
  // non-digit bytes, and only upwards, so the first non-digit is found correctly.
  const uint64_t not_digit =
      ((chunk & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
      (((chunk + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull);
  return not_digit == 0 ? 8 : __builtin_ctzll(not_digit) / 8;
}

// Reads a 1-based index in [1, dim] (dim <= kMaxDimension) and returns it 0-based.
inline int32_t ReadIndex(const char*& p, const char* end, int64_t dim, const char* what,
                         const std::string& name, int64_t line) {
  const char* start = p;
  if (end - p >= 8) {
    // Up to seven digits at once; the index is then followed by a byte within the chunk.
    const uint64_t chunk = LoadEight(p);
    const int n = LeadingDigits(chunk);
    if (n > 0 && n < 8) {
      const int pad = 8 * (8 - n);
      const uint64_t v = EightDigits((chunk << pad) | (0x3030303030303030ull >> (8 * n)));
      p += n;
      if (AtTokenEnd(p, end) && v >= 1 && v <= static_cast<uint64_t>(dim)) {
        return static_cast<int32_t>(v - 1);
      }
      FailIndex(start, end, dim, what, name, line);
    }
  }
  if (p < end && IsDigit(*p)) {
    uint64_t v = 0;
    // 18 digits cannot overflow; longer tokens go to the cold path.
    const char* limit = end - p > 18 ? p + 18 : end;
    do {
      v = v * 10 + static_cast<unsigned>(*p - '0');
      ++p;
    } while (p < limit && IsDigit(*p));
    if (AtTokenEnd(p, end) && v >= 1 && v <= static_cast<uint64_t>(dim)) {
      return static_cast<int32_t>(v - 1);
    }
  }
  FailIndex(start, end, dim, what, name, line);
}

// Reads a finite real number (an optional '+' is allowed); underflow reads as zero.
inline double ReadReal(const char*& p, const char* end, const char* what, const std::string& name,
                       int64_t line) {
  const char* start = p;
  const char* s = p;
  if (s < end && *s == '+') {
    ++s;
    if (s < end && *s == '-') FailReal(start, end, what, name, line);
  }
  double v = 0;
  const char* stop = nullptr;
  if (ParseDecimalFast(s, end, &stop, &v)) {
    p = stop;
    return v;
  }
  const auto [ptr, ec] = std::from_chars(s, end, v);
  if (ec == std::errc() && AtTokenEnd(ptr, end) && std::isfinite(v)) {
    p = ptr;
    return v;
  }
  if (ec == std::errc::result_out_of_range) return SlowReal(p, end, what, name, line);
  FailReal(start, end, what, name, line);
}

// Reads a decimal integer (optional sign) that fits in int64.
inline int64_t ReadInteger(const char*& p, const char* end, const char* what,
                           const std::string& name, int64_t line) {
  const char* start = p;
  const char* s = p;
  if (s < end && *s == '+') ++s;
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s, end, v);
  if (ec == std::errc() && AtTokenEnd(ptr, end) && (s == p || *s != '-')) {
    p = ptr;
    return v;
  }
  FailInteger(start, end, what, name, line);
}

// Splits [begin, end) into `parts` pieces that start at line starts (some may be empty).
std::vector<std::string_view> SplitAtLines(const char* begin, const char* end, int parts);

// How many threads to use for `bytes` of text: options.threads (0: the machine's, up to 8),
// fewer when the chunks would be smaller than min_chunk_bytes.
int ChooseThreads(size_t bytes, int threads, size_t min_chunk_bytes);

// Runs task(k) for k in [0, n) (task 0 on the calling thread) and returns each task's
// exception, if any.
std::vector<std::exception_ptr> RunTasks(int n, const std::function<void(int)>& task);

}  // namespace sparsetune::io_internal
