// SparseAuto's pruning pipeline: stages, the Z3 region, constraints and concrete sizes.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/errors.hpp"
#include "ir/kernels.hpp"
#include "sparseauto/constraints.hpp"
#include "sparseauto/sparseauto.hpp"
#include "tensor/stats.hpp"

namespace sparsetune {
namespace {

TEST(SparseAutoPipeline, StagesNarrowDownToOneChoice) {
  const SparseAutoResult r = RunSparseAuto(KernelExpression("sddmm_spmm_gemm"), {});
  const std::vector<std::string> names = {"generated",  "stage1_memory_depth", "stage2_depth_poset",
                                          "stage3_smt", "stage4_time_memory",  "stage5_cache"};
  ASSERT_EQ(r.stages.size(), names.size());
  for (size_t s = 0; s < names.size(); ++s) {
    EXPECT_EQ(r.stages[s].name, names[s]);
    if (s > 0) {
      EXPECT_LE(r.stages[s].count, r.stages[s - 1].count) << names[s];
    }
  }
  // The survivors are stage 3's, plus TACO's linear default kept as a baseline for stage 4.
  size_t baselines = 0;
  for (const auto& c : r.survivors) baselines += c.baseline;
  EXPECT_EQ(baselines, 1u);
  EXPECT_EQ(r.stages[3].count + baselines, r.survivors.size());
  EXPECT_EQ(r.stages[5].count, 1u);
  ASSERT_EQ(r.chosen, 0);
  EXPECT_TRUE(r.survivors[0].stage4);
  // Three classes survive stage 3, as in the paper: (a) T(l), (b) and (c) scalars.
  EXPECT_EQ(r.stages[3].classes, 3);
  EXPECT_EQ(r.solver_unknowns, 0);
}

TEST(SparseAutoPipeline, LinearDefaultWinsWhenFusionSavesNothing) {
  // Fibers of length about 1 along k: fusing the k loop saves no iterations, and the linear
  // schedule, which stage 2 drops on depths alone, is the cheaper one at these sizes.
  const Expression e = KernelExpression("spttm_ttm");
  SparseAutoOptions options;
  options.values = {{"i", 2000}, {"j", 10000}, {"k", 30000}, {"jpos", 20},
                    {"kpos", 1}, {"l", 16},    {"m", 16}};
  const SparseAutoResult r = RunSparseAuto(e, options);
  ASSERT_GE(r.chosen, 0);
  EXPECT_TRUE(r.survivors[r.chosen].baseline) << r.survivors[r.chosen].notation;
  options.values["kpos"] = 20;  // long fibers: fusion pays
  const SparseAutoResult fused = RunSparseAuto(e, options);
  EXPECT_FALSE(fused.survivors[fused.chosen].baseline) << fused.survivors[fused.chosen].notation;
}

TEST(SparseAutoPipeline, MemoryLimitComesFromTheCache) {
  const Expression e = KernelExpression("sddmm_spmm_gemm");
  SparseAutoOptions options;
  options.values = {{"l", 64}};
  const SparseAutoResult roomy = RunSparseAuto(e, options);
  EXPECT_EQ(roomy.survivors[roomy.chosen].memory_text, "L");  // T(l): fastest, 256 bytes
  EXPECT_EQ(roomy.survivors[roomy.chosen].memory_bytes, 256);
  options.llc_bytes = 256;  // half of it, 128 bytes, cannot hold T(l)
  const SparseAutoResult tight = RunSparseAuto(e, options);
  EXPECT_EQ(tight.memory_limit_bytes, 128);
  EXPECT_EQ(tight.survivors[tight.chosen].memory_text, "0");
  EXPECT_GT(tight.survivors[tight.chosen].time_value, roomy.survivors[roomy.chosen].time_value);
  EXPECT_GT(DetectLlcBytes(), 0);
}

TEST(SparseAutoPipeline, ConcreteValuesComeFromTheTensorPattern) {
  const Expression e = KernelExpression("ttmc");
  CooTensor t;
  t.Reset({4, 5, 6});
  // Slices 0 and 2; fibers (0,1), (0,3), (2,4); five nonzeros.
  const int32_t coords[][3] = {{0, 1, 0}, {0, 1, 5}, {0, 3, 2}, {2, 4, 1}, {2, 4, 3}};
  for (const auto& c : coords) t.Append(c, 1.0);
  t.Canonicalize();
  const PatternStats stats = ComputePatternStats(t);
  const auto values = ConcreteValues(e, t.dims, stats.prefix_nnz, {{"l", 8}, {"m", 9}});
  EXPECT_EQ(values.at("i"), 4);
  EXPECT_EQ(values.at("k"), 6);
  EXPECT_EQ(values.at("jpos"), 3.0L / 4);  // (i,j) fibers over the root's dimension
  EXPECT_EQ(values.at("kpos"), 5.0L / 3);  // nonzeros over (i,j) fibers: I*jpos*kpos = nnz
  EXPECT_EQ(values.at("m"), 9);
  EXPECT_EQ(values.count("n"), 0u);
}

TEST(SparseAutoConstraints, ParseNamesAndNumbers) {
  const CostVariables vars = MakeCostVariables(KernelExpression("ttmc"));
  const Constraint c = ParseConstraint("8 <= L <= 2.5e2", vars);
  EXPECT_EQ(c.relations.size(), 2u);
  EXPECT_EQ(c.terms[2].number, "250");
  EXPECT_EQ(c.variables, std::set<int>{vars.Find("l")});
  const Constraint d = ParseConstraint("nnz/(i*j*k) <= 1e-5", vars);
  EXPECT_EQ(d.terms[1].number, "0.00001");
  EXPECT_EQ(ParseConstraint("10*j < k", vars).relations[0], Constraint::Relation::kLess);
  EXPECT_EQ(ParseConstraint("jpos^2 >= kpos - 3", vars).relations[0],
            Constraint::Relation::kGreaterEqual);
}

TEST(SparseAutoConstraints, BadConstraintsAreInputErrors) {
  const CostVariables vars = MakeCostVariables(KernelExpression("sddmm_spmm"));
  for (const std::string text :
       {"10*q < k", "10*j <", "j", "j < k)", "1e < j", "j << k", "2.3.4 < j", "lpos < l", ""}) {
    EXPECT_THROW(ParseConstraint(text, vars), InputError) << text;
  }
  try {
    ParseConstraint("10*q < k", vars);
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown variable q"), std::string::npos) << what;
    EXPECT_NE(what.find("i, j, jpos, k, l, nnz"), std::string::npos) << what;
    EXPECT_NE(what.find("column 4"), std::string::npos) << what;
  }
}

TEST(SparseAutoConstraints, ContradictionsAreInputErrors) {
  const Expression e = KernelExpression("spmm_gemm");
  SparseAutoOptions options;
  options.constraints = {"k < 10", "k > 20"};
  EXPECT_THROW(RunSparseAuto(e, options), InputError);
  options.constraints = {"jpos > 2*j"};  // against the inferred jpos <= j
  EXPECT_THROW(RunSparseAuto(e, options), InputError);
  options.constraints = {"l <= 2"};  // drops l's default range (8..256) instead
  const SparseAutoResult r = RunSparseAuto(e, options);
  EXPECT_NE(std::find(r.constraints.begin(), r.constraints.end(), "l <= 2"), r.constraints.end());
  EXPECT_EQ(std::find(r.constraints.begin(), r.constraints.end(), "8 <= l <= 256"),
            r.constraints.end());
  EXPECT_NE(std::find(r.constraints.begin(), r.constraints.end(), "8 <= k <= 256"),
            r.constraints.end());
}

// Short fibers (as in the paper's TTMC data) prune the class with a K-sized temporary, which
// survives the default region; the paper's three classes remain.
TEST(SparseAutoConstraints, ConstraintsChangeStageThree) {
  const Expression e = KernelExpression("ttmc");
  const SparseAutoResult base = RunSparseAuto(e, {});
  EXPECT_EQ(base.stages[3].classes, 4);
  SparseAutoOptions options;
  options.constraints = {"jpos <= 2", "kpos <= 2"};
  const SparseAutoResult short_fibers = RunSparseAuto(e, options);
  EXPECT_EQ(short_fibers.stages[3].classes, 3);
  EXPECT_EQ(short_fibers.stages[3].count, 16u);
  for (const auto& c : short_fibers.survivors) EXPECT_NE(c.memory_text, "K") << c.notation;
}

}  // namespace
}  // namespace sparsetune
