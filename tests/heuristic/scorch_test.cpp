// Scorch's heuristic: every kernel gets a schedule that lowers and computes the reference; the
// decisions the paper describes (filter-first order, k-style tiling of SpMM, workspaces, format
// inference from measured occupancy, transposes only where storage orders conflict) show up.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "heuristic/scorch.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "measure/runner.hpp"
#include "support/test_data.hpp"
#include "tensor/stats.hpp"

namespace sparsetune {
namespace {

HeuristicInput InputFor(const Expression& e, const CooTensor& tensor,
                        std::map<std::string, int64_t> dense) {
  HeuristicInput input;
  input.sizes = ResolveIndexSizes(e, tensor.dims, dense);
  input.prefix_nnz = ComputePatternStats(tensor).prefix_nnz;
  return input;
}

bool Mentions(const HeuristicResult& r, const std::string& text) {
  return std::any_of(r.explain.begin(), r.explain.end(),
                     [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

class EveryKernel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryKernel, HeuristicScheduleComputesTheReference) {
  const Expression e = KernelExpression(GetParam());
  const CooTensor tensor =
      testing::SmallWorkload(static_cast<int>(e.sparse_input().indices.size()));
  std::map<std::string, int64_t> dense = FindKernel(GetParam())->dense_defaults;
  for (auto& [index, size] : dense) size = std::min<int64_t>(size, 40);  // quick reference
  const HeuristicResult h = ScorchSchedule(e, InputFor(e, tensor, dense));
  ASSERT_TRUE(Lower(e, h.schedule).nest) << h.schedule.CanonicalJson();
  EXPECT_FALSE(Mentions(h, "falling back")) << h.schedule.CanonicalJson();
  EXPECT_EQ(h.final_order.size(), e.indices.size());

  Jit jit;
  KernelRunner runner(e, tensor, ResolveIndexSizes(e, tensor.dims, dense), DType::kF32, jit);
  RunOptions options;
  options.time = false;
  const RunResult r = runner.Run(h.schedule, options);
  ASSERT_TRUE(r.ok()) << RunStatusName(r.status) << ": " << r.message << "\n" << r.nest;
  EXPECT_TRUE(r.verified);
}

INSTANTIATE_TEST_SUITE_P(Scorch, EveryKernel,
                         ::testing::Values("spmv", "spmm", "sddmm", "mttkrp", "ttm", "sddmm_spmm",
                                           "sddmm_spmm_gemm", "spmm_gemm", "ttmc", "mttkrp_gemm"));

TEST(Scorch, SpmmTilesOnlyTheDenseColumnLoopOutermost) {
  // Algorithm 2's example: i and k are sparse (and i encloses k), so only j is tiled.
  const Expression e = KernelExpression("spmm");
  const CooTensor tensor = testing::RandomSparse({300, 200}, 3000, 1, false);
  const HeuristicResult h = ScorchSchedule(e, InputFor(e, tensor, {{"j", 256}}));
  EXPECT_EQ(h.final_order, (std::vector<std::string>{"i", "k", "j"}));
  EXPECT_EQ(h.schedule.SplitOf("j"), 32);
  EXPECT_EQ(h.schedule.SplitOf("i"), 1);
  EXPECT_EQ(h.schedule.SplitOf("k"), 1);
  EXPECT_EQ(h.schedule.root.loops, (std::vector<std::string>{"j1", "i", "k", "j0"}));
  EXPECT_EQ(h.schedule.parallel, "i");
  // Too narrow to tile: the reason is given.
  const HeuristicResult narrow = ScorchSchedule(e, InputFor(e, tensor, {{"j", 16}}));
  EXPECT_EQ(narrow.schedule.SplitOf("j"), 1);
  EXPECT_TRUE(Mentions(narrow, "j not tiled")) << narrow.explain.back();
}

TEST(Scorch, InsertsAWorkspaceWhereAReductionFeedsLaterFreeLoops) {
  // sddmm_spmm: summing C(i,k) * D(j,k) over k once per nonzero instead of once per (nonzero, l).
  const Expression e = KernelExpression("sddmm_spmm");
  const CooTensor tensor = testing::RandomSparse({200, 200}, 2000, 2, false);
  const HeuristicResult h = ScorchSchedule(e, InputFor(e, tensor, {{"k", 16}, {"l", 16}}));
  ASSERT_TRUE(h.schedule.root.is_where()) << h.schedule.CanonicalJson();
  EXPECT_EQ(h.schedule.root.temp, "t");
  EXPECT_EQ(h.schedule.root.producer->loops, (std::vector<std::string>{"k"}));
  EXPECT_EQ(h.schedule.root.consumer->loops, (std::vector<std::string>{"l"}));
  // SpMV has nothing to hoist: one nest.
  const Expression spmv = KernelExpression("spmv");
  const HeuristicResult linear = ScorchSchedule(spmv, InputFor(spmv, tensor, {}));
  EXPECT_FALSE(linear.schedule.root.is_where());
  EXPECT_TRUE(Mentions(linear, "workspace: none pays"));
}

TEST(Scorch, InfersLevelFormatsFromMeasuredOccupancy) {
  const Expression e = KernelExpression("spmv");
  // Most rows empty: the row level is compressed (DCSR).
  CooTensor hypersparse;
  hypersparse.Reset({10000, 10000}, 50);
  for (int32_t r = 0; r < 50; ++r) {
    const int32_t c[2] = {r * 200, r};
    hypersparse.Append(c, 1.0);
  }
  hypersparse.Canonicalize();
  const HeuristicResult sparse_rows = ScorchSchedule(e, InputFor(e, hypersparse, {}));
  ASSERT_EQ(sparse_rows.schedule.format.size(), 2u);
  EXPECT_EQ(sparse_rows.schedule.format[0].second, LevelKind::kCompressed);
  EXPECT_EQ(sparse_rows.schedule.format[1].second, LevelKind::kCompressed);
  // Every row full: both levels dense.
  CooTensor full;
  full.Reset({8, 8}, 64);
  for (int32_t r = 0; r < 8; ++r)
    for (int32_t k = 0; k < 8; ++k) {
      const int32_t c[2] = {r, k};
      full.Append(c, 1.0 + r + k);
    }
  full.Canonicalize();
  const HeuristicResult dense = ScorchSchedule(e, InputFor(e, full, {}));
  EXPECT_EQ(dense.schedule.format[0].second, LevelKind::kDense);
  EXPECT_EQ(dense.schedule.format[1].second, LevelKind::kDense);
  // Without measurements the priors: rows present, columns sparse (CSR).
  HeuristicInput priors;
  const HeuristicResult csr = ScorchSchedule(e, priors);
  EXPECT_EQ(csr.schedule.format[0].second, LevelKind::kDense);
  EXPECT_EQ(csr.schedule.format[1].second, LevelKind::kCompressed);
  EXPECT_TRUE(Mentions(csr, "prior occupancy"));
}

TEST(Scorch, TransposesOnlyWhereStorageOrdersConflict) {
  // A(i,k) and B(k,i) cannot both be read in storage order: the cheaper one (the sparse A) is
  // dropped, so A is stored column-major and the dense B keeps its order.
  const Expression e = BuildExpression("y(i) = A(i,k) * B(k,i)", "test");
  const CooTensor tensor = testing::RandomSparse({60, 50}, 400, 3, false);
  HeuristicInput input;
  input.sizes = ResolveIndexSizes(e, tensor.dims, {});
  input.prefix_nnz = ComputePatternStats(tensor).prefix_nnz;
  const HeuristicResult h = ScorchSchedule(e, input);
  EXPECT_TRUE(Mentions(h, "storage orders conflict")) << h.explain.back();
  EXPECT_EQ(h.final_order, (std::vector<std::string>{"k", "i"}));
  ASSERT_TRUE(Lower(e, h.schedule).nest);
  // SpMM's operands agree: no conflict, nothing transposed.
  const Expression spmm = KernelExpression("spmm");
  const HeuristicResult agree = ScorchSchedule(spmm, input);
  EXPECT_FALSE(Mentions(agree, "conflict"));
  EXPECT_TRUE(agree.schedule.transposed.empty());
}

}  // namespace
}  // namespace sparsetune
