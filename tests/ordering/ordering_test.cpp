// Orderings are permutations of the right kind, reproducible, and do what each promises on a
// pattern built to show it: RCM narrows a scrambled band, degree puts hubs first, partitions and
// communities gather planted groups. What emitted kernels compute (pattern_ordering.hpp from
// entries in any order, libsparsetune_orderings from the graph) is the same permutation.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "base/errors.hpp"
#include "ordering/ordering.hpp"
#include "ordering/pattern_ordering.hpp"
#include "support/test_data.hpp"

// libsparsetune_orderings' C function, as an emitted kernel calls it.
extern "C" int sparsetune_order_graph(int kind, int64_t n, const int32_t* start,
                                      const int32_t* neighbours, int32_t* new_of_old, char* error,
                                      int64_t error_size);

namespace sparsetune {
namespace {

CooTensor FromEdges(int64_t n, const std::vector<std::pair<int32_t, int32_t>>& edges) {
  CooTensor t;
  t.Reset({n, n});
  for (auto [a, b] : edges) {
    const int32_t ab[2] = {a, b}, ba[2] = {b, a};
    t.Append(ab, 1.0);
    t.Append(ba, 1.0);
  }
  t.Canonicalize();
  return t;
}

// A band of half-width 3 over n vertices, relabelled at random.
CooTensor ScrambledBand(int64_t n, std::vector<int32_t>* label) {
  label->resize(n);
  std::iota(label->begin(), label->end(), 0);
  std::shuffle(label->begin(), label->end(), std::mt19937(7));
  std::vector<std::pair<int32_t, int32_t>> edges;
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t w = v + 1; w <= std::min<int64_t>(n - 1, v + 3); ++w)
      edges.push_back({(*label)[v], (*label)[w]});
  }
  return FromEdges(n, edges);
}

int64_t Bandwidth(const CooTensor& t) {
  int64_t width = 0;
  for (int64_t e = 0; e < t.nnz(); ++e)
    width = std::max<int64_t>(width, std::abs(int64_t(t.coords[0][e]) - t.coords[1][e]));
  return width;
}

bool IsPermutation(const std::vector<int32_t>& p, int64_t n) {
  if (static_cast<int64_t>(p.size()) != n) return false;
  std::vector<int32_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < n; ++k) {
    if (sorted[k] != k) return false;
  }
  return true;
}

// Renumbering rows and columns of a canonical matrix keeps every entry and its value, and leaves
// the matrix canonical, for rows short and long (a row of 3000 entries beside rows of 1 to 100).
TEST(Renumbering, KeepsEveryEntryOfShortAndLongRows) {
  const int64_t n = 4000;
  std::mt19937 rng(11);
  CooTensor t;
  t.Reset({n, n});
  for (int64_t r = 0; r < n; ++r) {
    const int64_t length = r == 17 ? 3000 : 1 + static_cast<int64_t>(rng() % 100);
    for (int64_t q = 0; q < length; ++q) {
      const int32_t rc[2] = {static_cast<int32_t>(r), static_cast<int32_t>(rng() % n)};
      t.Append(rc, static_cast<double>(rng() % 1000) + 0.5);
    }
  }
  t.Canonicalize();
  MatrixOrdering o;
  o.rows.resize(n);
  o.cols.resize(n);
  std::iota(o.rows.begin(), o.rows.end(), 0);
  std::iota(o.cols.begin(), o.cols.end(), 0);
  std::shuffle(o.rows.begin(), o.rows.end(), rng);
  std::shuffle(o.cols.begin(), o.cols.end(), rng);
  o.Invert();
  const CooTensor renumbered = PermuteMatrix(t, o);
  CooTensor expected = t;
  for (auto& r : expected.coords[0]) r = o.rows[r];
  for (auto& c : expected.coords[1]) c = o.cols[c];
  expected.Canonicalize();
  ASSERT_TRUE(renumbered.IsCanonical());
  EXPECT_EQ(renumbered.coords, expected.coords);
  EXPECT_EQ(renumbered.values, expected.values);
}

TEST(Ordering, EveryKindIsAPermutationSymmetricButRowDegreeAndReproducible) {
  std::vector<int32_t> label;
  const CooTensor band = ScrambledBand(3000, &label);
  for (OrderingKind kind : AllOrderings()) {
    SCOPED_TRACE(OrderingName(kind));
    const MatrixOrdering o = ComputeOrdering(band, kind);
    EXPECT_TRUE(IsPermutation(o.rows, 3000));
    EXPECT_EQ(RenumbersColumns(kind, 3000, 3000), !o.cols.empty());
    if (kind == OrderingKind::kRowDegree) {
      EXPECT_TRUE(o.cols.empty());  // the columns keep their numbering
    } else {
      EXPECT_EQ(o.cols, o.rows);  // square: columns follow rows
    }
    EXPECT_EQ(ComputeOrdering(band, kind).rows, o.rows);
    const CooTensor permuted = PermuteMatrix(band, o);
    EXPECT_TRUE(permuted.IsCanonical());
    EXPECT_EQ(permuted.nnz(), band.nnz());
    // Entry (r, c) moved to (rows[r], cols[c]) with its value.
    EXPECT_EQ(Bandwidth(PermuteMatrix(permuted, MatrixOrdering{})), Bandwidth(permuted));
  }
  OrderingKind kind;
  EXPECT_TRUE(ParseOrdering("community", &kind));
  EXPECT_EQ(kind, OrderingKind::kCommunity);
  EXPECT_FALSE(ParseOrdering("metis", &kind));
}

TEST(Ordering, RcmRecoversANarrowBand) {
  std::vector<int32_t> label;
  const CooTensor band = ScrambledBand(5000, &label);
  ASSERT_GT(Bandwidth(band), 1000);
  const CooTensor ordered = PermuteMatrix(band, ComputeOrdering(band, OrderingKind::kRcm));
  EXPECT_LE(Bandwidth(ordered), 12);
}

TEST(Ordering, RcmHandlesManyComponentsAndIsolatedVertices) {
  // 20,000 vertices: pairs joined by one edge, and isolated ones (no entries at all).
  std::vector<std::pair<int32_t, int32_t>> edges;
  for (int32_t v = 0; v + 1 < 10000; v += 2) edges.push_back({v, v + 1});
  const CooTensor t = FromEdges(20000, edges);
  const MatrixOrdering o = ComputeOrdering(t, OrderingKind::kRcm);
  EXPECT_TRUE(IsPermutation(o.rows, 20000));
  EXPECT_EQ(Bandwidth(PermuteMatrix(t, o)), 1);
}

TEST(Ordering, DegreePutsTheBusiestRowsFirst) {
  CooTensor t = testing::RandomSparse({400, 300}, 2000, 3);
  // Row 250 full: the hub.
  for (int32_t c = 0; c < 300; ++c) {
    const int32_t rc[2] = {250, c};
    t.Append(rc, 1.0);
  }
  t.Canonicalize();
  const MatrixOrdering o = ComputeOrdering(t, OrderingKind::kDegree);
  EXPECT_EQ(o.rows[250], 0);
  EXPECT_TRUE(o.cols.empty());  // rectangular: rows only
  EXPECT_TRUE(IsPermutation(o.rows, 400));
}

TEST(Ordering, RowDegreeSortsTheRowsByTheirOwnNonzerosAndLeavesTheColumns) {
  CooTensor t = testing::RandomSparse({300, 300}, 1500, 4);
  // Row 17 full: the longest row. Column 200 full: a hub column, which the symmetric degree
  // ordering would count for row 200 too, and row-degree does not.
  for (int32_t k = 0; k < 300; ++k) {
    const int32_t in_row[2] = {17, k};
    const int32_t in_column[2] = {k, 200};
    t.Append(in_row, 1.0);
    t.Append(in_column, 1.0);
  }
  t.Canonicalize();
  const MatrixOrdering o = ComputeOrdering(t, OrderingKind::kRowDegree);
  EXPECT_EQ(o.rows[17], 0);
  EXPECT_TRUE(o.cols.empty());  // square, and still the columns keep their numbering
  ASSERT_TRUE(IsPermutation(o.rows, 300));
  // Rows by decreasing nonzeros within each thread's share, and each row in its own share.
  std::vector<uint32_t> degree(300, 0);
  for (int64_t e = 0; e < t.nnz(); ++e) ++degree[t.coords[0][e]];
  const std::vector<int64_t> bounds = pattern_ordering::RowDegreeShares(degree);
  auto share_of = [&](int64_t row) {
    return std::upper_bound(bounds.begin(), bounds.end(), row) - bounds.begin();
  };
  std::vector<int> length(300, 0);
  for (int64_t e = 0; e < t.nnz(); ++e) ++length[o.rows[t.coords[0][e]]];
  for (int r = 1; r < 300; ++r) {
    if (share_of(r) == share_of(r - 1)) {
      ASSERT_GE(length[r - 1], length[r]) << r;
    }
  }
  for (int r = 0; r < 300; ++r) ASSERT_EQ(share_of(o.rows[r]), share_of(r)) << r;
  EXPECT_GT(o.rows[200], 1);                                          // not for its column
  EXPECT_LE(ComputeOrdering(t, OrderingKind::kDegree).rows[200], 1);  // symmetric: near the top
  EXPECT_EQ(OrderingRefusal(testing::RandomSparse({40, 90}, 300, 6), OrderingKind::kRowDegree), "");
}

TEST(Ordering, RowDegreeKeepsEachRowInItsWindow) {
  // Windows of three, three and two rows: each sorted by decreasing degree, ties in order, none
  // crossed.
  EXPECT_EQ(pattern_ordering::ByDecreasingDegreeWithin({1, 3, 2, 5, 4, 0, 2, 2}, {0, 3, 6, 8}),
            (std::vector<int32_t>{2, 0, 1, 3, 4, 5, 6, 7}));
  // One window holding every row is the sort over all of them.
  EXPECT_EQ(pattern_ordering::ByDecreasingDegreeWithin({1, 3, 2, 5}, {0, 4}),
            (std::vector<int32_t>{3, 1, 2, 0}));
}

// The shares hold equal work (a row's nonzeros plus one, as the balanced partition counts it):
// rows of skewed lengths split where the work does, not in the middle of the rows.
TEST(Ordering, RowDegreeSharesHoldEqualWork) {
  const std::vector<uint32_t> degree = {9, 9, 9, 1, 1, 1, 1, 1, 1, 1};  // work 10 x 3, 2 x 7
  const std::vector<int64_t> bounds = pattern_ordering::RowDegreeShares(degree);
  const int threads = omp_get_max_threads();
  ASSERT_EQ(bounds.size(), size_t(threads) + 1);
  EXPECT_EQ(bounds.front(), 0);
  EXPECT_EQ(bounds.back(), 10);
  EXPECT_TRUE(std::is_sorted(bounds.begin(), bounds.end()));
  // Work 20 of 44 before row 2 and 30 before row 3: the second share starts at row 3, where
  // shares of equal rows would split at row 5.
  if (threads == 2) {
    EXPECT_EQ(bounds[1], 3);
  }
}

// Large enough (at least 2^16 entries, 4 a row) that each
// thread counts its share of the entries: the permutations are those of one serial count,
// rows by decreasing degree with ties in their original order (for row-degree, within each
// thread's share of the rows).
TEST(Ordering, DegreeOrderingsOfALargePatternCountEveryEntryOnce) {
  const int64_t n = 5000;
  CooTensor t = testing::RandomSparse({n, n}, 150000, 11);
  // A few hubs, so that the degrees are far from uniform.
  for (int32_t hub : {17, 2500, 4999}) {
    for (int32_t k = 0; k < n; k += 3) {
      const int32_t rc[2] = {hub, k};
      t.Append(rc, 1.0);
    }
  }
  t.Canonicalize();
  for (bool symmetric : {false, true}) {
    SCOPED_TRACE(symmetric ? "degree" : "row-degree");
    std::vector<int64_t> degree(n, 0);
    for (int64_t e = 0; e < t.nnz(); ++e) {
      ++degree[t.coords[0][e]];
      if (symmetric) ++degree[t.coords[1][e]];
    }
    std::vector<int32_t> old_of_new(n);
    std::iota(old_of_new.begin(), old_of_new.end(), 0);
    std::vector<uint32_t> row_degree(degree.begin(), degree.end());
    const std::vector<int64_t> bounds =
        symmetric ? std::vector<int64_t>{0, n} : pattern_ordering::RowDegreeShares(row_degree);
    for (size_t w = 0; w + 1 < bounds.size(); ++w) {
      std::stable_sort(old_of_new.begin() + bounds[w], old_of_new.begin() + bounds[w + 1],
                       [&](int32_t a, int32_t b) { return degree[a] > degree[b]; });
    }
    const MatrixOrdering o =
        ComputeOrdering(t, symmetric ? OrderingKind::kDegree : OrderingKind::kRowDegree);
    EXPECT_EQ(o.rows, pattern_ordering::Inverse(old_of_new));
  }
}

TEST(Ordering, PartitionsAndCommunitiesGatherPlantedGroups) {
  // 8 groups of 4096 vertices (METIS parts hold 4096), dense inside, 20 edges between groups;
  // labels scrambled. A good ordering puts each group in a contiguous run.
  const int groups = 8, size = 4096;
  std::vector<int32_t> label(groups * size);
  std::iota(label.begin(), label.end(), 0);
  std::mt19937 rng(3);
  std::shuffle(label.begin(), label.end(), rng);
  std::vector<std::pair<int32_t, int32_t>> edges;
  for (int g = 0; g < groups; ++g) {
    for (int e = 0; e < size * 6; ++e)
      edges.push_back({label[g * size + rng() % size], label[g * size + rng() % size]});
  }
  for (int e = 0; e < 20; ++e)
    edges.push_back({label[rng() % (groups * size)], label[rng() % (groups * size)]});
  const CooTensor t = FromEdges(groups * size, edges);
  for (OrderingKind kind : {OrderingKind::kPartition, OrderingKind::kCommunity}) {
    SCOPED_TRACE(OrderingName(kind));
    const MatrixOrdering o = ComputeOrdering(t, kind);
    // Count the runs: consecutive new positions whose vertices come from different groups.
    std::vector<int> group_at(groups * size);
    for (int g = 0; g < groups; ++g) {
      for (int k = 0; k < size; ++k) group_at[o.rows[label[g * size + k]]] = g;
    }
    int changes = 0;
    for (int k = 1; k < groups * size; ++k) changes += group_at[k] != group_at[k - 1];
    // Scrambled: about 35,000 changes; grouped: a few per group.
    EXPECT_LT(changes, groups * 8) << changes;
  }
}

TEST(Ordering, RefusesTensorsAndRectangularSymmetricOrderings) {
  const CooTensor tensor = testing::RandomSparse({20, 17, 23}, 600, 6);
  EXPECT_THROW(ComputeOrdering(tensor, OrderingKind::kDegree), InputError);
  const CooTensor wide = testing::RandomSparse({40, 90}, 300, 6);
  EXPECT_NE(OrderingRefusal(wide, OrderingKind::kRcm).find("square"), std::string::npos);
  EXPECT_THROW(ComputeOrdering(wide, OrderingKind::kPartition), InputError);
  EXPECT_TRUE(ComputeOrdering(wide, OrderingKind::kNone).identity());
}

// An emitted kernel gets the permutation tune got: it orders entries given in any order with the
// code it carries, and the graph of A + A^T through libsparsetune_orderings.
TEST(Ordering, EmittedKernelsComputeTheLibrarysPermutation) {
  const CooTensor t = testing::RandomSparse({5000, 5000}, 25000, 17);
  std::vector<int64_t> shuffled(t.nnz());
  std::iota(shuffled.begin(), shuffled.end(), 0);
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(3));
  std::vector<int32_t> rows, cols;
  for (int64_t e : shuffled) {
    rows.push_back(t.coords[0][e]);
    cols.push_back(t.coords[1][e]);
  }
  auto order_graph = [](int kind, const pattern_ordering::Adjacency& g,
                        std::vector<int32_t>* new_of_old, std::string* refusal) {
    new_of_old->resize(g.n);
    char error[256] = "";
    const int status = sparsetune_order_graph(kind, g.n, g.start.data(), g.neighbours.data(),
                                              new_of_old->data(), error, sizeof error);
    *refusal = error;
    return status == 0;
  };
  for (OrderingKind kind : AllOrderings()) {
    SCOPED_TRACE(OrderingName(kind));
    std::vector<int32_t> new_rows, new_cols;
    std::string refusal;
    ASSERT_TRUE(pattern_ordering::OrderMatrix(static_cast<int>(kind), 5000, 5000, t.nnz(),
                                              rows.data(), cols.data(), order_graph, &new_rows,
                                              &new_cols, &refusal))
        << refusal;
    const MatrixOrdering library = ComputeOrdering(t, kind);
    EXPECT_EQ(new_rows, library.rows);
    EXPECT_EQ(new_cols, library.cols);
  }
  char error[256] = "";
  const int32_t start[] = {0};
  EXPECT_EQ(sparsetune_order_graph(1, 0, start, nullptr, nullptr, error, sizeof error), -1);
  EXPECT_NE(std::string(error).find("neither partition (3) nor community (4)"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace sparsetune
