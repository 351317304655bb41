#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "io/read.hpp"
#include "io/read_internal.hpp"
#include "io_test_util.hpp"

namespace sparsetune {
namespace {

using testing::Entries;
using testing::Entry;

io_internal::ParseOptions Threads(int threads) {
  io_internal::ParseOptions options;
  options.threads = threads;
  options.min_chunk_bytes = 1;
  return options;
}

void ExpectError(const std::string& text, int64_t line, const std::string& cause) {
  for (int threads : {1, 2, 5}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    try {
      io_internal::ParseTns(text, "in.tns", Threads(threads));
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "in.tns");
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_NE(e.cause().find(cause), std::string::npos) << e.what();
    }
  }
}

TEST(Tns, ThirdOrderWithDimensionsFromTheLargestIndex) {
  const CooTensor t = ParseTns("1 2 3 1.5\n4 1 1 -2\n2 2 7 3e2\n", "a.tns");
  EXPECT_EQ(t.order(), 3);
  EXPECT_EQ(t.dims, (std::vector<int64_t>{4, 2, 7}));
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 1, 2}, 1.5}, {{1, 1, 6}, 300}, {{3, 0, 0}, -2}}));
  EXPECT_TRUE(t.IsCanonical());
  EXPECT_EQ(t.symmetry, Symmetry::kGeneral);
  EXPECT_FALSE(t.pattern_only);
}

TEST(Tns, AnyOrder) {
  const CooTensor one = ParseTns("3 1\n1 2\n", "a.tns");
  EXPECT_EQ(one.dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(Entries(one), (std::vector<Entry>{{{0}, 2}, {{2}, 1}}));
  const CooTensor five = ParseTns("1 2 3 4 5 0.5\n", "a.tns");
  EXPECT_EQ(five.dims, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(Entries(five), (std::vector<Entry>{{{0, 1, 2, 3, 4}, 0.5}}));
}

TEST(Tns, CommentsBlankLinesTabsAndCrlf) {
  const CooTensor t =
      ParseTns("# header\r\n\r\n  # indented\r\n1\t1 1\t2\r\n \r\n2 2 2 3 \r\n# end", "a.tns");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0, 0}, 2}, {{1, 1, 1}, 3}}));
}

TEST(Tns, DuplicatesAreSummedAndZerosCounted) {
  const CooTensor t = ParseTns("1 1 1 1\n2 2 2 0\n1 1 1 2\n", "a.tns");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0, 0}, 3}, {{1, 1, 1}, 0}}));
  EXPECT_EQ(t.duplicates_summed, 1);
  EXPECT_EQ(t.explicit_zeros, 1);
}

TEST(Tns, MalformedInputsNameTheLineAndTheCause) {
  ExpectError("", 0, "empty file");
  ExpectError("# only\n\n", 2, "no entries");
  ExpectError("5\n", 1, "at least one index and a value");
  ExpectError("1 1 1 1\n2 2 2\n", 2, "the line has 3 fields, but the first entry (line 1) has 4");
  ExpectError("# c\n1 1 1 1\n2 2 2 2 2\n", 3,
              "the line has 5 fields, but the first entry (line 2)");
  ExpectError("1 1 1 1\n2 2 2 2 # note\n", 2, "the line has 6 fields");
  ExpectError("1 1 1 1\n0 1 1 1\n", 2, "mode-1 index 0 is out of range");
  ExpectError("1 1 1 1\n1 1 -4 1\n", 2, "mode-3 index -4 is out of range");
  ExpectError("1 1 1 1\n1 2147483648 1 1\n", 2, "mode-2 index 2147483648 is out of range");
  ExpectError("1 1 1 1\n1 x 1 1\n", 2, "mode-2 index 'x' is not an integer");
  ExpectError("1 1 1 1\n1 1 1 y\n", 2, "value 'y' is not a number");
  ExpectError("1 1 1 1\n1 1 1 nan\n", 2, "not a finite number");
  ExpectError(std::string("1 1 1 1\n1 1 \0 1\n", 16), 2, "binary data");
  ExpectError("11111111111111111111111 1\n", 1,
              "mode-1 index 11111111111111111111111 is out of range");
  std::string wide;
  for (int i = 0; i < 40; ++i) wide += "1 ";
  ExpectError(wide + "1\n", 1, "order 40 is above the supported");
}

TEST(Tns, LargestIndex) {
  const CooTensor t = ParseTns("2147483647 1 1\n", "a.tns");
  EXPECT_EQ(t.dims, (std::vector<int64_t>{kMaxDimension, 1}));
}

std::string RandomTns(int entries, unsigned seed) {
  std::mt19937 rng(seed);
  std::string text = "# random\n";
  for (int e = 0; e < entries; ++e) {
    if (rng() % 17 == 0) text += "# comment\n";
    if (rng() % 13 == 0) text += "\n";
    for (int m = 0; m < 4; ++m) text += std::to_string(rng() % 50 + 1) + " ";
    text += std::to_string(static_cast<int>(rng() % 100) - 50) + ".25\n";
  }
  return text;
}

TEST(Tns, ChunkedParsingMatchesSequential) {
  const std::string text = RandomTns(20000, 5);
  const CooTensor one = io_internal::ParseTns(text, "r.tns", Threads(1));
  for (int threads : {2, 3, 8}) {
    auto options = Threads(threads);
    options.min_chunk_bytes = 2048;
    const CooTensor many = io_internal::ParseTns(text, "r.tns", options);
    EXPECT_EQ(many.dims, one.dims);
    EXPECT_EQ(Entries(many), Entries(one));
    EXPECT_EQ(many.duplicates_summed, one.duplicates_summed);
  }
}

TEST(Tns, ChunkedParsingReportsTheFirstBadLineOfTheFile) {
  std::string text = RandomTns(20000, 9);
  const size_t pos = text.find('\n', text.size() * 2 / 3) + 1;
  const int64_t line = std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n') + 1;
  text.insert(pos, "1 2 3\n");
  ExpectError(text, line, "the line has 3 fields, but the first entry (line 2) has 5");
}

}  // namespace
}  // namespace sparsetune
