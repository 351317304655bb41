// SparseAuto's space of branched iteration graphs: the paper's chosen schedules survive the
// symbolic stages, costs match the paper's, and the two dynamic programmes (counting and
// materializing) agree with each other and with the lowering.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "sparseauto/space.hpp"
#include "sparseauto/sparseauto.hpp"
#include "table2.hpp"

namespace sparsetune {
namespace {

Schedule Table2Schedule(const testing::Table2Entry& entry) {
  return Schedule::FromJson(nlohmann::json::parse(entry.schedule), entry.kernel);
}

std::string Show(const ScheduleCosts& c, const Expression& e) {
  const auto& names = MakeCostVariables(e).display;
  return c.time.ToString(names) + " | " + c.memory.ToString(names);
}

TEST(SparseAutoSpace, PaperSchedulesSurviveStageThree) {
  for (const auto& kernel : testing::SparseAutoKernels()) {
    const Expression e = KernelExpression(kernel);
    const SparseAutoResult r = RunSparseAuto(e, SparseAutoOptions());
    std::set<std::string> survivors;
    for (const auto& c : r.survivors) survivors.insert(c.notation);
    int listed = 0, found = 0;
    for (const auto& entry : testing::Table2()) {
      if (entry.kernel != kernel) continue;
      ++listed;
      const std::string notation = ScheduleNotation(e, Table2Schedule(entry));
      const bool present = survivors.count(notation) > 0;
      found += present;
      // With the default ranges every listed alternative survives, not only one of them.
      EXPECT_TRUE(present) << "kernel " << entry.label << ": " << notation;
    }
    EXPECT_GT(listed, 0);
    EXPECT_GT(found, 0) << kernel;
  }
}

TEST(SparseAutoSpace, NotationFollowsThePaper) {
  const Expression e = KernelExpression("sddmm_spmm");
  EXPECT_EQ(ScheduleNotation(e, Table2Schedule(testing::Table2()[0])),
            "i,j' <t; k: t += B(i,j)*C(i,k)*D(j,k) | l: A(i,l) += t*E(j,l)>");
  const Expression ttmc = KernelExpression("ttmc");
  EXPECT_EQ(ScheduleNotation(ttmc, Table2Schedule(testing::Table2()[7])),
            "i,n <T(m); j' <t; k': t += B(i,j,k)*E(k,n) | m: T(m) += t*D(j,m)> | "
            "m,l: A(l,m,n) += T(m)*C(i,l)>");
  EXPECT_EQ(ScheduleNotation(e, FixedCsrSchedule(e)),
            "i,j',l,k: A(i,l) += B(i,j)*C(i,k)*D(j,k)*E(j,l)");
}

TEST(SparseAutoSpace, CostsOfKnownSchedulesMatchThePaper) {
  struct Case {
    size_t entry;
    std::string costs;
  };
  // Table 2's time column: nnz(B)(K+L); K nnz(B) + IKL; N nnz(B) + NML nnz(B_ij);
  // M nnz(B) + ML nnz(B_ij); J nnz(B) + IJM. Memory: scalars 0, T(l) L, T(m) M.
  const std::vector<Case> cases = {
      {0, "I*jpos*K + I*jpos*L | 0"},
      {1, "I*jpos*K + I*jpos*L + I*L*M | L"},
      {2, "I*jpos*L*M + I*jpos*K | 0"},
      {3, "I*jpos*K*L + I*L*M | 0"},
      {5, "I*jpos*K + I*K*L | 0"},
      {6, "I*jpos*L*M*N + I*jpos*kpos*N | 0"},
      {7, "I*jpos*kpos*N + I*jpos*M*N + I*L*M*N | M"},
      {9, "I*jpos*kpos*M + I*jpos*L*M | 0"},
      {11, "I*kpos*lpos*J + I*J*M | 0"},
  };
  const auto table = testing::Table2();
  for (const auto& c : cases) {
    const auto& entry = table[c.entry];
    const Expression e = KernelExpression(entry.kernel);
    EXPECT_EQ(Show(CostOfSchedule(e, Table2Schedule(entry)), e), c.costs) << entry.label;
  }
  // TACO's linear default: nnz(B) K L for kernel 1, nnz(B) L M N for TTMC.
  const Expression k1 = KernelExpression("sddmm_spmm");
  const ScheduleCosts linear = CostOfSchedule(k1, FixedCsrSchedule(k1));
  EXPECT_EQ(Show(linear, k1), "I*jpos*K*L | 0");
  EXPECT_EQ(linear.loop_depth, 4);
  EXPECT_EQ(linear.memory_depth, 0);
  const Expression k5 = KernelExpression("ttmc");
  EXPECT_EQ(Show(CostOfSchedule(k5, FixedCsrSchedule(k5)), k5), "I*jpos*kpos*L*M*N | 0");
}

TEST(SparseAutoSpace, StageTwoTreesLowerAndCarryTheirTreesCosts) {
  for (const auto& kernel : testing::SparseAutoKernels()) {
    const Expression e = KernelExpression(kernel);
    BigSpace space(e);
    std::set<std::pair<int, int>> depths;
    for (const auto& d : space.Stage1Depths()) depths.insert({d.loop_depth, d.memory_depth});
    std::set<std::string> notations;
    size_t trees = 0;
    for (const auto& [l, m] : depths) {
      bool dominated = false;
      for (const auto& [l2, m2] : depths) dominated |= (l > l2 && m >= m2) || (l >= l2 && m > m2);
      if (dominated) continue;
      for (size_t t : space.Materialize(l, m)) {
        ++trees;
        const Schedule s = space.ToSchedule(t);
        const LowerOutcome lowered = Lower(e, s);
        ASSERT_TRUE(lowered.nest) << kernel << ": " << ScheduleNotation(e, s) << ": "
                                  << lowered.error;
        const ScheduleCosts costs = CostOfSchedule(e, s);
        EXPECT_EQ(costs.time, space.polynomial(space.time_id(t))) << ScheduleNotation(e, s);
        EXPECT_EQ(costs.memory, space.polynomial(space.memory_id(t))) << ScheduleNotation(e, s);
        EXPECT_EQ(costs.loop_depth, space.loop_depth(t));
        EXPECT_EQ(costs.memory_depth, space.memory_depth(t));
        notations.insert(ScheduleNotation(e, s));
      }
    }
    EXPECT_EQ(notations.size(), trees) << kernel << ": a tree was generated twice";
  }
}

// The counting recursion (order signatures of any length), the depth summary and the
// materializing recursion (one bit per two-index temporary) must count the same trees; every
// tree must lower, and appear once.
TEST(SparseAutoSpace, CountingAndMaterializingAgree) {
  for (const std::string kernel : {"spmm_gemm", "spttm_spttm", "spttm_ttm", "sddmm_spmm"}) {
    const Expression e = KernelExpression(kernel);
    BigSpace space(e);
    const unsigned __int128 all = space.CountAll().value();
    const unsigned __int128 bounded = space.CountAll(2).value();
    unsigned __int128 stage1 = 0;
    for (const auto& d : space.Stage1Depths()) stage1 += d.count;
    const std::vector<size_t> trees = space.Materialize(99, 2);
    EXPECT_EQ(bounded, stage1) << kernel;
    EXPECT_EQ(trees.size(), stage1) << kernel;
    EXPECT_LE(stage1, all);
    if (trees.size() > 5000) continue;
    std::set<std::string> notations;
    for (size_t t : trees) {
      const Schedule s = space.ToSchedule(t);
      const LowerOutcome lowered = Lower(e, s);
      EXPECT_TRUE(lowered.nest) << ScheduleNotation(e, s) << ": " << lowered.error;
      EXPECT_LE(space.memory_depth(t), 2);
      notations.insert(ScheduleNotation(e, s));
    }
    EXPECT_EQ(notations.size(), trees.size()) << kernel;
  }
}

TEST(SparseAutoSpace, TacoDefaultIsALinearTreeOfTheSpace) {
  for (const auto& kernel : testing::SparseAutoKernels()) {
    const Expression e = KernelExpression(kernel);
    BigSpace space(e);
    unsigned __int128 scalar_only = 0;
    for (const auto& d : space.Stage1Depths()) scalar_only += d.memory_depth == 0 ? d.count : 0;
    if (scalar_only > 300000) continue;  // kernels 2 and 5: too many to list here
    const std::string fixed = ScheduleNotation(e, FixedCsrSchedule(e));
    bool found = false;
    for (size_t t : space.Materialize(16, 0)) {
      if (space.ToSchedule(t).root.is_where()) continue;
      found |= ScheduleNotation(e, space.ToSchedule(t)) == fixed;
    }
    EXPECT_TRUE(found) << kernel << ": " << fixed;
  }
}

TEST(SparseAutoSpace, SchedulesUseCsrOrCsfAndAParallelOuterLoop) {
  const Expression k1 = KernelExpression("sddmm_spmm");
  const SparseAutoResult r1 = RunSparseAuto(k1, SparseAutoOptions());
  const Schedule& s1 = r1.survivors.at(r1.chosen).schedule;
  ASSERT_EQ(s1.format.size(), 2u);
  EXPECT_EQ(s1.format[0].second, LevelKind::kDense);
  EXPECT_EQ(s1.format[1].second, LevelKind::kCompressed);
  EXPECT_EQ(s1.parallel, "i");
  EXPECT_EQ(s1.chunk, 16);
  const Expression k8 = KernelExpression("mttkrp_gemm");
  const SparseAutoResult r8 = RunSparseAuto(k8, SparseAutoOptions());
  for (const auto& [var, kind] : r8.survivors.at(r8.chosen).schedule.format)
    EXPECT_EQ(kind, LevelKind::kCompressed) << var;
}

TEST(SparseAutoSpace, UnfusedRootIsParallelOnlyWhenBothNestsShareTheirFirstLoop) {
  const Expression e = KernelExpression("spmm_gemm");
  BigSpace space(e);
  int unfused = 0;
  for (size_t t : space.Materialize(99, 2)) {
    const Schedule s = space.ToSchedule(t);
    if (!s.root.loops.empty()) {
      EXPECT_EQ(s.parallel, s.root.loops[0]);
      continue;
    }
    ++unfused;
    const auto& p = s.root.producer->loops;
    const auto& c = s.root.consumer->loops;
    if (!p.empty() && !c.empty() && p[0] == c[0]) {
      EXPECT_EQ(s.parallel, p[0]);
    } else {
      EXPECT_TRUE(s.parallel.empty()) << ScheduleNotation(e, s);
    }
  }
  EXPECT_GT(unfused, 0);
}

}  // namespace
}  // namespace sparsetune
