// The WACO templates: every sample lowers and belongs to its template, ranges follow the
// tensor's sizes, deduplication, the encoding's shape, and the SuperSchedule <-> Schedule
// round trip through canonical JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <set>

#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "ir/schedule.hpp"
#include "superschedule/waco_template.hpp"

namespace sparsetune {
namespace {

using Sizes = std::map<std::string, int64_t>;

Sizes SizesFor(const WacoTemplate& t, std::vector<int64_t> dims) {
  const Expression& e = t.expression();
  std::map<std::string, int64_t> dense;
  for (const auto& index : e.DenseOnlyIndices())
    dense[index] = FindKernel(t.kernel())->dense_defaults.at(index);
  return ResolveIndexSizes(e, dims, dense);
}

std::vector<std::vector<int64_t>> DimsFor(const WacoTemplate& t) {
  if (t.expression().sparse_input().indices.size() == 3)
    return {{1, 1, 1}, {3, 2, 7}, {100, 80, 60}, {2425, 10816, 29567}, {1 << 20, 5, 300000}};
  return {{1, 1}, {2, 3}, {48, 48}, {4884, 4884}, {131072, 17}, {3000000, 2000000}};
}

int Log2(int64_t v) {
  int l = 0;
  while ((int64_t(1) << (l + 1)) <= v) ++l;
  return l;
}

void CheckSample(const WacoTemplate& t, const SuperSchedule& s, const Sizes& sizes) {
  SCOPED_TRACE(s.ToJson().dump());
  EXPECT_EQ(t.CheckMember(s, sizes), "");
  // Ranges: powers of two up to half the extent (1 when it cannot be split), chunk in range.
  for (const auto& index : t.indices()) {
    const int64_t split = s.splits.at(index);
    EXPECT_EQ(split & (split - 1), 0);
    EXPECT_TRUE(split == 1 || split <= sizes.at(index) / 2) << index;
    EXPECT_LE(Log2(split), t.expression().IsSparseIndex(index) ? 16 : 7);
  }
  EXPECT_GE(s.chunk, 1);
  EXPECT_LE(s.chunk, t.kernel() == "sddmm" ? 32 : 256);
  EXPECT_EQ(s.chunk & (s.chunk - 1), 0);
  // Each outer variable before its inner one.
  for (const auto& index : t.indices()) {
    auto pos = [&](const std::string& v) {
      return std::find(s.order.begin(), s.order.end(), v) - s.order.begin();
    };
    EXPECT_LT(pos(index + "1"), pos(index + "0"));
  }
  // It lowers, and its canonical JSON maps back to the same point.
  const Schedule schedule = t.ToSchedule(s);
  LowerOutcome lowered = Lower(t.expression(), schedule);
  ASSERT_TRUE(lowered.nest) << lowered.error;
  const Schedule reread =
      Schedule::FromJson(nlohmann::json::parse(schedule.CanonicalJson()), "test");
  std::string error;
  auto back = t.FromSchedule(reread, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, s);
  EXPECT_EQ(t.ToSchedule(*back).CanonicalJson(), schedule.CanonicalJson());
  // Encoding: fixed shape, ids within their tables, a permutation matrix.
  const EncodingLayout layout = t.Layout();
  const ScheduleEncoding e = t.Encode(s);
  ASSERT_EQ(e.categorical.size(), layout.cardinalities.size());
  for (size_t k = 0; k < e.categorical.size(); ++k) {
    EXPECT_GE(e.categorical[k], 0) << layout.names[k];
    EXPECT_LT(e.categorical[k], layout.cardinalities[k]) << layout.names[k];
  }
  const int n = layout.order_size;
  ASSERT_EQ(e.order.size(), size_t(n * n));
  for (int r = 0; r < n; ++r) {
    float row = 0, col = 0;
    for (int c = 0; c < n; ++c) {
      row += e.order[r * n + c];
      col += e.order[c * n + r];
    }
    EXPECT_EQ(row, 1.0f);
    EXPECT_EQ(col, 1.0f);
  }
  for (int pos = 0; pos < n; ++pos) {
    const int id =
        std::find(t.variables().begin(), t.variables().end(), s.order[pos]) - t.variables().begin();
    EXPECT_EQ(e.order[id * n + pos], 1.0f);
  }
}

TEST(WacoTemplate, EverySampleLowersAndRoundTrips) {
  for (const auto& kernel : WacoTemplate::Kernels()) {
    auto t = WacoTemplate::ForKernel(kernel);
    ASSERT_TRUE(t) << kernel;
    std::mt19937_64 rng(11);
    for (const auto& dims : DimsFor(*t)) {
      const Sizes sizes = SizesFor(*t, dims);
      for (int n = 0; n < 150; ++n) {
        WacoSampleOptions options;
        options.subspaces = n % 3 != 0;
        CheckSample(*t, t->Sample(sizes, rng, options), sizes);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(WacoTemplate, EncodingSizesMatchTheArtifact) {
  struct Expect {
    std::string kernel;
    std::vector<int> cardinalities;
    int n;
  };
  const std::vector<Expect> expected = {
      {"spmv", {17, 17, 2, 2, 2, 2, 4, 9}, 4},
      {"spmm", {17, 17, 8, 2, 2, 2, 2, 6, 9}, 6},
      {"sddmm", {17, 17, 8, 2, 2, 2, 2, 6, 6}, 6},
      {"mttkrp", {17, 17, 17, 8, 2, 2, 2, 2, 2, 2, 8, 9}, 8},
  };
  // After WACO's inputs: threads (one, all), partition, log2 unroll, coordinates.
  const std::vector<int> code_choices = {2, 2, 4, 2};
  for (const auto& x : expected) {
    auto t = WacoTemplate::ForKernel(x.kernel);
    const EncodingLayout layout = t->Layout();
    std::vector<int> cardinalities = x.cardinalities;
    // Level formats take a third value beyond the artifact's U and C: S (sliced).
    for (size_t k = 0; k < cardinalities.size(); ++k) {
      if (t->Layout().names[k].rfind("format_", 0) == 0) cardinalities[k] = 3;
    }
    cardinalities.insert(cardinalities.end(), code_choices.begin(), code_choices.end());
    if (x.kernel == "sddmm") cardinalities.push_back(2);  // C transposed or not
    EXPECT_EQ(layout.cardinalities, cardinalities) << x.kernel;
    EXPECT_EQ(layout.order_size, x.n) << x.kernel;
    EXPECT_EQ(layout.names.front(), "split_i");
    EXPECT_EQ(layout.names[x.cardinalities.size() - 1], "chunk");
    EXPECT_EQ(layout.names.back(), x.kernel == "sddmm" ? "transpose_C" : "coordinates");
  }
  auto sddmm = WacoTemplate::ForKernel("sddmm");
  EXPECT_EQ(sddmm->variables(), (std::vector<std::string>{"i1", "i0", "j1", "j0", "k1", "k0"}));
  auto mttkrp = WacoTemplate::ForKernel("mttkrp");
  EXPECT_EQ(mttkrp->level_variables(),
            (std::vector<std::string>{"i1", "i0", "k1", "k0", "l1", "l0"}));
  EXPECT_FALSE(WacoTemplate::ForKernel("ttm"));
}

TEST(WacoTemplate, FixedCsrIsInEveryTemplate) {
  for (const auto& kernel : WacoTemplate::Kernels()) {
    auto t = WacoTemplate::ForKernel(kernel);
    const Schedule csr = FixedCsrSchedule(t->expression());
    std::string error;
    auto s = t->FromSchedule(csr, &error);
    ASSERT_TRUE(s) << kernel << ": " << error;
    const Sizes sizes = SizesFor(*t, DimsFor(*t)[3]);
    EXPECT_EQ(t->CheckMember(*s, sizes), "") << kernel;
    EXPECT_EQ(t->ToSchedule(*s).CanonicalJson(), csr.CanonicalJson()) << kernel;
  }
  // SpMV FixedCSR: no splits, identity order, i1:U i0:U(trivial) k1:C k0:U(trivial), chunk 128,
  // all threads, dynamic, one accumulator, 32-bit coordinates.
  auto spmv = WacoTemplate::ForKernel("spmv");
  auto s = spmv->FromSchedule(FixedCsrSchedule(spmv->expression()), nullptr);
  const ScheduleEncoding e = spmv->Encode(*s);
  EXPECT_EQ(e.categorical, (std::vector<int>{0, 0, 1, 1, 0, 1, 0, 7, 1, 0, 0, 0}));
  EXPECT_EQ(e.order, (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  const std::vector<float> flat = e.Flat(2);
  EXPECT_EQ(flat.size(), 2u + 16u + 4u + 2u + 4u);
}

TEST(WacoTemplate, KernelRules) {
  std::mt19937_64 rng(5);
  WacoSampleOptions full;
  full.subspaces = false;
  full.threads = 3;
  auto spmm = WacoTemplate::ForKernel("spmm");
  const Sizes spmm_sizes = SizesFor(*spmm, {5000, 4000});
  for (int n = 0; n < 300; ++n) {
    const SuperSchedule s = spmm->Sample(spmm_sizes, rng, full);
    EXPECT_EQ(s.order.back(), "j0");
    if (s.splits.at("j") < 8) {
      EXPECT_EQ(s.order[4], "j1");
    }
    EXPECT_LT(std::find(s.order.begin(), s.order.end(), "i1"),
              std::find(s.order.begin(), s.order.end(), "j1"));
    EXPECT_EQ(s.parallel, "i1");
    EXPECT_TRUE(s.threads == 3 || s.threads == 1);
    EXPECT_TRUE(s.narrow);
    // SpMM's reductions carry a dense row (j0 innermost), never a scalar over a compressed loop.
    EXPECT_EQ(s.unroll, 1);
    if (s.partition == Partition::kBalanced) {
      EXPECT_EQ(s.chunk, 1);
    }
  }
  // SpMV with a compressed inner level draws every partial-sum count.
  auto spmv = WacoTemplate::ForKernel("spmv");
  const Sizes spmv_sizes = SizesFor(*spmv, {5000, 4000});
  std::set<int> unrolls;
  int single_thread = 0, balanced = 0;
  for (int n = 0; n < 400; ++n) {
    const SuperSchedule s = spmv->Sample(spmv_sizes, rng, full);
    unrolls.insert(s.unroll);
    single_thread += s.threads == 1;
    balanced += s.partition == Partition::kBalanced;
  }
  EXPECT_EQ(unrolls, (std::set<int>{1, 2, 4, 8}));
  // A quarter of SpMV's samples are sliced (SELL-C), each a member of the template.
  int sliced = 0;
  for (int n = 0; n < 400; ++n) {
    const SuperSchedule s = spmv->Sample(spmv_sizes, rng);
    if (std::find(s.formats.begin(), s.formats.end(), LevelKind::kSliced) == s.formats.end())
      continue;
    ++sliced;
    EXPECT_EQ(spmv->CheckMember(s, spmv_sizes), "");
    EXPECT_EQ(s.order, (std::vector<std::string>{"i1", "k1", "k0", "i0"}));
    EXPECT_GE(s.splits.at("i"), 2);
    EXPECT_LE(s.splits.at("i"), 32);
  }
  EXPECT_GT(sliced, 60);
  EXPECT_LT(sliced, 140);
  EXPECT_GT(single_thread, 50);
  EXPECT_LT(single_thread, 150);
  EXPECT_GT(balanced, 150);
  EXPECT_LT(balanced, 250);
  auto sddmm = WacoTemplate::ForKernel("sddmm");
  const Sizes sddmm_sizes = SizesFor(*sddmm, {5000, 4000});
  int j_parallel = 0;
  for (int n = 0; n < 300; ++n) {
    const SuperSchedule s = sddmm->Sample(sddmm_sizes, rng);
    // An unsplit k of a sub-space order (i1 j1 k1 i0 j0 k0) is a whole loop in third place.
    if (s.splits.at("k") > 1) {
      EXPECT_EQ(s.order.back(), "k0");
    }
    bool all_u = true;
    for (LevelKind k : s.formats) all_u &= k == LevelKind::kDense;
    EXPECT_FALSE(all_u);
    const auto i1 = std::find(s.order.begin(), s.order.end(), "i1");
    const auto j1 = std::find(s.order.begin(), s.order.end(), "j1");
    EXPECT_EQ(s.parallel, i1 < j1 ? "i1" : "j1");
    j_parallel += s.parallel == "j1";
  }
  EXPECT_GT(j_parallel, 50);  // columns are parallel about half the time
  auto mttkrp = WacoTemplate::ForKernel("mttkrp");
  const Sizes mttkrp_sizes = SizesFor(*mttkrp, {2425, 10816, 29567});
  for (int n = 0; n < 300; ++n) {
    const SuperSchedule s = mttkrp->Sample(mttkrp_sizes, rng);
    EXPECT_EQ(s.parallel, "i1");
    EXPECT_EQ(s.order.back(), "j0");
    EXPECT_LE(s.splits.at("j"), 8);
  }
}

TEST(WacoTemplate, SubspaceShare) {
  // The artifact draws 32% of its SpMM samples from the CSR-like order i1 k1 j1 i0 k0 j0;
  // without sub-spaces that order (with a narrow j split) never appears.
  auto spmm = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = SizesFor(*spmm, {5000, 4000});
  std::mt19937_64 rng(3);
  auto subspace_like = [](const SuperSchedule& s) {
    return s.splits.at("i") > 1 && s.splits.at("k") > 1 && s.splits.at("j") < 8 &&
           s.order == std::vector<std::string>{"i1", "k1", "j1", "i0", "k0", "j0"};
  };
  int with = 0, without = 0;
  WacoSampleOptions full;
  full.subspaces = false;
  for (int n = 0; n < 1000; ++n) {
    with += subspace_like(spmm->Sample(sizes, rng));
    without += subspace_like(spmm->Sample(sizes, rng, full));
  }
  EXPECT_EQ(without, 0);
  // 0.32 x P(i and k split) x P(j < 8) = 0.32 x 5/6 x 5/6 x 3/8 ~ 0.083.
  EXPECT_GT(with, 45);
  EXPECT_LT(with, 130);
}

TEST(WacoTemplate, DeduplicationAndDeterminism) {
  auto spmv = WacoTemplate::ForKernel("spmv");
  const Sizes sizes = SizesFor(*spmv, {4884, 4884});
  const std::string csr = FixedCsrSchedule(spmv->expression()).CanonicalJson();
  std::mt19937_64 a(42), b(42);
  auto first = spmv->SampleDistinct(sizes, 100, a, {}, {csr});
  auto second = spmv->SampleDistinct(sizes, 100, b, {}, {csr});
  ASSERT_EQ(first.size(), 100u);
  EXPECT_EQ(first, second);
  std::set<std::string> seen;
  for (const auto& s : first) {
    const std::string json = spmv->ToSchedule(s).CanonicalJson();
    EXPECT_NE(json, csr);
    EXPECT_TRUE(seen.insert(json).second) << json;
  }
  // A 2 x 3 matrix cannot be split: only orders, formats and chunks vary, so the space is
  // small and sampling stops short instead of looping.
  auto tiny = spmv->SampleDistinct(SizesFor(*spmv, {1, 1}), 1000, a);
  EXPECT_LT(tiny.size(), 1000u);
  EXPECT_GT(tiny.size(), 20u);
}

TEST(WacoTemplate, FromScheduleRejectsWhatTheTemplateCannotExpress) {
  auto spmv = WacoTemplate::ForKernel("spmv");
  auto parse = [](const std::string& text) {
    return Schedule::FromJson(nlohmann::json::parse(text), "test");
  };
  std::string error;
  EXPECT_FALSE(spmv->FromSchedule(parse(R"({"splits": {"i": 3}, "loop_order": ["i1","k","i0"],
               "format": ["i1:U","k:C","i0:U"], "parallel": "i1"})"),
                                  &error));
  EXPECT_NE(error.find("power of two"), std::string::npos) << error;
  EXPECT_FALSE(spmv->FromSchedule(
      parse(R"({"loop_order": ["i","k"], "format": ["i:U","k:C"], "parallel": null})"), &error));
  EXPECT_NE(error.find("serial"), std::string::npos) << error;
  EXPECT_FALSE(spmv->FromSchedule(
      parse(R"({"loop_order": ["k","i"], "format": ["i:U","k:C"], "parallel": "i"})"), &error));
  EXPECT_NE(error.find("level order"), std::string::npos) << error;
  EXPECT_FALSE(spmv->FromSchedule(parse(R"({"loop_order": ["i","k"], "format": ["i:U","k:C"],
               "parallel": {"index": "i", "chunk": 512}})"),
                                  &error));
  EXPECT_NE(error.find("chunk"), std::string::npos) << error;
  // Choices the encoding has no slot for: a point without them would name another kernel.
  const std::string csr = R"("loop_order": ["i","k"], "parallel": "i")";
  for (const auto& [extra, cause] : std::vector<std::pair<std::string, std::string>>{
           {R"("format": ["i:U","k:C"], "prefetch": 8)", "prefetch"},
           {R"("format": ["i:U","k:C"], "ordering": "rcm")", "ordering"},
           {R"("format": ["i:U","k:G4"])", "grouped"},
           {R"("format": ["i:U","k:Q"])", "kind Q"}}) {
    EXPECT_FALSE(spmv->FromSchedule(parse("{" + csr + ", " + extra + "}"), &error)) << extra;
    EXPECT_NE(error.find(cause), std::string::npos) << error;
  }
  EXPECT_FALSE(WacoTemplate::ForKernel("spmm")->FromSchedule(
      parse(R"({"splits": {"i": 8}, "loop_order": ["i1","k","i0","j"],
               "format": ["i1:U","k:S","i0:U"], "parallel": "i1"})"),
      &error));
  EXPECT_NE(error.find("kind S"), std::string::npos) << error;
  // A split variable placed by hand and its normal form: the unsplit k gets k0 after k1.
  auto s = spmv->FromSchedule(parse(R"({"splits": {"i": 4}, "loop_order": ["k","i1","i0"],
               "format": ["k:C","i1:U","i0:C"], "parallel": {"index": "i1", "chunk": 2}})"),
                              &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->order, (std::vector<std::string>{"k1", "k0", "i1", "i0"}));
  EXPECT_EQ(s->formats, (std::vector<LevelKind>{LevelKind::kDense, LevelKind::kCompressed,
                                                LevelKind::kCompressed, LevelKind::kDense}));
}

}  // namespace
}  // namespace sparsetune

namespace sparsetune {
namespace {

// How many of the choices that a move changes differ between two points: the splits of each
// index, the loop order, each level's format, the partition with its chunk, the partial sums,
// the threads, C's transposition. A split move may also move its own loops and formats, and a
// move that leaves no reduction to split ends the partial sums (normal form): those count with
// the move. One split doubled and another halved (a reshaped tile) is one move.
int ChoicesChanged(const SuperSchedule& a, const SuperSchedule& b) {
  int changed = 0;
  bool split_changed = false;
  std::vector<double> ratios;
  for (const auto& [index, split] : a.splits) {
    if (b.splits.at(index) != split) {
      ++changed, split_changed = true;
      ratios.push_back(double(b.splits.at(index)) / split);
    }
  }
  if (ratios.size() == 2 && ratios[0] * ratios[1] == 1.0) --changed;
  if (!split_changed) {
    changed += a.order != b.order;
    for (size_t v = 0; v < a.formats.size(); ++v) changed += a.formats[v] != b.formats[v];
  }
  changed += a.partition != b.partition || a.chunk != b.chunk;
  changed += (a.threads == 1) != (b.threads == 1);
  changed += a.transposed != b.transposed;
  if (a.unroll != b.unroll && !(changed > 0 && b.unroll == 1)) ++changed;
  return changed;
}

TEST(WacoTemplate, NeighboursAreMembersOneMoveAway) {
  for (const std::string& kernel : WacoTemplate::Kernels()) {
    auto t = WacoTemplate::ForKernel(kernel);
    const Sizes sizes = SizesFor(*t, DimsFor(*t)[3]);
    std::mt19937_64 rng(7);
    for (int draw = 0; draw < 20; ++draw) {
      const SuperSchedule s = t->Sample(sizes, rng);
      const std::vector<SuperSchedule> near = t->Neighbours(s, sizes);
      EXPECT_GE(near.size(), 4u) << kernel << " " << s.ToJson().dump();
      std::set<std::string> seen{t->ToSchedule(s).CanonicalJson()};
      for (const SuperSchedule& n : near) {
        EXPECT_EQ(t->CheckMember(n, sizes), "") << kernel << " " << n.ToJson().dump();
        EXPECT_TRUE(Lower(t->expression(), t->ToSchedule(n)).nest) << n.ToJson().dump();
        EXPECT_TRUE(seen.insert(t->ToSchedule(n).CanonicalJson()).second) << n.ToJson().dump();
        EXPECT_EQ(ChoicesChanged(s, n), 1) << kernel << "\n"
                                           << s.ToJson().dump() << "\n"
                                           << n.ToJson().dump();
      }
    }
  }
}

TEST(WacoTemplate, NeighboursOfCsrIncludeBlocksAndCodeChoices) {
  auto spmm = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = SizesFor(*spmm, {4884, 4884});
  const auto csr = spmm->FromSchedule(FixedCsrSchedule(spmm->expression()), nullptr);
  ASSERT_TRUE(csr);
  const std::vector<SuperSchedule> near = spmm->Neighbours(*csr, sizes);
  auto has = [&](const std::function<bool(const SuperSchedule&)>& what) {
    return std::any_of(near.begin(), near.end(), what);
  };
  // Rows in blocks of two and of four, dense inside (a step towards BCSR).
  EXPECT_TRUE(has([](const SuperSchedule& n) { return n.splits.at("i") == 2; }));
  EXPECT_TRUE(has([](const SuperSchedule& n) { return n.splits.at("i") == 4; }));
  EXPECT_TRUE(has([&](const SuperSchedule& n) { return n.splits.at("j") != csr->splits.at("j"); }));
  EXPECT_TRUE(has([&](const SuperSchedule& n) { return n.partition != csr->partition; }));
  EXPECT_TRUE(has([&](const SuperSchedule& n) { return (n.threads == 1) != (csr->threads == 1); }));
  EXPECT_FALSE(has([&](const SuperSchedule& n) { return n == *csr; }));
}

// A register tile of 4 rows x 64 columns reshapes to 8 x 32 in one move (doubling the rows alone
// would hold 8 x 64 accumulators).
TEST(WacoTemplate, ATileReshapesInOneMove) {
  auto spmm = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = SizesFor(*spmm, {5000, 5000});
  const auto tile = spmm->FromSchedule(
      ParseScheduleText(R"({"format":["i1:U","k:C","i0:U"],"narrow_coordinates":true,
          "parallel":{"chunk":1,"index":"i1","partition":"balanced","threads":2},
          "splits":{"i":4,"j":64},"tree":{"loops":["i1","j1","k","i0","j0"]}})",
                        "a tile"),
      nullptr);
  ASSERT_TRUE(tile);
  std::vector<std::string> moves;
  const std::vector<SuperSchedule> near = spmm->Neighbours(*tile, sizes, &moves);
  bool reshaped = false;
  for (size_t n = 0; n < near.size(); ++n) {
    if (near[n].splits.at("i") == 8 && near[n].splits.at("j") == 32 &&
        near[n].splits.at("k") == tile->splits.at("k")) {
      EXPECT_EQ(moves[n], "reshape");
      reshaped = true;
    }
  }
  EXPECT_TRUE(reshaped);
}

// Each neighbour names its move, and the name says what changed.
TEST(WacoTemplate, NeighboursNameTheirMoves) {
  for (const std::string& kernel : WacoTemplate::Kernels()) {
    auto t = WacoTemplate::ForKernel(kernel);
    const Sizes sizes = SizesFor(*t, DimsFor(*t)[3]);
    std::mt19937_64 rng(11);
    for (int draw = 0; draw < 10; ++draw) {
      const SuperSchedule s = t->Sample(sizes, rng);
      std::vector<std::string> moves;
      const std::vector<SuperSchedule> near = t->Neighbours(s, sizes, &moves);
      ASSERT_EQ(moves.size(), near.size()) << kernel;
      for (size_t n = 0; n < near.size(); ++n) {
        const SuperSchedule& to = near[n];
        const std::string& move = moves[n];
        const std::string context =
            kernel + " " + move + "\n" + s.ToJson().dump() + "\n" + to.ToJson().dump();
        if (move.rfind("split ", 0) == 0) {
          const std::string index = move.substr(6, move.find(' ', 6) - 6);
          const bool up = move.substr(move.size() - 2) == "up";
          EXPECT_EQ(to.splits.at(index) > s.splits.at(index), up) << context;
          EXPECT_NE(to.splits.at(index), s.splits.at(index)) << context;
        } else if (move == "reshape") {
          int64_t before = 1, after = 1;
          int changed = 0;
          for (const auto& [index, split] : s.splits) {
            before *= split;
            after *= to.splits.at(index);
            changed += to.splits.at(index) != split;
          }
          EXPECT_EQ(before, after) << context;
          EXPECT_EQ(changed, 2) << context;
        } else if (move == "order") {
          EXPECT_NE(to.order, s.order) << context;
          EXPECT_EQ(to.splits, s.splits) << context;
        } else if (move == "format") {
          EXPECT_NE(to.formats, s.formats) << context;
        } else if (move == "threads") {
          EXPECT_NE(to.threads == 1, s.threads == 1) << context;
        } else if (move == "partition") {
          EXPECT_NE(to.partition, s.partition) << context;
        } else if (move == "chunk") {
          EXPECT_NE(to.chunk, s.chunk) << context;
        } else if (move == "unroll") {
          EXPECT_NE(to.unroll, s.unroll) << context;
        } else if (move == "transpose") {
          EXPECT_NE(to.transposed, s.transposed) << context;
        } else {
          ADD_FAILURE() << "unknown move: " << context;
        }
      }
    }
  }
}

}  // namespace
}  // namespace sparsetune
