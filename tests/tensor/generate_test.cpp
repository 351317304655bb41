#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>

#include "base/errors.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/generate.hpp"
#include "tensor/stats.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sparsetune {
namespace {

// Every generator's output must be canonical, within its dims, with one value per entry.
void ExpectWellFormed(const CooTensor& t) {
  ASSERT_EQ(int(t.coords.size()), t.order());
  for (int m = 0; m < t.order(); ++m) {
    ASSERT_EQ(int64_t(t.coords[m].size()), t.nnz());
    for (int32_t c : t.coords[m]) {
      ASSERT_GE(c, 0);
      ASSERT_LT(c, t.dims[m]);
    }
  }
  EXPECT_TRUE(t.IsCanonical());
  EXPECT_EQ(t.duplicates_summed, 0);
}

// Random values are non-zero multiples of 1e-7 in [-1, 1).
void ExpectRandomValues(const CooTensor& t) {
  EXPECT_FALSE(t.pattern_only);
  for (double v : t.values) {
    ASSERT_GE(v, -1.0);
    ASSERT_LT(v, 1.0);
    ASSERT_NE(v, 0.0);
    ASSERT_EQ(std::round(v * 1e7) / 1e7, v);
  }
}

std::vector<int64_t> RowCounts(const CooTensor& t) {
  std::vector<int64_t> counts(t.dims[0], 0);
  for (int32_t i : t.coords[0]) ++counts[i];
  return counts;
}

// --- counts ---------------------------------------------------------------------------------

TEST(ParseCount, PlainAndSuffixed) {
  EXPECT_EQ(ParseCount("0", "n"), 0);
  EXPECT_EQ(ParseCount("12345", "n"), 12345);
  EXPECT_EQ(ParseCount(" 7 ", "n"), 7);
  EXPECT_EQ(ParseCount("2k", "n"), 2000);
  EXPECT_EQ(ParseCount("2K", "n"), 2000);
  EXPECT_EQ(ParseCount("10M", "n"), 10000000);
  EXPECT_EQ(ParseCount("1.5M", "n"), 1500000);
  EXPECT_EQ(ParseCount("3G", "n"), 3000000000);
  EXPECT_EQ(ParseCount("10_000", "n"), 10000);
  EXPECT_EQ(ParseCountList("100,2k,3M", "d"), (std::vector<int64_t>{100, 2000, 3000000}));
  EXPECT_EQ(ParseCountList("4x5x6", "d"), (std::vector<int64_t>{4, 5, 6}));
}

TEST(ParseCount, RejectsWhatIsNotACount) {
  for (const char* bad : {"", "-1", "10X", "1.2345k", "k", "1e6", "1..2", "0x10", "99999999999T"}) {
    EXPECT_THROW(ParseCount(bad, "--rows"), InputError) << bad;
  }
  try {
    ParseCount("12q", "--rows");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--rows"), std::string::npos);
  }
  EXPECT_THROW(ParseCountList("1,,2", "--dims"), InputError);
}

// --- determinism ----------------------------------------------------------------------------

struct Named {
  const char* name;
  CooTensor (*make)(uint64_t seed, bool pattern);
};

CooTensor MakeUniform(uint64_t seed, bool pattern) {
  UniformParams p;
  p.rows = 300;
  p.cols = 200;
  p.nnz = 5000;
  p.seed = seed;
  p.pattern = pattern;
  return GenerateUniform(p);
}
CooTensor MakePowerLaw(uint64_t seed, bool pattern) {
  PowerLawParams p;
  p.rows = 1000;
  p.cols = 700;
  p.nnz = 8000;
  p.seed = seed;
  p.pattern = pattern;
  return GeneratePowerLaw(p);
}
CooTensor MakeBanded(uint64_t seed, bool pattern) {
  BandedParams p;
  p.rows = p.cols = 500;
  p.bandwidth = 6;
  p.fill = 0.5;
  p.seed = seed;
  p.pattern = pattern;
  return GenerateBanded(p);
}
CooTensor MakeBlocked(uint64_t seed, bool pattern) {
  BlockedParams p;
  p.rows = 300;
  p.cols = 250;
  p.block = 8;
  p.nblocks = 60;
  p.fill = 0.5;
  p.seed = seed;
  p.pattern = pattern;
  return GenerateBlocked(p);
}
CooTensor MakeDiagonalHeavy(uint64_t seed, bool pattern) {
  DiagonalHeavyParams p;
  p.rows = 400;
  p.nnz = 3000;
  p.seed = seed;
  p.pattern = pattern;
  return GenerateDiagonalHeavy(p);
}
CooTensor MakeDnn(uint64_t seed, bool pattern) {
  DnnParams p;
  p.rows = 128;
  p.cols = 256;
  p.density = 0.2;
  p.seed = seed;
  p.pattern = pattern;
  return GenerateDnn(p);
}
CooTensor MakeTensorUniform(uint64_t seed, bool pattern) {
  TensorParams p;
  p.dims = {40, 30, 20};
  p.nnz = 3000;
  p.seed = seed;
  p.pattern = pattern;
  return GenerateTensorUniform(p);
}
CooTensor MakeTensorPowerLaw(uint64_t seed, bool pattern) {
  TensorParams p;
  p.dims = {400, 300, 200};
  p.nnz = 5000;
  p.seed = seed;
  p.pattern = pattern;
  return GenerateTensorPowerLaw(p);
}

const Named kRandomGenerators[] = {
    {"uniform", MakeUniform},
    {"powerlaw", MakePowerLaw},
    {"banded", MakeBanded},
    {"blocked", MakeBlocked},
    {"diagonal-heavy", MakeDiagonalHeavy},
    {"dnn", MakeDnn},
    {"tensor3-uniform", MakeTensorUniform},
    {"tensor3-powerlaw", MakeTensorPowerLaw},
};

TEST(Generate, SameSeedSameTensorOtherSeedOtherPattern) {
  for (const Named& g : kRandomGenerators) {
    SCOPED_TRACE(g.name);
    const CooTensor a = g.make(1, false);
    ExpectWellFormed(a);
    ExpectRandomValues(a);
    const CooTensor b = g.make(1, false);
    EXPECT_EQ(PatternFingerprint(a), PatternFingerprint(b));
    EXPECT_EQ(a.values, b.values);
    const CooTensor c = g.make(2, false);
    EXPECT_NE(PatternFingerprint(a), PatternFingerprint(c));
    // The pattern does not depend on whether values are asked for.
    const CooTensor d = g.make(1, true);
    EXPECT_TRUE(d.pattern_only);
    EXPECT_EQ(PatternFingerprint(a), PatternFingerprint(d));
    for (double v : d.values) ASSERT_EQ(v, 1.0);
  }
}

TEST(Generate, IndependentOfThreadCount) {
#ifdef _OPENMP
  const int threads = omp_get_max_threads();
  UniformParams p;
  p.rows = p.cols = 3000;
  p.nnz = 400000;  // several chunks and rounds of the parallel sampler
  const CooTensor parallel = GenerateUniform(p);
  omp_set_num_threads(1);
  const CooTensor serial = GenerateUniform(p);
  omp_set_num_threads(threads);
  EXPECT_EQ(PatternFingerprint(parallel), PatternFingerprint(serial));
  EXPECT_EQ(parallel.values, serial.values);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

// Pins the generator's output: a change here changes every generated data set.
TEST(Generate, UniformIsStableAcrossVersions) {
  UniformParams p;
  p.rows = 5;
  p.cols = 4;
  p.nnz = 6;
  const CooTensor t = GenerateUniform(p);
  EXPECT_EQ(t.coords[0], (std::vector<int32_t>{0, 0, 3, 3, 3, 4}));
  EXPECT_EQ(t.coords[1], (std::vector<int32_t>{1, 3, 1, 2, 3, 2}));
  EXPECT_EQ(t.values[0], -0.0465773);
}

// --- uniform --------------------------------------------------------------------------------

TEST(Uniform, ExactNnzSparseAndDense) {
  for (int64_t nnz : {1, 100, 5000, 30000, 59999, 60000}) {
    UniformParams p;
    p.rows = 300;
    p.cols = 200;
    p.nnz = nnz;
    const CooTensor t = GenerateUniform(p);
    ExpectWellFormed(t);
    EXPECT_EQ(t.nnz(), nnz);
    EXPECT_EQ(t.dims, (std::vector<int64_t>{300, 200}));
  }
  UniformParams p;
  p.rows = 1000;
  p.cols = 1000;
  p.density = 0.0123;
  EXPECT_EQ(GenerateUniform(p).nnz(), 12300);
}

TEST(Uniform, RowsEvenlyFilled) {
  UniformParams p;
  p.rows = p.cols = 1000;
  p.nnz = 100000;
  const std::vector<int64_t> counts = RowCounts(GenerateUniform(p));
  // Binomial(1000, 0.1) per row: mean 100, sd 9.5.
  EXPECT_GT(*std::min_element(counts.begin(), counts.end()), 55);
  EXPECT_LT(*std::max_element(counts.begin(), counts.end()), 145);
}

TEST(Uniform, RejectsBadArguments) {
  auto make = [](int64_t rows, int64_t cols, int64_t nnz, double density) {
    UniformParams p;
    p.rows = rows;
    p.cols = cols;
    p.nnz = nnz;
    p.density = density;
    return GenerateUniform(p);
  };
  EXPECT_THROW(make(0, 10, 5, 0), InputError);
  EXPECT_THROW(make(10, -1, 5, 0), InputError);
  EXPECT_THROW(make(int64_t(1) << 31, 10, 5, 0), InputError);
  EXPECT_THROW(make(10, 10, 101, 0), InputError);
  EXPECT_THROW(make(10, 10, 0, 0), InputError);
  EXPECT_THROW(make(10, 10, 0, 1.5), InputError);
  EXPECT_THROW(make(10, 10, 0, -0.1), InputError);
  EXPECT_THROW(make(10, 10, 5, 0.1), InputError);
  EXPECT_NO_THROW(make(kMaxDimension, kMaxDimension, 10, 0));
}

// --- power law ------------------------------------------------------------------------------

TEST(PowerLaw, SkewedDegreesAndExactNnz) {
  PowerLawParams p;
  p.rows = 5000;  // not a power of two
  p.cols = 3000;
  p.nnz = 50000;
  const CooTensor t = GeneratePowerLaw(p);
  ExpectWellFormed(t);
  EXPECT_EQ(t.nnz(), 50000);
  const std::vector<int64_t> counts = RowCounts(t);
  const double mean = 50000.0 / 5000;
  EXPECT_GT(*std::max_element(counts.begin(), counts.end()), 20 * mean);
  const int64_t empty = std::count(counts.begin(), counts.end(), 0);
  EXPECT_GT(empty, 500);  // R-MAT leaves many rows empty

  // Equal quadrant probabilities make R-MAT uniform.
  p.a = p.b = p.c = 0.25;
  const std::vector<int64_t> flat = RowCounts(GeneratePowerLaw(p));
  EXPECT_LT(*std::max_element(flat.begin(), flat.end()), 4 * mean);
}

TEST(PowerLaw, ShuffleKeepsDegreesMovesRows) {
  PowerLawParams p;
  p.rows = p.cols = 2048;
  p.nnz = 20000;
  const CooTensor plain = GeneratePowerLaw(p);
  p.shuffle = true;
  const CooTensor shuffled = GeneratePowerLaw(p);
  ExpectWellFormed(shuffled);
  EXPECT_EQ(shuffled.nnz(), plain.nnz());
  std::vector<int64_t> a = RowCounts(plain), b = RowCounts(shuffled);
  EXPECT_NE(a, b);
  // R-MAT without relabelling puts the heaviest row at 0.
  EXPECT_EQ(std::max_element(a.begin(), a.end()) - a.begin(), 0);
}

TEST(PowerLaw, RejectsBadProbabilities) {
  PowerLawParams p;
  p.rows = p.cols = 100;
  p.nnz = 10;
  p.a = 0.6;
  p.b = 0.3;
  p.c = 0.3;
  EXPECT_THROW(GeneratePowerLaw(p), InputError);
  p.a = -0.1;
  p.b = p.c = 0.1;
  EXPECT_THROW(GeneratePowerLaw(p), InputError);
  p.a = 0.57;
  p.b = p.c = 0.19;
  p.nnz = 10001;
  EXPECT_THROW(GeneratePowerLaw(p), InputError);
}

TEST(PowerLaw, TooConcentratedStopsShort) {
  // a = 1 puts every draw at (0, 0): only one distinct entry exists.
  PowerLawParams p;
  p.rows = p.cols = 64;
  p.nnz = 100;
  p.a = 1;
  p.b = p.c = 0;
  const CooTensor t = GeneratePowerLaw(p);
  EXPECT_EQ(t.nnz(), 1);
}

// --- banded ---------------------------------------------------------------------------------

// Graphs: symmetric adjacency without self loops, deterministic, heavy-tailed degrees.
TEST(Graph, Graph500AndChungLuAreSymmetricSkewedAndReproducible) {
  for (GraphModel model : {GraphModel::kGraph500, GraphModel::kChungLu}) {
    SCOPED_TRACE(model == GraphModel::kGraph500 ? "graph500" : "chung-lu");
    GraphParams p;
    p.model = model;
    p.vertices = 4096;
    p.edges = 16 * 4096;
    const CooTensor t = GenerateGraph(p);
    ExpectWellFormed(t);
    // Self loops and duplicate pairs are dropped, so fewer than twice the pairs remain.
    EXPECT_GT(t.nnz(), p.edges);
    EXPECT_LE(t.nnz(), 2 * p.edges);
    std::set<std::pair<int32_t, int32_t>> entries;
    for (int64_t e = 0; e < t.nnz(); ++e) {
      ASSERT_NE(t.coords[0][e], t.coords[1][e]);
      entries.insert({t.coords[0][e], t.coords[1][e]});
    }
    for (const auto& [i, j] : entries) ASSERT_TRUE(entries.count({j, i})) << i << " " << j;
    const std::vector<int64_t> degree = RowCounts(t);
    const double mean = double(t.nnz()) / 4096;
    EXPECT_GT(*std::max_element(degree.begin(), degree.end()), 10 * mean);
    // Relabelled: the hubs are not the first rows.
    const int64_t hub = std::max_element(degree.begin(), degree.end()) - degree.begin();
    EXPECT_NE(hub, 0);
    EXPECT_EQ(PatternFingerprint(GenerateGraph(p)), PatternFingerprint(t));
    p.seed = 2;
    EXPECT_NE(PatternFingerprint(GenerateGraph(p)), PatternFingerprint(t));
  }
  GraphParams bad;
  bad.vertices = 1000;  // not a power of two
  bad.edges = 100;
  EXPECT_THROW(GenerateGraph(bad), InputError);
  bad.model = GraphModel::kChungLu;
  bad.exponent = 1.0;
  EXPECT_THROW(GenerateGraph(bad), InputError);
}

// The components of a graph's pattern: the size of each vertex's, by union-find.
std::vector<int64_t> ComponentSizes(const CooTensor& t) {
  const int64_t n = t.dims[0];
  std::vector<int64_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int64_t v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  for (int64_t e = 0; e < t.nnz(); ++e) parent[find(t.coords[0][e])] = find(t.coords[1][e]);
  std::vector<int64_t> size(n, 0);
  for (int64_t v = 0; v < n; ++v) ++size[find(v)];
  return size;
}

// Planted communities: without mixing every edge stays inside one, so no component outgrows the
// largest community (plus the remainder the last one takes); with mixing they join up.
TEST(Graph, CommunitiesHoldTheirEdgesUnlessMixed) {
  GraphParams p;
  p.model = GraphModel::kCommunities;
  p.vertices = 20000;
  p.edges = 8 * 20000;
  p.min_community = 20;
  p.max_community = 400;
  p.mixing = 0.0;
  const CooTensor closed = GenerateGraph(p);
  ExpectWellFormed(closed);
  EXPECT_GT(closed.nnz(), p.edges);
  const std::vector<int64_t> closed_sizes = ComponentSizes(closed);
  EXPECT_LE(*std::max_element(closed_sizes.begin(), closed_sizes.end()),
            p.max_community + p.min_community);
  for (int64_t e = 0; e < closed.nnz(); ++e) ASSERT_NE(closed.coords[0][e], closed.coords[1][e]);
  p.mixing = 0.3;
  const CooTensor mixed = GenerateGraph(p);
  const std::vector<int64_t> mixed_sizes = ComponentSizes(mixed);
  EXPECT_GT(*std::max_element(mixed_sizes.begin(), mixed_sizes.end()), p.vertices / 2);
  // Heavy-tailed degrees, hubs not at the front, reproducible, and another seed differs.
  const std::vector<int64_t> degree = RowCounts(mixed);
  const double mean = double(mixed.nnz()) / double(p.vertices);
  EXPECT_GT(*std::max_element(degree.begin(), degree.end()), 10 * mean);
  EXPECT_NE(std::max_element(degree.begin(), degree.end()) - degree.begin(), 0);
  EXPECT_EQ(PatternFingerprint(GenerateGraph(p)), PatternFingerprint(mixed));
  p.seed = 2;
  EXPECT_NE(PatternFingerprint(GenerateGraph(p)), PatternFingerprint(mixed));
  for (auto bad : {std::pair<double, int64_t>{1.5, 16}, {0.2, 1}, {-0.1, 16}}) {
    GraphParams q = p;
    q.mixing = bad.first;
    q.min_community = bad.second;
    EXPECT_THROW(GenerateGraph(q), InputError);
  }
}

TEST(Banded, WithinBandAndFull) {
  BandedParams p;
  p.rows = p.cols = 1000;
  p.bandwidth = 5;
  const CooTensor t = GenerateBanded(p);
  ExpectWellFormed(t);
  // Full band: 11 per row, minus the corners.
  EXPECT_EQ(t.nnz(), 1000 * 11 - 2 * (5 * 6 / 2));
  EXPECT_EQ(ComputePatternStats(t).bandwidth, 5);

  p.fill = 0.3;
  const CooTensor part = GenerateBanded(p);
  ExpectWellFormed(part);
  EXPECT_LE(ComputePatternStats(part).bandwidth, 5);
  EXPECT_NEAR(double(part.nnz()) / t.nnz(), 0.3, 0.03);
  p.fill = 0.01;  // the geometric-skip path
  const CooTensor sparse = GenerateBanded(p);
  EXPECT_LE(ComputePatternStats(sparse).bandwidth, 5);
  EXPECT_NEAR(double(sparse.nnz()) / t.nnz(), 0.01, 0.004);
}

TEST(Banded, RectangularFollowsScaledDiagonal) {
  BandedParams p;
  p.rows = 1000;
  p.cols = 100;
  p.bandwidth = 2;
  const CooTensor t = GenerateBanded(p);
  ExpectWellFormed(t);
  for (int64_t e = 0; e < t.nnz(); ++e) {
    const int64_t center = int64_t(t.coords[0][e]) * 100 / 1000;
    ASSERT_LE(std::abs(t.coords[1][e] - center), 2);
  }
  EXPECT_EQ(ComputePatternStats(t).empty_rows, 0);
  p.bandwidth = -1;
  EXPECT_THROW(GenerateBanded(p), InputError);
  p.bandwidth = 1;
  p.fill = 0;
  EXPECT_THROW(GenerateBanded(p), InputError);
}

// --- blocked --------------------------------------------------------------------------------

TEST(Blocked, DenseAlignedBlocks) {
  BlockedParams p;
  p.rows = 512;
  p.cols = 256;
  p.block = 8;
  p.nblocks = 100;
  const CooTensor t = GenerateBlocked(p);
  ExpectWellFormed(t);
  EXPECT_EQ(t.nnz(), 100 * 64);
  const PatternStats s = ComputePatternStats(t);
  EXPECT_EQ(s.dense_block_fraction[0], 1.0);  // 4x4
  EXPECT_EQ(s.dense_block_fraction[1], 1.0);  // 8x8
}

TEST(Blocked, PartialFillIsExactPerBlock) {
  BlockedParams p;
  p.rows = 100;  // not a multiple of the block: edge blocks are clipped
  p.cols = 90;
  p.block = 16;
  p.nnz = 2000;
  p.fill = 0.25;
  const CooTensor t = GenerateBlocked(p);
  ExpectWellFormed(t);
  std::map<std::pair<int, int>, int> per_block;
  for (int64_t e = 0; e < t.nnz(); ++e) ++per_block[{t.coords[0][e] / 16, t.coords[1][e] / 16}];
  EXPECT_EQ(int64_t(per_block.size()), (2000 + 63) / 64);
  for (const auto& [block, count] : per_block) {
    const int h = std::min(16, 100 - block.first * 16), w = std::min(16, 90 - block.second * 16);
    EXPECT_EQ(count, std::max<int>(1, std::lround(0.25 * h * w)));
  }
}

TEST(Blocked, RejectsBadArguments) {
  BlockedParams p;
  p.rows = p.cols = 64;
  p.block = 8;
  p.nblocks = 65;  // the grid holds 64
  EXPECT_THROW(GenerateBlocked(p), InputError);
  p.nblocks = 64;
  EXPECT_EQ(GenerateBlocked(p).nnz(), 64 * 64);
  p.nnz = 100;
  EXPECT_THROW(GenerateBlocked(p), InputError);  // both
  p.nblocks = p.nnz = 0;
  EXPECT_THROW(GenerateBlocked(p), InputError);  // neither
  p.nblocks = 1;
  p.block = 0;
  EXPECT_THROW(GenerateBlocked(p), InputError);
  p.block = 8;
  p.fill = 1.1;
  EXPECT_THROW(GenerateBlocked(p), InputError);
}

// --- stencils -------------------------------------------------------------------------------

TEST(Stencil, FivePointLaplacian) {
  StencilParams p;
  p.nx = 7;
  p.ny = 5;
  const CooTensor t = GenerateStencil2d(p);
  ExpectWellFormed(t);
  const int64_t n = 35;
  EXPECT_EQ(t.dims, (std::vector<int64_t>{n, n}));
  EXPECT_EQ(t.nnz(), 5 * n - 2 * 7 - 2 * 5);
  std::vector<double> row_sum(n, 0);
  std::vector<int> degree(n, 0);
  std::set<std::pair<int, int>> entries;
  for (int64_t e = 0; e < t.nnz(); ++e) {
    const int i = t.coords[0][e], j = t.coords[1][e];
    EXPECT_EQ(t.values[e], i == j ? 4.0 : -1.0);
    row_sum[i] += t.values[e];
    ++degree[i];
    entries.insert({i, j});
  }
  for (const auto& [i, j] : entries) EXPECT_TRUE(entries.count({j, i}));  // symmetric
  EXPECT_EQ(degree[0], 3);                                                // corner
  EXPECT_EQ(degree[1], 4);                                                // edge
  EXPECT_EQ(degree[7 + 1], 5);                                            // interior
  EXPECT_EQ(row_sum[7 + 1], 0);  // interior rows sum to zero
  EXPECT_EQ(GenerateStencil2d(p).values, t.values);
}

TEST(Stencil, SevenPointLaplacian) {
  StencilParams p;
  p.nx = 4;
  p.ny = 5;
  p.nz = 6;
  const CooTensor t = GenerateStencil3d(p);
  ExpectWellFormed(t);
  const int64_t n = 120;
  EXPECT_EQ(t.nnz(), 7 * n - 2 * (4 * 5 + 5 * 6 + 4 * 6));
  std::vector<int> degree(n, 0);
  for (int64_t e = 0; e < t.nnz(); ++e) {
    ++degree[t.coords[0][e]];
    EXPECT_EQ(t.values[e], t.coords[0][e] == t.coords[1][e] ? 6.0 : -1.0);
  }
  EXPECT_EQ(*std::max_element(degree.begin(), degree.end()), 7);
  EXPECT_EQ(*std::min_element(degree.begin(), degree.end()), 4);
  p.pattern = true;
  const CooTensor pattern = GenerateStencil3d(p);
  EXPECT_TRUE(pattern.pattern_only);
  EXPECT_EQ(PatternFingerprint(pattern), PatternFingerprint(t));
  p.nx = 0;
  EXPECT_THROW(GenerateStencil3d(p), InputError);
  p.nx = p.ny = p.nz = 2000;  // 8e9 points
  EXPECT_THROW(GenerateStencil3d(p), InputError);
}

// --- diagonal-heavy -------------------------------------------------------------------------

TEST(DiagonalHeavy, FullDiagonalAndDiagonalShare) {
  DiagonalHeavyParams p;
  p.rows = 2000;
  p.nnz = 10000;
  p.diag_fraction = 0.4;
  p.offdiagonals = 4;
  const CooTensor t = GenerateDiagonalHeavy(p);
  ExpectWellFormed(t);
  EXPECT_EQ(t.nnz(), 10000);
  std::map<int64_t, int64_t> per_offset;
  for (int64_t e = 0; e < t.nnz(); ++e) ++per_offset[t.coords[1][e] - t.coords[0][e]];
  EXPECT_EQ(per_offset[0], 2000);
  std::vector<int64_t> sizes;
  for (const auto& [offset, count] : per_offset) sizes.push_back(count);
  std::sort(sizes.rbegin(), sizes.rend());
  // The five diagonals hold the asked share (scattered entries add a few more).
  const int64_t on_diagonals = std::accumulate(sizes.begin(), sizes.begin() + 5, int64_t(0));
  EXPECT_GE(on_diagonals, 4000);
  EXPECT_LE(on_diagonals, 4000 + 50);
  // Only the main diagonal when the share is that of the main diagonal.
  p.diag_fraction = 0.2;
  const CooTensor sparse = GenerateDiagonalHeavy(p);
  EXPECT_EQ(sparse.nnz(), 10000);
  EXPECT_NEAR(ComputePatternStats(sparse).diagonal_fraction, 0.2, 1e-12);
  // More than the off-diagonals can hold: they fill up, the rest is scattered.
  p.diag_fraction = 1.0;
  p.nnz = 40000;
  const CooTensor full = GenerateDiagonalHeavy(p);
  EXPECT_EQ(full.nnz(), 40000);
}

TEST(DiagonalHeavy, SmallAndFullMatrices) {
  DiagonalHeavyParams p;
  p.rows = 3;
  p.nnz = 9;
  const CooTensor t = GenerateDiagonalHeavy(p);
  ExpectWellFormed(t);
  EXPECT_EQ(t.nnz(), 9);
  p.nnz = 2;
  EXPECT_THROW(GenerateDiagonalHeavy(p), InputError);  // fewer than the diagonal
  p.nnz = 10;
  EXPECT_THROW(GenerateDiagonalHeavy(p), InputError);
  p.nnz = 5;
  p.offdiagonals = 5;
  EXPECT_THROW(GenerateDiagonalHeavy(p), InputError);
}

// --- dnn ------------------------------------------------------------------------------------

TEST(Dnn, DensityAndRowVariation) {
  DnnParams p;
  p.rows = 512;
  p.cols = 1024;
  p.density = 0.1;
  const CooTensor t = GenerateDnn(p);
  ExpectWellFormed(t);
  EXPECT_NEAR(double(t.nnz()) / (512.0 * 1024), 0.1, 0.01);
  auto row_cv = [](const CooTensor& m) {
    const std::vector<int64_t> counts = RowCounts(m);
    double mean = 0, var = 0;
    for (int64_t c : counts) mean += c;
    mean /= counts.size();
    for (int64_t c : counts) var += (c - mean) * (c - mean);
    return std::sqrt(var / counts.size()) / mean;
  };
  // Binomial rows alone would give a coefficient of variation of about 0.09.
  EXPECT_GT(row_cv(t), 0.3);
  p.row_variation = p.col_variation = 0;
  const CooTensor flat = GenerateDnn(p);
  EXPECT_NEAR(double(flat.nnz()) / (512.0 * 1024), 0.1, 0.005);
  EXPECT_LT(row_cv(flat), 0.15);
}

TEST(Dnn, NmKeepsExactlyNOfEveryM) {
  DnnParams p;
  p.rows = 64;
  p.cols = 130;  // a short last group of 2
  p.structure = DnnStructure::kNM;
  p.n = 2;
  p.m = 4;
  const CooTensor t = GenerateDnn(p);
  ExpectWellFormed(t);
  std::map<std::pair<int, int>, int> groups;
  for (int64_t e = 0; e < t.nnz(); ++e) ++groups[{t.coords[0][e], t.coords[1][e] / 4}];
  EXPECT_EQ(groups.size(), size_t(64 * 33));
  for (const auto& [group, count] : groups) EXPECT_EQ(count, group.second == 32 ? 1 : 2);
  p.density = 0.3;
  EXPECT_THROW(GenerateDnn(p), InputError);  // inconsistent with 2:4
  p.density = 0.5;
  EXPECT_NO_THROW(GenerateDnn(p));
  p.n = 5;
  EXPECT_THROW(GenerateDnn(p), InputError);
}

TEST(Dnn, BlockStructuresComeInWholeUnits) {
  for (DnnStructure s :
       {DnnStructure::kRowBlock, DnnStructure::kColumnBlock, DnnStructure::kBlock}) {
    DnnParams p;
    p.rows = 128;
    p.cols = 256;
    p.density = 0.25;
    p.structure = s;
    p.block = 4;
    const CooTensor t = GenerateDnn(p);
    ExpectWellFormed(t);
    const int64_t unit_rows = s == DnnStructure::kRowBlock ? 1 : 4;
    const int64_t unit_cols = s == DnnStructure::kColumnBlock ? 1 : 4;
    std::map<std::pair<int64_t, int64_t>, int64_t> units;
    for (int64_t e = 0; e < t.nnz(); ++e) {
      ++units[{t.coords[0][e] / unit_rows, t.coords[1][e] / unit_cols}];
    }
    for (const auto& [unit, count] : units) ASSERT_EQ(count, unit_rows * unit_cols);
    EXPECT_NEAR(double(t.nnz()) / (128.0 * 256), 0.25, 0.04);
  }
  EXPECT_EQ(ParseDnnStructure("row-block"), DnnStructure::kRowBlock);
  EXPECT_THROW(ParseDnnStructure("2:4"), InputError);
}

// --- resize ---------------------------------------------------------------------------------

CooTensor Diagonal(int64_t n) {
  CooTensor t;
  t.Reset({n, n});
  for (int32_t i = 0; i < n; ++i) {
    const int32_t c[2] = {i, i};
    t.Append(c, 1.0);
  }
  return t;
}

TEST(Resize, DiagonalStaysDiagonal) {
  ResizeParams p;
  p.rows = p.cols = 1000;
  const CooTensor grown = ResizeMatrix(Diagonal(100), p);
  ExpectWellFormed(grown);
  EXPECT_EQ(grown.nnz(), 1000);
  EXPECT_EQ(ComputePatternStats(grown).diagonal_fraction, 1.0);
  p.rows = p.cols = 37;
  const CooTensor shrunk = ResizeMatrix(Diagonal(100), p);
  EXPECT_EQ(shrunk.nnz(), 37);
  EXPECT_EQ(ComputePatternStats(shrunk).diagonal_fraction, 1.0);
  // Non-integral growth factors still give the full diagonal.
  p.rows = p.cols = 173;
  const CooTensor odd = ResizeMatrix(Diagonal(100), p);
  EXPECT_EQ(odd.nnz(), 173);
  EXPECT_EQ(ComputePatternStats(odd).diagonal_fraction, 1.0);
}

TEST(Resize, BandStaysBandRelativeToSize) {
  BandedParams b;
  b.rows = b.cols = 300;
  b.bandwidth = 3;
  const CooTensor source = GenerateBanded(b);
  ResizeParams p;
  p.rows = p.cols = 3000;  // x10
  const CooTensor grown = ResizeMatrix(source, p);
  ExpectWellFormed(grown);
  ExpectRandomValues(grown);
  EXPECT_LE(ComputePatternStats(grown).bandwidth, (3 + 1) * 10);
  EXPECT_EQ(grown.nnz(), source.nnz() * 10);  // linear, not quadratic, growth
  EXPECT_EQ(ComputePatternStats(grown).empty_rows, 0);
  p.rows = p.cols = 75;  // /4
  const CooTensor shrunk = ResizeMatrix(source, p);
  ExpectWellFormed(shrunk);
  EXPECT_LE(ComputePatternStats(shrunk).bandwidth, 1);
  EXPECT_EQ(shrunk.nnz(), 75 * 3 - 2);  // tridiagonal
}

TEST(Resize, BlocksStayBlocksAndRectangularWorks) {
  BlockedParams b;
  b.rows = b.cols = 64;
  b.block = 8;
  b.nblocks = 6;
  const CooTensor source = GenerateBlocked(b);
  std::set<std::pair<int, int>> source_blocks;
  for (int64_t e = 0; e < source.nnz(); ++e) {
    source_blocks.insert({source.coords[0][e] / 8, source.coords[1][e] / 8});
  }
  ResizeParams p;
  p.rows = 256;  // x4
  p.cols = 128;  // x2
  const CooTensor grown = ResizeMatrix(source, p);
  ExpectWellFormed(grown);
  EXPECT_EQ(grown.dims, (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(grown.nnz(), source.nnz() * 4);
  std::set<std::pair<int, int>> grown_blocks;
  for (int64_t e = 0; e < grown.nnz(); ++e) {
    grown_blocks.insert({grown.coords[0][e] / 32, grown.coords[1][e] / 16});
  }
  EXPECT_EQ(grown_blocks, source_blocks);  // the same blocks, scaled
  // Every row and column of each scaled block is covered.
  const std::vector<int64_t> counts = RowCounts(grown);
  for (const auto& [bi, bj] : source_blocks) {
    for (int r = bi * 32; r < (bi + 1) * 32; ++r) ASSERT_GT(counts[r], 0);
  }
}

TEST(Resize, Validates) {
  ResizeParams p;
  p.rows = p.cols = 10;
  CooTensor cube;
  cube.Reset({2, 2, 2});
  EXPECT_THROW(ResizeMatrix(cube, p), InputError);
  p.rows = 0;
  EXPECT_THROW(ResizeMatrix(Diagonal(5), p), InputError);
}

// --- tensors --------------------------------------------------------------------------------

TEST(TensorGen, UniformExactAndWide) {
  TensorParams p;
  p.dims = {40, 30, 20};
  p.nnz = 24000;  // dense: the complement path
  CooTensor t = GenerateTensorUniform(p);
  ExpectWellFormed(t);
  EXPECT_EQ(t.nnz(), 24000);
  p.nnz = 24000;
  p.dims = {1 << 30, 1 << 30, 1 << 30};  // 90 bits: no 64-bit keys
  t = GenerateTensorUniform(p);
  ExpectWellFormed(t);
  EXPECT_EQ(t.nnz(), 24000);
  EXPECT_EQ(PatternFingerprint(t), PatternFingerprint(GenerateTensorUniform(p)));
  p.dims = {10, 10, 10, 10};
  p.nnz = 500;
  EXPECT_EQ(GenerateTensorUniform(p).order(), 4);
  p.dims = {10};
  EXPECT_THROW(GenerateTensorUniform(p), InputError);
  p.dims = {10, 0, 10};
  EXPECT_THROW(GenerateTensorUniform(p), InputError);
  p.dims = {10, 10, 10};
  p.nnz = 1001;
  EXPECT_THROW(GenerateTensorUniform(p), InputError);
}

TEST(TensorGen, PowerLawSkewsSlicesAndFibers) {
  TensorParams p;
  p.dims = {2000, 1000, 500};
  p.nnz = 100000;
  p.alpha = 1.0;
  const CooTensor t = GenerateTensorPowerLaw(p);
  ExpectWellFormed(t);
  EXPECT_EQ(t.nnz(), 100000);
  const PatternStats s = ComputePatternStats(t);
  EXPECT_GT(double(s.row_max), 20 * s.row_mean);  // a few huge slices
  EXPECT_LT(double(s.row_min), s.row_mean / 4);   // and many small ones
  p.alpha = 0;                                    // uniform
  const PatternStats flat = ComputePatternStats(GenerateTensorPowerLaw(p));
  EXPECT_LT(double(flat.row_max), 3 * flat.row_mean);
  p.alpha = -1;
  EXPECT_THROW(GenerateTensorPowerLaw(p), InputError);
}

}  // namespace
}  // namespace sparsetune
