#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "io/read_scan.hpp"

namespace sparsetune::io_internal {
namespace {

uint64_t Bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// The fast decimal parser must agree with std::from_chars bit for bit wherever it answers.
void ExpectSameAsFromChars(const std::string& text, int64_t* answered) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  double fast = 0;
  const char* stop = nullptr;
  if (!ParseDecimalFast(begin, end, &stop, &fast)) return;
  ++*answered;
  double reference = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, reference);
  ASSERT_EQ(ec, std::errc()) << text;
  ASSERT_EQ(ptr, stop) << text;
  ASSERT_EQ(Bits(fast), Bits(reference)) << text << " fast " << fast << " reference " << reference;
}

TEST(ParseDecimalFast, AgreesWithFromCharsOnPrintedDoubles) {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> power(-30, 30);
  int64_t answered = 0;
  char buffer[64];
  for (int i = 0; i < 200000; ++i) {
    const double v = unit(rng) * std::pow(10.0, power(rng));
    const char* formats[] = {"%.17g", "%.16e", "%.15g", "%.6g", "%.3f", "%.20f"};
    for (const char* format : formats) {
      std::snprintf(buffer, sizeof buffer, format, v);
      ExpectSameAsFromChars(buffer, &answered);
    }
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
    ExpectSameAsFromChars(std::string(buffer, r.ptr), &answered);
  }
  EXPECT_GT(answered, 700000);
}

TEST(ParseDecimalFast, AgreesWithFromCharsOnRandomDigitStrings) {
  std::mt19937_64 rng(7);
  int64_t answered = 0;
  for (int i = 0; i < 300000; ++i) {
    std::string s;
    if (rng() % 2) s += '-';
    const int int_digits = static_cast<int>(rng() % 22);
    for (int d = 0; d < int_digits; ++d) s += static_cast<char>('0' + rng() % 10);
    if (rng() % 2) {
      s += '.';
      const int frac_digits = static_cast<int>(rng() % 22);
      for (int d = 0; d < frac_digits; ++d)
        s += static_cast<char>('0' + (rng() % 3 ? rng() % 10 : 9));
    }
    if (rng() % 3 == 0) {
      s += rng() % 2 ? 'e' : 'E';
      if (rng() % 2) s += rng() % 2 ? '-' : '+';
      s += std::to_string(rng() % 40);
    }
    ExpectSameAsFromChars(s, &answered);
  }
  EXPECT_GT(answered, 100000);
}

TEST(ParseDecimalFast, EdgeCases) {
  int64_t answered = 0;
  for (const char* s : {"0",
                        "-0",
                        "0.0",
                        "-0.0e5",
                        "1",
                        "1.",
                        ".5",
                        "9007199254740993",
                        "9007199254740992",
                        "18446744073709551615",
                        "9999999999999999999",
                        "1e19",
                        "1e-19",
                        "4.9406564584124654e-17",
                        "0.1",
                        "0.30000000000000004",
                        "123456789012345678e-19",
                        "1234567890123456789e19",
                        "0.000000000000000000000000000001",
                        "2.2250738585072014e-308"}) {
    ExpectSameAsFromChars(s, &answered);
  }
  EXPECT_GT(answered, 15);
  double v = 0;
  const char* stop = nullptr;
  for (const char* s : {"", "-", ".", "e5", "1e", "1e+", "1.5x", "nan", "inf", "1,5", "--1"}) {
    EXPECT_FALSE(ParseDecimalFast(s, s + std::strlen(s), &stop, &v)) << s;
  }
}

}  // namespace
}  // namespace sparsetune::io_internal
