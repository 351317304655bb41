#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include <omp.h>

#include "support/omp_teams.hpp"
#include "support/test_data.hpp"
#include "tensor/coo.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/level_packer.hpp"
#include "tensor/pack.hpp"
#include "tensor/permutation.hpp"
#include "tensor/stats.hpp"

namespace sparsetune {
namespace {

TEST(Coo, CanonicalizeSortsAndSumsDuplicates) {
  CooTensor t;
  t.Reset({3, 3});
  int32_t a[2] = {2, 1}, b[2] = {0, 2}, c[2] = {2, 1};
  t.Append(a, 1.0);
  t.Append(b, 2.0);
  t.Append(c, 4.0);
  t.Canonicalize();
  ASSERT_EQ(t.nnz(), 2);
  EXPECT_EQ(t.duplicates_summed, 1);
  EXPECT_EQ(t.coords[0][0], 0);
  EXPECT_EQ(t.coords[1][0], 2);
  EXPECT_EQ(t.values[1], 5.0);
  EXPECT_TRUE(t.IsCanonical());
}

// Large enough to be checked in parallel: an entry out of order or repeated anywhere, in
// any thread's part, makes the tensor not canonical.
TEST(Coo, IsCanonicalFindsAnyEntryOutOfOrderOrRepeated) {
  for (std::vector<int64_t> dims :
       {std::vector<int64_t>{3000, 3000}, std::vector<int64_t>{60, 60, 60}}) {
    CooTensor t = testing::RandomSparse(dims, 200000, 11);
    ASSERT_TRUE(t.IsCanonical());
    for (int64_t at : {int64_t(1), t.nnz() / 2 + 1, t.nnz() - 1}) {
      CooTensor swapped = t;
      for (auto& mode : swapped.coords) std::swap(mode[at - 1], mode[at]);
      EXPECT_FALSE(swapped.IsCanonical())
          << t.order() << " modes, entries " << at - 1 << ", " << at;
      CooTensor repeated = t;
      for (auto& mode : repeated.coords) mode[at] = mode[at - 1];
      EXPECT_FALSE(repeated.IsCanonical()) << t.order() << " modes, entry " << at;
    }
  }
}

TEST(Fingerprint, DependsOnPatternOnly) {
  CooTensor a = testing::RandomSparse({50, 40}, 300, 7);
  CooTensor b = a;
  for (double& v : b.values) v *= -3;
  EXPECT_EQ(PatternFingerprint(a), PatternFingerprint(b));
  // The same entries inserted in another order give the same fingerprint.
  CooTensor c;
  c.Reset(a.dims);
  for (int64_t e = a.nnz() - 1; e >= 0; --e) {
    int32_t coord[2] = {a.coords[0][e], a.coords[1][e]};
    c.Append(coord, 1.0);
  }
  c.Canonicalize();
  EXPECT_EQ(PatternFingerprint(a), PatternFingerprint(c));
  CooTensor d = a;
  d.coords[1][0] = (d.coords[1][0] + 1) % 40;
  d.Canonicalize();
  EXPECT_NE(PatternFingerprint(a), PatternFingerprint(d));
  CooTensor e = a;
  e.dims[0] = 51;
  EXPECT_NE(PatternFingerprint(a), PatternFingerprint(e));
}

// 4x4: full 2x2 block at the top left, diagonal entries below; rows {0, 1}, {0, 1}, {2}, {0, 3}.
CooTensor SmallKnownMatrix() {
  CooTensor t;
  t.Reset({4, 4});
  for (auto [i, j] :
       std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 2}, {3, 3}, {3, 0}}) {
    int32_t c[2] = {i, j};
    t.Append(c, 1.0);
  }
  t.Canonicalize();
  return t;
}

TEST(Stats, SmallKnownMatrix) {
  const CooTensor t = SmallKnownMatrix();
  PatternStats s = ComputePatternStats(t);
  EXPECT_EQ(s.nnz, 7);
  EXPECT_EQ(s.row_min, 1);
  EXPECT_EQ(s.row_max, 2);
  EXPECT_EQ(s.empty_rows, 0);
  EXPECT_EQ(s.bandwidth, 3);
  EXPECT_NEAR(s.diagonal_fraction, 4.0 / 7.0, 1e-12);
  EXPECT_NEAR(s.pattern_symmetry, 2.0 / 3.0, 1e-12);  // (0,1),(1,0) mirrored; (3,0) not
  EXPECT_EQ(s.prefix_nnz, (std::vector<int64_t>{4, 7}));
  EXPECT_NEAR(s.dense_block_fraction[0], 0.0, 1e-12);  // no full 4x4 block
}

// Block rows store each group's rows over the union of their columns: the padding is R times
// the unions over the nonzeros, and it is what the packer stores in that format.
TEST(Stats, RowGroupPaddingIsWhatBlockRowsStore) {
  const CooTensor t = SmallKnownMatrix();
  EXPECT_DOUBLE_EQ(RowGroupPadding(t, 1), 1.0);
  EXPECT_DOUBLE_EQ(RowGroupPadding(t, 2), (2 * 2 + 2 * 3) / 7.0);
  EXPECT_DOUBLE_EQ(RowGroupPadding(t, 4), 4 * 4 / 7.0);
  CooTensor empty;
  empty.Reset({8, 8});
  EXPECT_DOUBLE_EQ(RowGroupPadding(empty, 4), 1.0);

  const CooTensor random = testing::RandomSparse({4000, 3000}, 40000, 12);
  for (int64_t rows : {2, 4, 8}) {
    StorageFormat block_rows;  // i1:U k:C i0:U
    block_rows.split = {rows, 1};
    block_rows.levels = {{0, SplitPart::kOuter, LevelKind::kDense},
                         {1, SplitPart::kWhole, LevelKind::kCompressed},
                         {0, SplitPart::kInner, LevelKind::kDense}};
    const PackOutcome packed = Pack(random, block_rows, DType::kF32);
    ASSERT_TRUE(packed.packed) << packed.refusal;
    const double stored = double(packed.packed->levels[2].positions) / double(random.nnz());
    EXPECT_DOUBLE_EQ(RowGroupPadding(random, rows, int64_t(1) << 30), stored) << rows;
    // A sample of a few hundred groups is within a few percent of it.
    EXPECT_NEAR(RowGroupPadding(random, rows, 256), stored, 0.05 * stored) << rows;
  }
}

// The cost model's summary inputs come from the cheap level; they must agree with the full one.
TEST(Stats, LinearLevelAgreesWithFullStatistics) {
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{300, 300}, {40, 30, 20}}) {
    const CooTensor t = testing::RandomSparse(dims, 2000, 11);
    const PatternStats full = ComputePatternStats(t);
    const PatternStats cheap = ComputePatternStats(t, StatsDetail::kLinear);
    EXPECT_EQ(cheap.row_min, full.row_min);
    EXPECT_EQ(cheap.row_max, full.row_max);
    EXPECT_DOUBLE_EQ(cheap.row_mean, full.row_mean);
    EXPECT_DOUBLE_EQ(cheap.row_stddev, full.row_stddev);
    EXPECT_EQ(cheap.empty_rows, full.empty_rows);
    EXPECT_EQ(cheap.bandwidth, full.bandwidth);
    EXPECT_DOUBLE_EQ(cheap.diagonal_fraction, full.diagonal_fraction);
    EXPECT_EQ(cheap.prefix_nnz, full.prefix_nnz);
    EXPECT_TRUE(cheap.tiles.empty());
    EXPECT_EQ(full.tiles.size(), std::size(kTileStatsSizes));
  }
}

struct FormatCase {
  std::vector<int64_t> dims;
  StorageFormat format;
};

// i1:U k:S i0:U, `lanes` rows a slice (SELL-8 by default).
StorageFormat Sell(int64_t lanes = 8) {
  StorageFormat f;
  f.split = {lanes, 1};
  f.levels = {{0, SplitPart::kOuter, LevelKind::kDense},
              {1, SplitPart::kWhole, LevelKind::kSliced},
              {0, SplitPart::kInner, LevelKind::kDense}};
  return f;
}

// i1:U k1:S i0:U k0:U: slices of 8 rows over blocks of 4 columns, a level below the lanes.
StorageFormat BlockedSell() {
  StorageFormat f;
  f.split = {8, 4};
  f.levels = {{0, SplitPart::kOuter, LevelKind::kDense},
              {1, SplitPart::kOuter, LevelKind::kSliced},
              {0, SplitPart::kInner, LevelKind::kDense},
              {1, SplitPart::kInner, LevelKind::kDense}};
  return f;
}

// Every U/C/S combination, level order and split of small random tensors packs and unpacks
// back to the same entries (padding zeros aside).
TEST(Pack, RoundTripOverRandomFormats) {
  std::mt19937_64 rng(42);
  int packed_count = 0, sliced_count = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int order = 2 + int(rng() % 2);
    std::vector<int64_t> dims;
    for (int m = 0; m < order; ++m) dims.push_back(1 + int64_t(rng() % 37));
    CooTensor t = testing::RandomSparse(dims, 1 + int64_t(rng() % 120), rng());
    StorageFormat f;
    std::vector<LevelSpec> levels;
    for (int m = 0; m < order; ++m) {
      const int64_t s = (rng() % 2) ? 1 : 1 + int64_t(rng() % 9);
      f.split.push_back(s);
      if (s == 1) {
        levels.push_back({m, SplitPart::kWhole, LevelKind::kDense});
      } else {
        levels.push_back({m, SplitPart::kOuter, LevelKind::kDense});
        levels.push_back({m, SplitPart::kInner, LevelKind::kDense});
      }
    }
    std::shuffle(levels.begin(), levels.end(), rng);
    for (auto& l : levels) l.kind = (rng() % 2) ? LevelKind::kDense : LevelKind::kCompressed;
    // A level right above a U level over the inner part of another mode may be sliced.
    for (size_t l = 0; l + 1 < levels.size(); ++l) {
      const LevelSpec& next = levels[l + 1];
      if (next.kind == LevelKind::kDense && next.part == SplitPart::kInner &&
          next.mode != levels[l].mode && rng() % 2 == 0) {
        levels[l].kind = LevelKind::kSliced;
        ++sliced_count;
        ++l;  // its lanes stay U
      }
    }
    f.levels = levels;
    PackOptions options;
    options.padding_cap = 1e9;
    options.narrow_coordinates = trial % 3 != 0;
    PackOutcome outcome = Pack(t, f, (trial % 2) ? DType::kF32 : DType::kF64, options);
    ASSERT_TRUE(outcome.packed) << outcome.refusal;
    ++packed_count;
    CooTensor back = Unpack(*outcome.packed);
    // Drop padding zeros, then compare.
    CooTensor nonzero;
    nonzero.Reset(dims);
    std::vector<int32_t> c(order);
    for (int64_t e = 0; e < back.nnz(); ++e) {
      if (back.values[e] == 0) continue;
      for (int m = 0; m < order; ++m) c[m] = back.coords[m][e];
      nonzero.Append(c.data(), back.values[e]);
    }
    CooTensor expected;
    expected.Reset(dims);
    for (int64_t e = 0; e < t.nnz(); ++e) {
      if (t.values[e] == 0) continue;
      for (int m = 0; m < order; ++m) c[m] = t.coords[m][e];
      expected.Append(c.data(), t.values[e]);
    }
    ASSERT_EQ(nonzero.coords, expected.coords) << f.Describe({"i", "j", "k"});
    for (int64_t e = 0; e < expected.nnz(); ++e) {
      ASSERT_NEAR(nonzero.values[e], expected.values[e], 1e-6);
    }
  }
  EXPECT_EQ(packed_count, 400);
  EXPECT_GT(sliced_count, 40);
}

// Packing splits large tensors across threads: the arrays must not depend on how many. The
// full row's lane run crosses several thread slices, and the lanes of the second format have a
// level below them.

TEST(Coo, CanonicalizeSortsTheSameWhenTheTeamIsSmallerThanAskedFor) {
  const CooTensor scattered = testing::RandomSparse({3000, 5000}, 300000, 5);
  CooTensor reversed;
  reversed.Reset(scattered.dims);
  for (int64_t e = scattered.nnz() - 1; e >= 0; --e) {
    int32_t c[2] = {scattered.coords[0][e], scattered.coords[1][e]};
    reversed.Append(c, scattered.values[e]);
  }
  CooTensor capped = reversed;
  testing::WithTeamsCappedAtOne([&] { capped.Canonicalize(); });
  reversed.Canonicalize();
  EXPECT_TRUE(capped.IsCanonical());
  EXPECT_EQ(capped.coords, reversed.coords);
  EXPECT_EQ(capped.values, reversed.values);
}

TEST(Pack, LargeTensorsPackTheSameWithOneThreadOrFour) {
  CooTensor t;
  t.Reset({4096, 100000});
  const CooTensor scattered = testing::RandomSparse({4096, 100000}, 200000, 17);
  for (int64_t e = 0; e < scattered.nnz(); ++e) {
    int32_t c[2] = {scattered.coords[0][e], scattered.coords[1][e]};
    if (c[0] != 1234) t.Append(c, scattered.values[e]);
  }
  for (int32_t j = 0; j < 100000; ++j) {
    int32_t c[2] = {1234, j};
    t.Append(c, 1.0 + j % 7);
  }
  t.Canonicalize();
  const StorageFormat sell = Sell(), blocked_sell = BlockedSell();
  StorageFormat grouped = StorageFormat::Csr();
  grouped.levels[1].group = 8;
  const int saved_threads = omp_get_max_threads();
  for (const StorageFormat& f : {StorageFormat::Csr(), sell, blocked_sell, grouped}) {
    SCOPED_TRACE(f.Describe({"i", "k"}));
    PackOptions options;
    options.padding_cap = 1e9;
    omp_set_num_threads(1);
    PackOutcome one = Pack(t, f, DType::kF32, options);
    omp_set_num_threads(4);
    PackOutcome four = Pack(t, f, DType::kF32, options);
    omp_set_num_threads(saved_threads);
    PackOutcome capped;
    testing::WithTeamsCappedAtOne([&] { capped = Pack(t, f, DType::kF32, options); });
    ASSERT_TRUE(one.packed && four.packed && capped.packed);
    EXPECT_EQ(capped.packed->values_f32, one.packed->values_f32);
    for (size_t l = 0; l < one.packed->levels.size(); ++l) {
      EXPECT_EQ(capped.packed->levels[l].pos, one.packed->levels[l].pos) << "level " << l;
      EXPECT_EQ(capped.packed->levels[l].crd_bytes, one.packed->levels[l].crd_bytes)
          << "level " << l;
    }
    ASSERT_EQ(one.packed->levels.size(), four.packed->levels.size());
    for (size_t l = 0; l < one.packed->levels.size(); ++l) {
      const PackedLevel &a = one.packed->levels[l], &b = four.packed->levels[l];
      EXPECT_EQ(a.positions, b.positions) << "level " << l;
      EXPECT_TRUE(std::equal(a.pos.begin(), a.pos.end(), b.pos.begin(), b.pos.end()));
      EXPECT_TRUE(std::equal(a.crd_bytes.begin(), a.crd_bytes.end(), b.crd_bytes.begin(),
                             b.crd_bytes.end()))
          << "level " << l;
      EXPECT_TRUE(std::equal(a.base.begin(), a.base.end(), b.base.begin(), b.base.end()));
    }
    EXPECT_TRUE(std::equal(one.packed->values_f32.begin(), one.packed->values_f32.end(),
                           four.packed->values_f32.begin(), four.packed->values_f32.end()));
    // And the four-thread packing holds exactly the tensor's entries.
    const CooTensor back = Unpack(*four.packed);
    int64_t nonzero = 0;
    double sum = 0;
    for (int64_t e = 0; e < back.nnz(); ++e) {
      nonzero += back.values[e] != 0;
      sum += back.values[e];
    }
    double expected_sum = 0;
    int64_t expected_nonzero = 0;
    for (double v : t.values) {
      expected_sum += static_cast<float>(v);
      expected_nonzero += static_cast<float>(v) != 0;
    }
    EXPECT_EQ(nonzero, expected_nonzero);
    EXPECT_NEAR(sum, expected_sum, 1e-6 * t.nnz());
  }
}

// Every level's arrays and the values, byte for byte.
void ExpectSameArrays(const PackedTensor& got, const PackedTensor& expected) {
  ASSERT_EQ(got.levels.size(), expected.levels.size());
  for (size_t l = 0; l < got.levels.size(); ++l) {
    const PackedLevel &a = got.levels[l], &b = expected.levels[l];
    EXPECT_EQ(a.kind, b.kind) << "level " << l;
    EXPECT_EQ(a.extent, b.extent) << "level " << l;
    EXPECT_EQ(a.positions, b.positions) << "level " << l;
    EXPECT_EQ(a.pos, b.pos) << "level " << l;
    EXPECT_EQ(a.encoding.Describe(), b.encoding.Describe()) << "level " << l;
    EXPECT_EQ(a.crd_bytes, b.crd_bytes) << "level " << l;
    EXPECT_EQ(a.base, b.base) << "level " << l;
  }
  EXPECT_EQ(got.values_f64, expected.values_f64);
}

// Rows renumbered without a copy of the entries pack into the same arrays as the renumbered
// copy does, whatever the format: rows whole (CSR, grouped), sliced with the lanes last or not,
// or sorted by columns first.
TEST(Pack, RenumberedRowsPackAsTheRenumberedCopy) {
  const CooTensor t = testing::RandomSparse({500, 300}, 6000, 23);
  MatrixOrdering ordering;
  ordering.rows.resize(t.dims[0]);
  std::iota(ordering.rows.begin(), ordering.rows.end(), 0);
  std::shuffle(ordering.rows.begin(), ordering.rows.end(), std::mt19937_64(5));
  ordering.Invert();
  const RenumberedRows renumbered = RenumberRows(t, ordering);
  const CooTensor copy = PermuteMatrix(t, ordering);
  const StorageFormat sell = Sell(), blocked_sell = BlockedSell();
  StorageFormat grouped = StorageFormat::Csr();
  grouped.levels[1].group = 4;
  StorageFormat by_column;  // k:U i:C
  by_column.split = {1, 1};
  by_column.levels = {{1, SplitPart::kWhole, LevelKind::kDense},
                      {0, SplitPart::kWhole, LevelKind::kCompressed}};
  for (const StorageFormat& f : {StorageFormat::Csr(), sell, blocked_sell, grouped, by_column}) {
    SCOPED_TRACE(f.Describe({"i", "k"}));
    const PackOutcome expected = Pack(copy, f, DType::kF64);
    const PackOutcome got = Pack(t, f, DType::kF64, PackOptions{}, &renumbered);
    ASSERT_TRUE(expected.packed && got.packed);
    ExpectSameArrays(*got.packed, *expected.packed);
  }
}

// SELL takes the renumbered rows straight from the canonical entries, one lane each, with no
// renumbered copy: the same arrays as the copy's, with any number of threads, also with empty
// rows and a last slice that the rows do not fill.
TEST(Pack, SellTakesRenumberedRowsInOrder) {
  CooTensor t;
  t.Reset({20003, 7000});  // entries enough for several threads
  std::mt19937_64 rng(7);
  for (int32_t r = 0; r < 20003; ++r) {
    const int32_t count = r % 11 == 0 ? 0 : int32_t(rng() % (r % 7 == 0 ? 90 : 9));
    std::set<int32_t> cols;
    while (int32_t(cols.size()) < count) cols.insert(int32_t(rng() % 7000));
    for (int32_t c : cols) {
      const int32_t at[2] = {r, c};
      t.Append(at, 1.0 + double(rng() % 13));
    }
  }
  t.Canonicalize();
  // Rows by decreasing length, as the row-degree ordering puts them.
  std::vector<int64_t> length(t.dims[0], 0);
  for (int64_t e = 0; e < t.nnz(); ++e) ++length[t.coords[0][e]];
  MatrixOrdering ordering;
  ordering.old_rows.resize(t.dims[0]);
  std::iota(ordering.old_rows.begin(), ordering.old_rows.end(), 0);
  std::stable_sort(ordering.old_rows.begin(), ordering.old_rows.end(),
                   [&](int32_t a, int32_t b) { return length[a] > length[b]; });
  ordering.rows.resize(t.dims[0]);
  for (int32_t r = 0; r < int32_t(t.dims[0]); ++r) ordering.rows[ordering.old_rows[r]] = r;
  const CooTensor copy = PermuteMatrix(t, ordering);
  EXPECT_FALSE(PacksRowsInOrder(StorageFormat::Csr()));
  EXPECT_FALSE(PacksRowsInOrder(BlockedSell()));
  const int saved_threads = omp_get_max_threads();
  for (const StorageFormat& f : {Sell(8), Sell(16)}) {
    ASSERT_TRUE(PacksRowsInOrder(f));
    for (bool narrow : {true, false}) {
      PackOptions options;
      options.narrow_coordinates = narrow;
      const PackOutcome expected = Pack(copy, f, DType::kF64, options);
      ASSERT_TRUE(expected.packed) << expected.refusal;
      for (int threads : {1, 2, 4}) {
        SCOPED_TRACE(f.Describe({"i", "k"}) + (narrow ? " narrow, " : ", ") +
                     std::to_string(threads) + " threads");
        omp_set_num_threads(threads);
        const PackOutcome got = PackRowsInOrder(t, f, DType::kF64, options, ordering);
        omp_set_num_threads(saved_threads);
        ASSERT_TRUE(got.packed) << got.refusal;
        ExpectSameArrays(*got.packed, *expected.packed);
      }
    }
  }
}

// 2-D blocks sort the entries by block column within each block row: large enough, each block
// row is sorted on its own, a row of blocks per thread. The packing holds exactly the entries,
// with any number of threads.
TEST(Pack, BlockRowsSortedOneByOneHoldTheEntries) {
  const CooTensor t = testing::RandomSparse({20000, 30000}, 400000, 31);
  StorageFormat blocks;  // i1:U k1:C k0:C i0:Q
  blocks.split = {1024, 2048};
  blocks.levels = {{0, SplitPart::kOuter, LevelKind::kDense},
                   {1, SplitPart::kOuter, LevelKind::kCompressed},
                   {1, SplitPart::kInner, LevelKind::kCompressed},
                   {0, SplitPart::kInner, LevelKind::kSingleton}};
  const int saved_threads = omp_get_max_threads();
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE(threads);
    omp_set_num_threads(threads);
    const PackOutcome packed = Pack(t, blocks, DType::kF64);
    omp_set_num_threads(saved_threads);
    ASSERT_TRUE(packed.packed) << packed.refusal;
    const CooTensor back = Unpack(*packed.packed);
    EXPECT_EQ(back.coords, t.coords);
    EXPECT_EQ(back.values, t.values);
    // Sorted: each block row holds each of its block columns once, in order (unsorted entries
    // unpack the same but repeat them).
    std::set<std::pair<int32_t, int32_t>> block_columns;
    for (int64_t e = 0; e < t.nnz(); ++e)
      block_columns.insert({t.coords[0][e] / 1024, t.coords[1][e] / 2048});
    EXPECT_EQ(packed.packed->levels[1].positions, int64_t(block_columns.size()));
    const PackedLevel& level = packed.packed->levels[1];
    for (int64_t p = 0; p + 1 < int64_t(level.pos.size()); ++p) {
      for (int64_t q = level.pos[p] + 1; q < level.pos[p + 1]; ++q)
        ASSERT_LT(level.Coordinate(p, q - 1), level.Coordinate(p, q));
    }
  }
}

// Formats one stable sort by a single level puts in order (column segments, CSC) move each
// entry's coordinates and rank with it: the packing holds exactly the entries with any number
// of threads, and each entry's value position (what update_values writes through) is its own.
TEST(Pack, SortedByOneKeyHoldTheEntriesAndTheirPositions) {
  const CooTensor t = testing::RandomSparse({3000, 200000}, 300000, 41);
  StorageFormat segments;  // k1:U i:C k0:C
  segments.split = {1, 8192};
  segments.levels = {{1, SplitPart::kOuter, LevelKind::kDense},
                     {0, SplitPart::kWhole, LevelKind::kCompressed},
                     {1, SplitPart::kInner, LevelKind::kCompressed}};
  StorageFormat csc;  // k:U i:C
  csc.split = {1, 1};
  csc.levels = {{1, SplitPart::kWhole, LevelKind::kDense},
                {0, SplitPart::kWhole, LevelKind::kCompressed}};
  const int saved_threads = omp_get_max_threads();
  for (const StorageFormat& f : {segments, csc}) {
    for (int threads : {1, 2, 4}) {
      SCOPED_TRACE(f.Describe({"i", "k"}) + ", " + std::to_string(threads) + " threads");
      omp_set_num_threads(threads);
      const PackOutcome packed = Pack(t, f, DType::kF64);
      packer::Layout layout;
      layout.dims = t.dims;
      layout.split = f.split;
      for (const LevelSpec& spec : f.levels)
        layout.levels.push_back(
            {spec.mode, static_cast<int>(spec.part), static_cast<int>(spec.kind), spec.group});
      const int32_t* coords[] = {t.coords[0].data(), t.coords[1].data()};
      packer::LevelPacker<> levels(layout, packer::Options{}, t.nnz(), coords);
      ASSERT_TRUE(levels.Run()) << levels.Refusal();
      const auto positions = levels.EntryPositions();
      omp_set_num_threads(saved_threads);
      ASSERT_TRUE(packed.packed) << packed.refusal;
      const CooTensor back = Unpack(*packed.packed);
      EXPECT_EQ(back.coords, t.coords);
      EXPECT_EQ(back.values, t.values);
      ASSERT_EQ(positions.size(), size_t(t.nnz()));  // not the identity: the order changed
      for (int64_t e = 0; e < t.nnz(); ++e)
        ASSERT_EQ(packed.packed->values_f64[positions[e]], t.values[e]) << "entry " << e;
    }
  }
}

// The levels and values a packer built straight from entries in canonical order, against
// those the sorting path builds (taken by giving the packer the canonical order explicitly);
// refused alike, as the sorting path words it.
void ExpectPackedAsBySorting(const CooTensor& m, const packer::Layout& layout,
                             const packer::Options& options) {
  std::vector<int32_t> identity(m.nnz());
  std::iota(identity.begin(), identity.end(), 0);
  const int32_t* coords[] = {m.coords[0].data(), m.coords[1].data()};
  packer::LevelPacker<> direct(layout, options, m.nnz(), coords);
  packer::LevelPacker<> sorted(layout, options, m.nnz(), coords, identity.data());
  const bool packed = direct.Run();
  ASSERT_EQ(packed, sorted.Run());
  if (!packed) {
    EXPECT_EQ(direct.Refusal(), sorted.Refusal());
    return;
  }
  ASSERT_EQ(direct.Levels().size(), sorted.Levels().size());
  for (size_t l = 0; l < direct.Levels().size(); ++l) {
    const auto &a = direct.Levels()[l], &b = sorted.Levels()[l];
    EXPECT_EQ(a.kind, b.kind) << "level " << l;
    EXPECT_EQ(a.positions, b.positions) << "level " << l;
    EXPECT_EQ(a.pos, b.pos) << "level " << l;
    EXPECT_EQ(a.encoding.bits, b.encoding.bits) << "level " << l;
    EXPECT_EQ(a.encoding.relative, b.encoding.relative) << "level " << l;
    EXPECT_EQ(a.crd, b.crd) << "level " << l;
    EXPECT_EQ(a.base, b.base) << "level " << l;
  }
  EXPECT_EQ(direct.EntryPositions(), sorted.EntryPositions());
  std::vector<double> direct_values, sorted_values;
  direct.ScatterValues(direct_values, m.values.data());
  sorted.ScatterValues(sorted_values, m.values.data());
  EXPECT_EQ(direct_values, sorted_values);
}

// A random matrix, one with a dense row across every column block and empty rows at both ends,
// and a band.
std::vector<CooTensor> MatricesToPackDirectly() {
  CooTensor t = testing::RandomSparse({3000, 50000}, 120000, 43);
  CooTensor with_hub, band;
  with_hub.Reset({3000, 50000});
  for (int64_t e = 0; e < t.nnz(); ++e) {
    int32_t c[2] = {t.coords[0][e], t.coords[1][e]};
    if (c[0] != 1500 && c[0] > 3 && c[0] < 2990) with_hub.Append(c, t.values[e]);
  }
  for (int32_t j = 0; j < 50000; j += 3) {
    int32_t c[2] = {1500, j};
    with_hub.Append(c, 1.0);
  }
  with_hub.Canonicalize();
  band.Reset({3000, 6040});
  for (int32_t i = 0; i < 3000; ++i) {
    for (int32_t j = 2 * i; j < 2 * i + 40; j += 1 + i % 3) {
      int32_t c[2] = {i, j};
      band.Append(c, 0.5 + j % 5);
    }
  }
  band.Canonicalize();
  std::vector<CooTensor> matrices;
  matrices.push_back(std::move(t));
  matrices.push_back(std::move(with_hub));
  matrices.push_back(std::move(band));
  return matrices;
}

// Encodings 0: chosen; 1 and 2: given, 2 with some that the coordinates do not fit.
packer::Options EncodingsNumbered(int encodings, std::vector<packer::Encoding> first,
                                  std::vector<packer::Encoding> second) {
  packer::Options options;
  options.choose_encodings = encodings == 0;
  if (encodings == 1) options.encodings = first;
  if (encodings == 2) options.encodings = second;
  return options;
}

// Column segments and column blocks (k1:U i:C k0:C, k1:U i:U k0:C) are packed without a sort;
// the arrays are the sorting path's, whatever the split, the encodings or the threads.
TEST(Pack, ColumnSegmentsPackedWithoutSortingMatchTheSortingPath) {
  const int saved_threads = omp_get_max_threads();
  for (const CooTensor& m : MatricesToPackDirectly()) {
    for (int64_t width : {int64_t(4096), int64_t(1000), int64_t(200)}) {
      for (int row_kind : {packer::kCompressedLevel, packer::kDenseLevel}) {
        for (int threads : {1, 2, 3}) {
          for (int encodings = 0; encodings < 3; ++encodings) {
            SCOPED_TRACE("width " + std::to_string(width) + ", row kind " +
                         std::to_string(row_kind) + ", " + std::to_string(threads) +
                         " threads, encodings " + std::to_string(encodings));
            omp_set_num_threads(threads);
            const packer::Layout layout{m.dims,
                                        {1, width},
                                        {{1, packer::kOuterPart, packer::kDenseLevel, 1},
                                         {0, packer::kWholeMode, row_kind, 1},
                                         {1, packer::kInnerPart, packer::kCompressedLevel, 1}}};
            ExpectPackedAsBySorting(m, layout,
                                    EncodingsNumbered(encodings, {{}, {16, true}, {16, false}},
                                                      {{}, {32, false}, {8, true}}));
          }
        }
      }
    }
  }
  omp_set_num_threads(saved_threads);
}

// Blocks as coordinate lists (i1:U k1:C k0:C i0:Q) are packed block row by block row, a band's
// counted into place by column, others' blocks sorted (few entries by comparison, more by
// radix); the arrays are the sorting path's either way, with splits by powers of two or not,
// any encodings and threads.
TEST(Pack, BlockCoordinatesPackedWithoutSortingMatchTheSortingPath) {
  const int saved_threads = omp_get_max_threads();
  for (const CooTensor& m : MatricesToPackDirectly()) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1024, 16384},
                              {16, 4096},
                              {100, 3000},
                              {3000, 200},
                              {500, 256}}) {
      for (int threads : {1, 2, 3}) {
        for (int encodings = 0; encodings < 3; ++encodings) {
          SCOPED_TRACE("blocks " + std::to_string(rows) + " x " + std::to_string(cols) + ", " +
                       std::to_string(threads) + " threads, encodings " +
                       std::to_string(encodings));
          omp_set_num_threads(threads);
          const packer::Layout layout{m.dims,
                                      {rows, cols},
                                      {{0, packer::kOuterPart, packer::kDenseLevel, 1},
                                       {1, packer::kOuterPart, packer::kCompressedLevel, 1},
                                       {1, packer::kInnerPart, packer::kCompressedLevel, 1},
                                       {0, packer::kInnerPart, packer::kSingletonLevel, 1}}};
          ExpectPackedAsBySorting(
              m, layout,
              EncodingsNumbered(encodings, {{}, {8, true}, {16, true}, {16, false}},
                                {{}, {8, false}, {8, true}, {8, false}}));
        }
      }
    }
  }
  omp_set_num_threads(saved_threads);
}

TEST(Pack, CsrArrays) {
  CooTensor t;
  t.Reset({3, 4});
  for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 1}, {0, 3}, {2, 0}}) {
    int32_t c[2] = {i, j};
    t.Append(c, i + j);
  }
  t.Canonicalize();
  PackOutcome o = Pack(t, StorageFormat::Csr(), DType::kF64);
  ASSERT_TRUE(o.packed);
  const auto& level = o.packed->levels[1];
  EXPECT_EQ(std::vector<int32_t>(level.pos.begin(), level.pos.end()),
            (std::vector<int32_t>{0, 2, 2, 3}));
  // Four columns fit in 8 bits.
  EXPECT_EQ(level.encoding, (CoordinateEncoding{8, false}));
  const std::vector<int64_t> parents = {0, 0, 2};
  for (int64_t q = 0; q < 3; ++q)
    EXPECT_EQ(level.Coordinate(parents[q], q), (std::vector<int64_t>{1, 3, 0})[q]);
  EXPECT_EQ(std::vector<double>(o.packed->values_f64.begin(), o.packed->values_f64.end()),
            (std::vector<double>{1, 3, 2}));
}

TEST(Pack, NarrowsCoordinatesToTheFewestBytes) {
  // Wide rows need 32 bits; a band far from column 0 fits 8-bit offsets from each row's first
  // column; 60000 columns fit 16 bits absolute.
  auto encoding_of = [](int64_t cols, int span, int64_t offset) {
    CooTensor t;
    t.Reset({100, cols});
    for (int i = 0; i < 100; ++i) {
      for (int d = 0; d < 4; ++d) {
        int32_t c[2] = {i, static_cast<int32_t>((offset + i * 7 + d * span / 4) % cols)};
        t.Append(c, 1.0 + d);
      }
    }
    t.Canonicalize();
    PackOutcome o = Pack(t, StorageFormat::Csr(), DType::kF32);
    EXPECT_TRUE(o.packed);
    const PackedLevel& level = o.packed->levels[1];
    // Whatever the encoding, every coordinate reads back.
    for (int64_t p = 0; p < 100; ++p) {
      for (int64_t q = level.pos[p]; q < level.pos[p + 1]; ++q)
        EXPECT_EQ(level.Coordinate(p, q), t.coords[1][q]);
    }
    return level.encoding;
  };
  EXPECT_EQ(encoding_of(3000000, 200, 1000000), (CoordinateEncoding{8, true}));
  EXPECT_EQ(encoding_of(3000000, 40000, 1000000), (CoordinateEncoding{16, true}));
  EXPECT_EQ(encoding_of(60000, 40000, 0), (CoordinateEncoding{16, false}));
  EXPECT_EQ(encoding_of(3000000, 2000000, 0), (CoordinateEncoding{32, false}));
  // Narrowing can be turned off.
  CooTensor small = testing::RandomSparse({50, 50}, 200, 9);
  PackOptions wide;
  wide.narrow_coordinates = false;
  EXPECT_EQ(Pack(small, StorageFormat::Csr(), DType::kF32, wide).packed->levels[1].encoding,
            (CoordinateEncoding{32, false}));
}

TEST(Pack, RefusesPaddingOverTheCap) {
  CooTensor t = testing::RandomSparse({1000, 1000}, 50, 3);
  StorageFormat dense;
  dense.split = {1, 1};
  dense.levels = {{0, SplitPart::kWhole, LevelKind::kDense},
                  {1, SplitPart::kWhole, LevelKind::kDense}};
  PackOutcome o = Pack(t, dense, DType::kF32);
  EXPECT_FALSE(o.packed);
  EXPECT_NE(o.refusal.find("padding cap"), std::string::npos) << o.refusal;
  // CSR of the same hypersparse matrix is always allowed.
  EXPECT_TRUE(Pack(t, StorageFormat::Csr(), DType::kF32).packed);
}

TEST(Pack, RejectsMalformedFormat) {
  CooTensor t = testing::RandomSparse({10, 10}, 5, 3);
  StorageFormat f = StorageFormat::Csr();
  f.split = {4, 1};  // split mode 0 but only one level for it
  PackOutcome o = Pack(t, f, DType::kF32);
  EXPECT_FALSE(o.packed);
  EXPECT_NE(o.refusal.find("mode 0"), std::string::npos) << o.refusal;
}

}  // namespace
}  // namespace sparsetune
