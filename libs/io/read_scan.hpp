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

// Reads a 1-based index in [1, dim] (dim <= kMaxDimension) and returns it 0-based.
inline int32_t ReadIndex(const char*& p, const char* end, int64_t dim, const char* what,
                         const std::string& name, int64_t line) {
  const char* start = p;
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
  if (s < end && *s == '+') ++s;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s, end, v);
  if (ec == std::errc() && AtTokenEnd(ptr, end) && std::isfinite(v) && (s == p || *s != '-')) {
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
