// The order an emitted kernel's packer puts a user's entries in: lexicographic over the modes,
// whatever order they come in (none when they come in it), with duplicates and out-of-range
// coordinates refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tensor/level_packer.hpp"

namespace sparsetune {
namespace {

struct Entries {
  std::vector<int64_t> dims;
  std::vector<std::vector<int32_t>> coords;  // coords[mode][entry]
  int64_t nnz() const { return static_cast<int64_t>(coords[0].size()); }
  std::vector<const int32_t*> pointers() const {
    std::vector<const int32_t*> p;
    for (const auto& mode : coords) p.push_back(mode.data());
    return p;
  }
};

// nnz distinct random entries of a tensor of these dims, in random order.
Entries Random(std::vector<int64_t> dims, int64_t nnz, uint64_t seed) {
  Entries t{dims, std::vector<std::vector<int32_t>>(dims.size())};
  std::mt19937_64 rng(seed);
  std::set<std::vector<int32_t>> seen;
  while (static_cast<int64_t>(seen.size()) < nnz) {
    std::vector<int32_t> c;
    for (int64_t d : dims) c.push_back(static_cast<int32_t>(rng() % d));
    if (!seen.insert(c).second) continue;
    for (size_t m = 0; m < dims.size(); ++m) t.coords[m].push_back(c[m]);
  }
  return t;
}

// The order by a plain comparison sort: what RankEntries must return.
std::vector<int32_t> SortedByComparison(const Entries& t) {
  std::vector<int32_t> order(t.nnz());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    for (const auto& mode : t.coords) {
      if (mode[a] != mode[b]) return mode[a] < mode[b];
    }
    return false;
  });
  return order;
}

std::vector<int32_t> Canonical(const Entries& t, std::string* refusal) {
  const auto coords = t.pointers();
  // As the emitted packer calls them: coordinates checked, then ranked.
  *refusal = packer::EntriesRefusal(t.dims, t.nnz(), coords.data());
  if (!refusal->empty()) return {};
  return packer::RankEntries(t.dims, t.nnz(), coords.data(), refusal);
}

TEST(RankEntries, RanksEntriesGivenInAnyOrderLexicographically) {
  // Matrices whose rows are counted out (rows within 8x the entries) and one so sparse that it
  // is sorted whole; a third-order tensor compares its last two modes within a row.
  for (const Entries& t :
       {Random({50, 40}, 600, 1), Random({5000, 30}, 300, 2), Random({20, 15, 9}, 800, 3)}) {
    std::string refusal;
    EXPECT_EQ(Canonical(t, &refusal), SortedByComparison(t));
    EXPECT_EQ(refusal, "");
  }
}

TEST(RankEntries, KeepsEntriesAlreadyInOrderAndFollowsRenumberedRows) {
  Entries t = Random({300, 200}, 3000, 4);
  Entries sorted = t;
  const std::vector<int32_t> order = SortedByComparison(t);
  for (size_t m = 0; m < t.coords.size(); ++m)
    for (size_t k = 0; k < order.size(); ++k) sorted.coords[m][k] = t.coords[m][order[k]];
  std::string refusal;
  EXPECT_TRUE(Canonical(sorted, &refusal).empty());  // empty: packed in place, in their order
  EXPECT_EQ(refusal, "");
  // Rows renumbered in reverse: each row's entries stay together and in column order.
  for (int32_t& r : sorted.coords[0]) r = static_cast<int32_t>(sorted.dims[0] - 1 - r);
  EXPECT_EQ(Canonical(sorted, &refusal), SortedByComparison(sorted));
}

TEST(RankEntries, RefusesDuplicatesAndCoordinatesOutsideTheDims) {
  std::string refusal;
  EXPECT_TRUE(Canonical({{4, 4}, {{1, 0, 1}, {2, 0, 2}}}, &refusal).empty());
  EXPECT_NE(refusal.find("duplicate coordinates"), std::string::npos) << refusal;
  refusal.clear();
  EXPECT_TRUE(Canonical({{4, 4}, {{0, 1, 1}, {0, 2, 2}}}, &refusal).empty());  // sorted, twice
  EXPECT_NE(refusal.find("duplicate coordinates"), std::string::npos) << refusal;
  EXPECT_TRUE(Canonical({{4, 4}, {{0, 4}, {1, 1}}}, &refusal).empty());
  EXPECT_NE(refusal.find("outside [0, 4)"), std::string::npos) << refusal;
}

}  // namespace
}  // namespace sparsetune
