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

const std::string kHeader = "%%MatrixMarket matrix coordinate real general\n";

io_internal::ParseOptions Threads(int threads) {
  io_internal::ParseOptions options;
  options.threads = threads;
  options.min_chunk_bytes = 1;  // split even tiny inputs
  return options;
}

// Expects an InputError naming in.mtx, `line` and a cause containing `cause`, from the
// sequential parser and from the chunked one alike.
void ExpectError(const std::string& text, int64_t line, const std::string& cause) {
  for (int threads : {1, 2, 3, 7}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    try {
      io_internal::ParseMatrixMarket(text, "in.mtx", nullptr, Threads(threads));
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "in.mtx");
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_NE(e.cause().find(cause), std::string::npos) << e.what();
    }
  }
}

TEST(MatrixMarket, RealGeneralIsCanonical) {
  const CooTensor t = ParseMatrixMarket(kHeader + "3 4 3\n3 1 -2.5\n1 4 1e3\n1 2 0.125\n", "a.mtx");
  EXPECT_EQ(t.dims, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 1}, 0.125}, {{0, 3}, 1000}, {{2, 0}, -2.5}}));
  EXPECT_TRUE(t.IsCanonical());
  EXPECT_EQ(t.symmetry, Symmetry::kGeneral);
  EXPECT_FALSE(t.pattern_only);
  EXPECT_EQ(t.duplicates_summed, 0);
  EXPECT_EQ(t.explicit_zeros, 0);
}

TEST(MatrixMarket, CommentsBlankLinesTabsAndCrlf) {
  const std::string text =
      "%%MatrixMarket matrix coordinate real general\r\n"
      "% a comment\r\n"
      "\r\n"
      "   \t\r\n"
      "%another\r\n"
      "  2\t2  2 \r\n"
      "% between entries\r\n"
      "\r\n"
      "1\t1\t+1.5\r\n"
      "  2 2 -.5e1  \r\n"
      "\r\n";
  const CooTensor t = ParseMatrixMarket(text, "crlf.mtx");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0}, 1.5}, {{1, 1}, -5}}));
}

TEST(MatrixMarket, LastLineWithoutNewline) {
  const CooTensor t = ParseMatrixMarket(kHeader + "2 2 1\n2 1 7", "a.mtx");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{1, 0}, 7}}));
}

TEST(MatrixMarket, BannerIsCaseInsensitiveAndMayFollowAByteOrderMark) {
  const CooTensor t = ParseMatrixMarket(
      "\xEF\xBB\xBF%%matrixmarket MATRIX Coordinate Real General\n1 1 1\n1 1 2\n", "a.mtx");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0}, 2}}));
}

TEST(MatrixMarket, IntegerField) {
  const CooTensor t = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 -7\n2 2 +9\n", "a.mtx");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0}, -7}, {{1, 1}, 9}}));
}

TEST(MatrixMarket, PatternFieldHasUnitValues) {
  const CooTensor t = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 3\n2 1\n", "a.mtx");
  EXPECT_TRUE(t.pattern_only);
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 2}, 1}, {{1, 0}, 1}}));
}

TEST(MatrixMarket, ComplexKeepsBothParts) {
  std::vector<std::string> warnings;
  const CooTensor t = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate complex general\n2 2 4\n1 1 1.5 -2\n2 1 0 3\n2 2 -4 0\n"
      "1 2 0 0\n",
      "c.mtx", &warnings);
  EXPECT_EQ(Entries(t),
            (std::vector<Entry>{{{0, 0}, 1.5}, {{0, 1}, 0}, {{1, 0}, 0}, {{1, 1}, -4}}));
  ASSERT_TRUE(t.is_complex());
  EXPECT_EQ(t.imag, (std::vector<double>{-2, 0, 3, 0}));
  EXPECT_EQ(t.explicit_zeros, 1);  // only the entry whose both parts are zero
  EXPECT_TRUE(warnings.empty());
  // Complex values are computed with as such by complex kernels; real ones say what they drop.
  EXPECT_EQ(ValuesLeftOut(t, DType::kC64), "");
  EXPECT_NE(ValuesLeftOut(t, DType::kF32).find("f32 kernels use the real parts"),
            std::string::npos);
}

TEST(MatrixMarket, RealFilesGiveNoWarning) {
  std::vector<std::string> warnings;
  ParseMatrixMarket(kHeader + "1 1 1\n1 1 1\n", "a.mtx", &warnings);
  EXPECT_TRUE(warnings.empty());
}

TEST(MatrixMarket, SymmetricMirrorsOffDiagonalEntriesOnly) {
  const CooTensor t = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 4\n2 1 -1\n3 2 5\n", "s.mtx");
  EXPECT_EQ(t.symmetry, Symmetry::kSymmetric);
  EXPECT_EQ(Entries(t), (std::vector<Entry>{
                            {{0, 0}, 4}, {{0, 1}, -1}, {{1, 0}, -1}, {{1, 2}, 5}, {{2, 1}, 5}}));
}

TEST(MatrixMarket, SymmetricPattern) {
  const CooTensor t = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n1 1\n2 1\n", "s.mtx");
  EXPECT_EQ(t.nnz(), 3);
  EXPECT_TRUE(t.pattern_only);
}

TEST(MatrixMarket, SkewSymmetricNegatesTheMirror) {
  const CooTensor t = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 3\n3 1 -2\n", "k.mtx");
  EXPECT_EQ(t.symmetry, Symmetry::kSkewSymmetric);
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 1}, -3}, {{0, 2}, 2}, {{1, 0}, 3}, {{2, 0}, -2}}));
}

TEST(MatrixMarket, HermitianMirrorsTheConjugate) {
  const CooTensor t = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 2 0\n2 1 1.5 -3\n", "h.mtx");
  EXPECT_EQ(t.symmetry, Symmetry::kHermitian);
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0}, 2}, {{0, 1}, 1.5}, {{1, 0}, 1.5}}));
  EXPECT_EQ(t.imag, (std::vector<double>{0, 3, -3}));
}

TEST(MatrixMarket, ComplexSymmetricAndSkewSymmetricMirrors) {
  const CooTensor s = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate complex symmetric\n2 2 1\n2 1 1 -3\n", "s.mtx");
  EXPECT_EQ(s.imag, (std::vector<double>{-3, -3}));
  const CooTensor k = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate complex skew-symmetric\n2 2 1\n2 1 1 -3\n", "k.mtx");
  EXPECT_EQ(Entries(k), (std::vector<Entry>{{{0, 1}, -1}, {{1, 0}, 1}}));
  EXPECT_EQ(k.imag, (std::vector<double>{3, -3}));
}

TEST(MatrixMarket, UpperTriangleEntriesOfASymmetricFileAreMirroredAndSummed) {
  const CooTensor t = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 1\n1 2 2\n", "s.mtx");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 1}, 3}, {{1, 0}, 3}}));
  EXPECT_EQ(t.duplicates_summed, 2);
}

TEST(MatrixMarket, ExplicitZerosAreKeptAndCounted) {
  const CooTensor t = ParseMatrixMarket(kHeader + "2 2 3\n1 1 0\n2 2 0.0\n1 2 -0\n", "z.mtx");
  EXPECT_EQ(t.nnz(), 3);
  EXPECT_EQ(t.explicit_zeros, 3);
}

TEST(MatrixMarket, UnderflowReadsAsZero) {
  const CooTensor t = ParseMatrixMarket(kHeader + "1 1 1\n1 1 1e-400\n", "u.mtx");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0}, 0}}));
  EXPECT_EQ(t.explicit_zeros, 1);
}

TEST(MatrixMarket, DuplicatesAreSummedAndCounted) {
  const CooTensor t = ParseMatrixMarket(kHeader + "2 2 4\n1 1 1\n2 2 5\n1 1 2\n1 1 3\n", "d.mtx");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0}, 6}, {{1, 1}, 5}}));
  EXPECT_EQ(t.duplicates_summed, 2);
}

TEST(MatrixMarket, EmptyMatrices) {
  for (const std::string size : {"3 4 0\n", "0 0 0\n", "0 5 0"}) {
    const CooTensor t = ParseMatrixMarket(kHeader + size, "e.mtx");
    EXPECT_EQ(t.nnz(), 0);
    EXPECT_EQ(t.order(), 2);
  }
  const CooTensor t = ParseMatrixMarket(kHeader + "3 4 0\n% nothing\n\n", "e.mtx");
  EXPECT_EQ(t.dims, (std::vector<int64_t>{3, 4}));
}

TEST(MatrixMarket, OneByOne) {
  const CooTensor t = ParseMatrixMarket(kHeader + "1 1 1\n1 1 3.25\n", "one.mtx");
  EXPECT_EQ(t.dims, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0}, 3.25}}));
}

TEST(MatrixMarket, LargestDimension) {
  const CooTensor t =
      ParseMatrixMarket(kHeader + "2147483647 2147483647 1\n2147483647 1 1\n", "big.mtx");
  EXPECT_EQ(t.dims[0], kMaxDimension);
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{2147483646, 0}, 1}}));
}

TEST(MatrixMarket, ArrayGeneralIsColumnMajorAndSkipsZeros) {
  const CooTensor t = ParseMatrixMarket(
      "%%MatrixMarket matrix array real general\n% c\n2 3\n1\n0\n3\n4\n\n0.0\n6\n", "a.mtx");
  EXPECT_EQ(t.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0}, 1}, {{0, 1}, 3}, {{1, 1}, 4}, {{1, 2}, 6}}));
  EXPECT_EQ(t.explicit_zeros, 0);
}

TEST(MatrixMarket, ArraySymmetricHoldsTheLowerTriangle) {
  const CooTensor t =
      ParseMatrixMarket("%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n", "a.mtx");
  EXPECT_EQ(Entries(t), (std::vector<Entry>{{{0, 0}, 1}, {{0, 1}, 2}, {{1, 0}, 2}, {{1, 1}, 3}}));
}

TEST(MatrixMarket, ArraySkewSymmetricOmitsTheDiagonal) {
  const CooTensor t =
      ParseMatrixMarket("%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n", "a.mtx");
  EXPECT_EQ(Entries(t),
            (std::vector<Entry>{
                {{0, 1}, -1}, {{0, 2}, -2}, {{1, 0}, 1}, {{1, 2}, -3}, {{2, 0}, 2}, {{2, 1}, 3}}));
}

TEST(MatrixMarket, ArrayComplexAndInteger) {
  std::vector<std::string> warnings;
  const CooTensor c = ParseMatrixMarket(
      "%%MatrixMarket matrix array complex general\n1 2\n1 2\n3 4\n", "a.mtx", &warnings);
  EXPECT_EQ(Entries(c), (std::vector<Entry>{{{0, 0}, 1}, {{0, 1}, 3}}));
  EXPECT_EQ(c.imag, (std::vector<double>{2, 4}));
  EXPECT_TRUE(warnings.empty());
  const CooTensor i =
      ParseMatrixMarket("%%MatrixMarket matrix array integer general\n2 1\n5\n-6\n", "a.mtx");
  EXPECT_EQ(Entries(i), (std::vector<Entry>{{{0, 0}, 5}, {{1, 0}, -6}}));
}

TEST(MatrixMarket, MalformedInputsNameTheLineAndTheCause) {
  const std::string sym = "%%MatrixMarket matrix coordinate real symmetric\n";
  ExpectError("", 0, "empty file");
  ExpectError("\n", 1, "missing %%MatrixMarket banner");
  ExpectError("% comment\n" + kHeader, 1, "missing %%MatrixMarket banner");
  ExpectError("%%MatrixMarket\n1 1 1\n", 1, "incomplete");
  ExpectError("%%MatrixMarket matrix coordinate real general x\n", 1, "unexpected 'x'");
  ExpectError("%%MatrixMarket tensor coordinate real general\n", 1, "unsupported object");
  ExpectError("%%MatrixMarket matrix dense real general\n", 1, "unknown format 'dense'");
  ExpectError("%%MatrixMarket matrix coordinate double general\n", 1, "unknown field 'double'");
  ExpectError("%%MatrixMarket matrix coordinate real upper\n", 1, "unknown symmetry 'upper'");
  ExpectError("%%MatrixMarket matrix array pattern general\n", 1, "pattern field");
  ExpectError(kHeader, 1, "ends before the size line");
  ExpectError(kHeader + "% c\n\n", 3, "ends before the size line");
  ExpectError(kHeader + "3 3\n", 2, "size line has 2 fields");
  ExpectError(kHeader + "3 3 1 1\n", 2, "size line has 4 fields");
  ExpectError("%%MatrixMarket matrix array real general\n3 3 9\n", 2, "array format needs 2");
  ExpectError(kHeader + "-1 3 1\n", 2, "row count '-1' is negative");
  ExpectError(kHeader + "3 -1 1\n", 2, "column count '-1' is negative");
  ExpectError(kHeader + "3 3 -1\n", 2, "entry count '-1' is negative");
  ExpectError(kHeader + "3 3 1x\n", 2, "entry count '1x' is not an integer");
  ExpectError(kHeader + "3 3 9223372036854775808\n", 2, "is out of range");
  ExpectError(kHeader + "2147483648 3 0\n", 2, "exceeds the largest supported dimension");
  ExpectError(kHeader + "3 3 100\n1 1 1\n", 2, "declares 100 entries");
  ExpectError("%%MatrixMarket matrix array real general\n100000 100000\n1\n", 2,
              "declares 10000000000 values");
  ExpectError(sym + "3 2 1\n1 1 1\n", 2, "must be square");
  ExpectError(kHeader + "3 3 3\n1 1 10.25\n2 2 20.25\n", 4, "ends after 2 of the 3 entries");
  ExpectError(kHeader + "3 3 3\n1 1 1\n2 2 2\n% trailing\n\n", 6, "ends after 2 of the 3");
  ExpectError(kHeader + "3 3 1\n1 1 1\n2 2 2\n", 4, "more entries than the 1 declared on line 2");
  ExpectError(kHeader + "3 3 0\n1 1 1\n", 3, "more entries than the 0");
  ExpectError(kHeader + "3 3 1\n0 1 1\n", 3, "row index 0 is out of range 1..3");
  ExpectError(kHeader + "3 3 1\n4 1 1\n", 3, "row index 4 is out of range 1..3");
  ExpectError(kHeader + "3 3 1\n1 4 1\n", 3, "column index 4 is out of range 1..3");
  ExpectError(kHeader + "3 3 1\n1 00 1\n", 3, "column index 0 is out of range");
  ExpectError(kHeader + "3 3 1\n-1 1 1\n", 3, "row index -1 is out of range");
  ExpectError(kHeader + "3 3 1\n99999999999999999999999 1 1\n", 3,
              "row index 99999999999999999999999 is out of range");
  ExpectError(kHeader + "3 3 1\n1e0 1 1\n", 3, "row index '1e0' is not an integer");
  ExpectError(kHeader + "3 3 1\n1,1 1\n", 3, "row index '1,1' is not an integer");
  ExpectError(kHeader + "3 3 1\n1\n", 3, "missing column index");
  ExpectError(kHeader + "3 3 1\n1 1\n", 3, "missing value");
  ExpectError(kHeader + "3 3 1\n1 1 x\n", 3, "value 'x' is not a number");
  ExpectError(kHeader + "3 3 1\n1 1 1.0.0\n", 3, "value '1.0.0' is not a number");
  ExpectError(kHeader + "3 3 1\n1 1 +-1\n", 3, "value '+-1' is not a number");
  ExpectError(kHeader + "3 3 1\n1 1 inf\n", 3, "value 'inf' is not a finite number");
  ExpectError(kHeader + "3 3 1\n1 1 -1e400\n", 3, "value '-1e400' is out of range");
  ExpectError(kHeader + "3 3 1\n1 1 1 1\n", 3, "unexpected '1' after the entry");
  ExpectError(kHeader + "3 3 1\n1 1 1 % note\n", 3, "unexpected '%'");
  ExpectError(kHeader + "3 3 1\n1 1 \x01\n", 3, "value '\\x01' is not a number");
  ExpectError(kHeader + std::string("3 3 1\n1 1 1\0\n", 13), 3, "binary data");
  ExpectError("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 1.5\n", 3,
              "value '1.5' is not an integer");
  ExpectError("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 9223372036854775808\n",
              3, "is out of range");
  ExpectError("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1\n", 3,
              "unexpected '1' after the entry: a pattern coordinate line has 2 fields");
  ExpectError("%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 1 1\n", 3,
              "missing imaginary part");
  ExpectError("%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 1 1 y\n", 3,
              "imaginary part 'y' is not a number");
  ExpectError("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n", 3,
              "nonzero diagonal entry");
  ExpectError("%%MatrixMarket matrix array real general\n2 1\n1.5\n", 3, "ends after 1 of the 2");
  ExpectError("%%MatrixMarket matrix array real general\n1 1\n1\n2\n", 4, "more values than the 1");
  ExpectError("%%MatrixMarket matrix array real general\n2 1\n1 2\n3\n", 3, "unexpected '2'");
}

TEST(MatrixMarket, ErrorTextQuotesUnprintableAndLongTokens) {
  try {
    ParseMatrixMarket(kHeader + "3 3 1\n1 1 " + std::string(100, 'x') + "\n", "in.mtx");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.cause().find("'" + std::string(40, 'x') + "...'"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

// A random file with comments, blank lines and odd spacing, for chunking checks.
std::string RandomMatrixMarket(const std::string& symmetry, int entries, unsigned seed) {
  std::mt19937 rng(seed);
  std::string text = "%%MatrixMarket matrix coordinate real " + symmetry + "\n% random\n";
  text += "500 500 " + std::to_string(entries) + "\n";
  for (int e = 0; e < entries; ++e) {
    if (rng() % 17 == 0) text += "% comment\n";
    if (rng() % 13 == 0) text += "\n";
    int r = static_cast<int>(rng() % 500) + 1;
    int c = static_cast<int>(rng() % 500) + 1;
    if (symmetry != "general" && c > r) std::swap(r, c);
    if (symmetry == "skew-symmetric" && r == c) {  // no diagonal
      if (r == 1) {
        ++r;
      } else {
        --c;
      }
    }
    text += std::to_string(r) + (rng() % 5 ? " " : " \t ") + std::to_string(c) + " " +
            std::to_string(static_cast<int>(rng() % 2001) - 1000) + "e-2" +
            (rng() % 7 ? "\n" : "\r\n");
  }
  return text;
}

TEST(MatrixMarket, ChunkedParsingMatchesSequential) {
  for (const std::string symmetry : {"general", "symmetric", "skew-symmetric"}) {
    SCOPED_TRACE(symmetry);
    const std::string text = RandomMatrixMarket(symmetry, 20000, 42);
    const CooTensor one = io_internal::ParseMatrixMarket(text, "r.mtx", nullptr, Threads(1));
    EXPECT_GT(one.nnz(), 10000);
    for (int threads : {2, 3, 8}) {
      auto options = Threads(threads);
      options.min_chunk_bytes = 4096;
      const CooTensor many = io_internal::ParseMatrixMarket(text, "r.mtx", nullptr, options);
      EXPECT_EQ(Entries(many), Entries(one));
      EXPECT_EQ(many.duplicates_summed, one.duplicates_summed);
      EXPECT_EQ(many.explicit_zeros, one.explicit_zeros);
    }
  }
}

TEST(MatrixMarket, ChunkedParsingReportsTheFirstBadLineOfTheFile) {
  const std::string good = RandomMatrixMarket("general", 20000, 7);
  // Count lines up to a point deep in the file and break the entry there.
  size_t pos = good.size() * 3 / 4;
  pos = good.find('\n', pos) + 1;
  const int64_t line = std::count(good.begin(), good.begin() + static_cast<long>(pos), '\n') + 1;
  std::string bad = good;
  bad.insert(pos, "1 1 oops\n");
  ExpectError(bad, line, "value 'oops' is not a number");
  // Two bad lines, one per chunk: the earlier one is reported.
  std::string twice = bad;
  const size_t early = twice.find('\n', twice.size() / 5) + 1;
  const int64_t early_line =
      std::count(twice.begin(), twice.begin() + static_cast<long>(early), '\n') + 1;
  twice.insert(early, "0 1 1\n");
  ExpectError(twice, early_line, "row index 0");
}

TEST(MatrixMarket, ChunkedParsingCountsEntries) {
  const std::string text = RandomMatrixMarket("general", 5000, 3) + "% the end\n";
  const size_t size_line = text.find("500 500 5000");
  const int64_t lines = std::count(text.begin(), text.end(), '\n');
  std::string fewer = text;
  fewer.replace(size_line, 12, "500 500 5001");
  ExpectError(fewer, lines, "ends after 5000 of the 5001 entries");
  std::string more = text;
  more.replace(size_line, 12, "500 500 4999");
  // Blank lines and comments only come before entries, so the last entry is the line
  // before "% the end".
  ExpectError(more, lines - 1, "more entries than the 4999");
}

}  // namespace
}  // namespace sparsetune
