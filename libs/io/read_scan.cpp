#include "io/read_scan.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "tensor/coo.hpp"

namespace sparsetune::io_internal {

namespace {

std::string_view TokenAt(const char* p, const char* end) {
  const char* q = p;
  while (!AtTokenEnd(q, end)) ++q;
  return {p, static_cast<size_t>(q - p)};
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsDigit);
}

}  // namespace

std::string DescribeToken(const char* p, const char* end) {
  const std::string_view token = TokenAt(p, end);
  constexpr size_t kShown = 40;
  std::string out = "'";
  for (size_t i = 0; i < token.size() && i < kShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (token.size() > kShown) out += "...";
  return out + "'";
}

int64_t CountLines(std::string_view text) {
  if (text.empty()) return 0;
  const int64_t newlines = std::count(text.begin(), text.end(), '\n');
  return newlines + (text.back() == '\n' ? 0 : 1);
}

void Fail(const std::string& name, int64_t line, const std::string& cause) {
  throw InputError(name, line, cause);
}

void FailIndex(const char* token, const char* end, int64_t dim, const char* what,
               const std::string& name, int64_t line) {
  if (AtLineEnd(token, end)) Fail(name, line, std::string("missing ") + what);
  const std::string_view t = TokenAt(token, end);
  const std::string range = " is out of range 1.." + std::to_string(dim);
  if (AllDigits(t)) {
    const size_t first = std::min(t.find_first_not_of('0'), t.size());
    if (first == t.size()) {
      Fail(name, line, std::string(what) + " 0" + range + " (indices are 1-based)");
    }
    Fail(name, line, std::string(what) + " " + std::string(t.substr(first)) + range);
  }
  if (t.size() > 1 && t[0] == '-' && AllDigits(t.substr(1))) {
    Fail(name, line, std::string(what) + " " + std::string(t) + range);
  }
  Fail(name, line, std::string(what) + " " + DescribeToken(token, end) + " is not an integer");
}

void FailReal(const char* token, const char* end, const char* what, const std::string& name,
              int64_t line) {
  if (AtLineEnd(token, end)) Fail(name, line, std::string("missing ") + what);
  const std::string_view t = TokenAt(token, end);
  const char* s = t.data();
  const char* e = t.data() + t.size();
  if (s < e && *s == '+') ++s;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s, e, v);
  if (ec == std::errc() && ptr == e && !std::isfinite(v)) {
    Fail(name, line,
         std::string(what) + " " + DescribeToken(token, end) + " is not a finite number");
  }
  Fail(name, line, std::string(what) + " " + DescribeToken(token, end) + " is not a number");
}

void FailInteger(const char* token, const char* end, const char* what, const std::string& name,
                 int64_t line) {
  if (AtLineEnd(token, end)) Fail(name, line, std::string("missing ") + what);
  std::string_view t = TokenAt(token, end);
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) t.remove_prefix(1);
  if (AllDigits(t)) {
    Fail(name, line, std::string(what) + " " + DescribeToken(token, end) + " is out of range");
  }
  Fail(name, line, std::string(what) + " " + DescribeToken(token, end) + " is not an integer");
}

double SlowReal(const char*& p, const char* end, const char* what, const std::string& name,
                int64_t line) {
  // from_chars reports both overflow and underflow as out of range; strtod tells them apart.
  const std::string_view t = TokenAt(p, end);
  const std::string copy(t);
  char* stop = nullptr;
  errno = 0;
  const double v = std::strtod(copy.c_str(), &stop);
  if (stop != copy.c_str() + copy.size()) FailReal(p, end, what, name, line);
  if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) > 1.0)) {
    Fail(name, line, std::string(what) + " " + DescribeToken(p, end) + " is out of range");
  }
  p += t.size();
  return v;
}

namespace {

constexpr uint64_t kPow10Int[] = {1ull,
                                  10ull,
                                  100ull,
                                  1000ull,
                                  10000ull,
                                  100000ull,
                                  1000000ull,
                                  10000000ull,
                                  100000000ull,
                                  1000000000ull,
                                  10000000000ull,
                                  100000000000ull,
                                  1000000000000ull,
                                  10000000000000ull,
                                  100000000000000ull,
                                  1000000000000000ull,
                                  10000000000000000ull,
                                  100000000000000000ull,
                                  1000000000000000000ull,
                                  10000000000000000000ull};

int BitLength(uint64_t x) {
  return 64 - __builtin_clzll(x);
}

// 2^e for -1022 <= e <= 1023, built from its bits.
double PowerOfTwo(int e) {
  const uint64_t bits = static_cast<uint64_t>(1023 + e) << 52;
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// Rounds m * 2^shift to the nearest double, where m has 63 or 64 significant bits and
// `sticky` says whether nonzero bits were cut off below m. The sticky bit sits far below
// the rounding position, so the one hardware conversion rounds as the exact value would.
double RoundScaled(uint64_t m, bool sticky, int shift) {
  return static_cast<double>(m | static_cast<uint64_t>(sticky)) * PowerOfTwo(shift);
}

}  // namespace

bool ParseDecimalSlowPath(uint64_t w, int exponent, double* value) {
  using u128 = unsigned __int128;
  if (exponent >= 0 && exponent <= 19) {
    const u128 product = static_cast<u128>(w) * kPow10Int[exponent];
    const uint64_t high = static_cast<uint64_t>(product >> 64);
    if (high == 0) {
      *value = static_cast<double>(static_cast<uint64_t>(product));  // correctly rounded
      return true;
    }
    const int cut = BitLength(high);  // bits beyond the low 64
    const uint64_t top = static_cast<uint64_t>(product >> cut);
    const bool sticky = (product & ((static_cast<u128>(1) << cut) - 1)) != 0;
    *value = RoundScaled(top, sticky, cut);
    return true;
  }
  if (exponent < 0 && exponent >= -19) {
    // w / 10^k: shift w left so that the quotient has 63 or 64 bits, then round once.
    const uint64_t divisor = kPow10Int[-exponent];
    const int shift = 63 + BitLength(divisor) - BitLength(w);
    const u128 numerator = static_cast<u128>(w) << shift;
    const u128 quotient = numerator / divisor;
    const bool sticky = numerator - quotient * divisor != 0;
    *value = RoundScaled(static_cast<uint64_t>(quotient), sticky, -shift);
    return true;
  }
  return false;
}

std::vector<std::string_view> SplitAtLines(const char* begin, const char* end, int parts) {
  std::vector<std::string_view> chunks;
  const char* start = begin;
  const size_t size = static_cast<size_t>(end - begin);
  for (int k = 1; k <= parts; ++k) {
    const char* cut = end;
    if (k < parts) {
      cut = std::max(start, begin + size / static_cast<size_t>(parts) * static_cast<size_t>(k));
      if (cut < end) cut = NextLine(cut, end);
    }
    chunks.emplace_back(start, static_cast<size_t>(cut - start));
    start = cut;
  }
  return chunks;
}

int ChooseThreads(size_t bytes, int threads, size_t min_chunk_bytes) {
  int n = threads;
  if (n <= 0) n = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8);
  const size_t by_size = bytes / std::max<size_t>(min_chunk_bytes, 1);
  return static_cast<int>(std::clamp<size_t>(by_size, 1, static_cast<size_t>(n)));
}

std::vector<std::exception_ptr> RunTasks(int n, const std::function<void(int)>& task) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  auto run = [&](int k) {
    try {
      task(k);
    } catch (...) {
      errors[static_cast<size_t>(k)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  int next = 1;
  for (; next < n; ++next) {
    try {
      threads.emplace_back(run, next);
    } catch (const std::system_error&) {
      break;  // no more threads available: run the rest here
    }
  }
  run(0);
  for (int k = next; k < n; ++k) run(k);
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace sparsetune::io_internal
