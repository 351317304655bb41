// Every reason lowering gives for refusing a schedule, each triggered by a schedule that is
// wrong in exactly one way. Lowering returns the reason instead of throwing (tuning tries many
// schedules and records why each was refused), and the reason names the loop, level, index or
// tensor at fault. Where a case has a `fixed` schedule, that schedule differs from the refused
// one only in the fault and lowers: the refusal is due to that fault alone.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"

namespace sparsetune {
namespace {

using nlohmann::json;

// A named kernel, or index notation (with '=') whose first input is sparse.
Expression ExpressionOf(const std::string& kernel) {
  if (kernel.find('=') != std::string::npos) return BuildExpression(kernel, "test expression");
  return KernelExpression(kernel);
}

LowerOutcome LowerNoThrow(const Expression& e, const Schedule& s) {
  LowerOutcome outcome;
  EXPECT_NO_THROW(outcome = Lower(e, s)) << s.CanonicalJson();
  return outcome;
}

struct RejectionCase {
  std::string name;
  std::string kernel;
  json schedule;
  std::vector<std::string> reason_parts;  // each must appear in the reason
  json fixed;                             // null, or a one-fault-less schedule that lowers
};

void PrintTo(const RejectionCase& c, std::ostream* os) {
  *os << c.name;
}

// SDDMM followed by SpMM as SparseAuto fuses it (the README's example), with parts replaced.
json SddmmSpmm(const std::string& temp = "t",
               const json& producer = {{"loops", {"k"}},
                                       {"compute", "t += B(i,j) * C(i,k) * D(j,k)"}},
               const json& consumer = {{"loops", {"l"}}, {"compute", "A(i,l) += t * E(j,l)"}},
               const std::vector<std::string>& outer = {"i", "j"}) {
  return {{"tree",
           {{"loops", outer},
            {"where", {{"temp", temp}, {"producer", producer}, {"consumer", consumer}}}}},
          {"format", {"i:U", "j:C"}},
          {"parallel", {{"index", "i"}, {"chunk", 16}}}};
}

json Producer(const std::string& compute, const std::vector<std::string>& loops = {"k"}) {
  return {{"loops", loops}, {"compute", compute}};
}
json Consumer(const std::string& compute, const std::vector<std::string>& loops = {"l"}) {
  return {{"loops", loops}, {"compute", compute}};
}

// SDDMM, SpMM, then GEMM with a dense temporary T(l) around a scalar t (paper Table 2).
json SddmmSpmmGemm(const std::string& outer_temp, const std::string& inner_temp,
                   const std::string& inner_producer, const std::string& last_consumer) {
  return {{"tree",
           {{"loops", {"i"}},
            {"where",
             {{"temp", outer_temp},
              {"producer",
               {{"loops", {"j"}},
                {"where",
                 {{"temp", inner_temp},
                  {"producer", Producer(inner_producer)},
                  {"consumer", Consumer("T(l) += " + inner_temp + " * E(j,l)")}}}}},
              {"consumer", Consumer(last_consumer, {"m", "l"})}}}}},
          {"format", {"i:U", "j:C"}},
          {"parallel", {{"index", "i"}, {"chunk", 16}}}};
}

json Linear(const std::vector<std::string>& order, const std::vector<std::string>& format,
            const json& splits = json::object(), const json& parallel = nullptr) {
  return {{"splits", splits}, {"loop_order", order}, {"format", format}, {"parallel", parallel}};
}

json With(json schedule, const std::string& key, const json& value) {
  schedule[key] = value;
  return schedule;
}

// Cases of the variables, splits and format (sliced levels too).
std::vector<RejectionCase> FormatCases() {
  return {
      // ---- variables and splits
      {"SplitOfAnUnknownIndex",
       "spmv",
       Linear({"i", "k"}, {"i:U", "k:C"}, {{"j", 4}}),
       {"split of j", "no index j"},
       Linear({"i", "k"}, {"i:U", "k:C"})},
      {"SplitPartNamedLikeAnIndex",
       "y(i) = A(i,i1) * x(i1)",
       Linear({"i1", "i0"}, {"i1:U", "i0:U"}, {{"i", 2}}),
       {"index i is split into i1", "also an index name"},
       Linear({"i", "i1"}, {"i:U", "i1:C"})},
      {"FormatNamesAWholeIndexThatIsSplit",
       "spmv",
       Linear({"i1", "i0", "k"}, {"i:U", "k:C"}, {{"i", 4}}),
       {"the format names an unknown loop variable i", "i is split: use i1,i0"},
       Linear({"i1", "i0", "k"}, {"i1:U", "i0:U", "k:C"}, {{"i", 4}})},
      {"LoopNamesASplitPartOfAWholeIndex",
       "spmv",
       Linear({"i1", "k"}, {"i:U", "k:C"}),
       {"loop i1 names an unknown loop variable i1", "i is not split"},
       Linear({"i", "k"}, {"i:U", "k:C"})},
      {"ParallelLoopIsUnknown",
       "spmv",
       Linear({"i", "k"}, {"i:U", "k:C"}, json::object(), "j"),
       {"the parallel loop names an unknown loop variable j"},
       Linear({"i", "k"}, {"i:U", "k:C"}, json::object(), "i")},
      // ---- the sparse operand's format
      {"FormatLevelOfADenseIndex",
       "spmm",
       Linear({"i", "k", "j"}, {"i:U", "k:C", "j:U"}),
       {"the format names j", "j is not an index of the sparse operand A"},
       Linear({"i", "k", "j"}, {"i:U", "k:C"})},
      {"FormatListsALevelTwice",
       "spmv",
       Linear({"i", "k"}, {"i:U", "k:C", "k:C"}),
       {"the format lists k twice"},
       Linear({"i", "k"}, {"i:U", "k:C"})},
      {"FormatMissesALevel",
       "spmv",
       Linear({"i", "k1", "k0"}, {"i:U", "k1:C"}, {{"k", 4}}),
       {"the format of A has no level for k0", "i,k1,k0"},
       Linear({"i", "k1", "k0"}, {"i:U", "k1:C", "k0:U"}, {{"k", 4}})},
      {"LoopsVisitLevelsOutOfOrder",
       "spmv",
       Linear({"k", "i"}, {"i:U", "k:C"}),
       {"loop k visits level 1 (k) of A before the levels above it", "level order i k"},
       Linear({"i", "k"}, {"i:U", "k:C"})},
      // ---- sliced levels
      {"SlicedLevelWithoutLanes",
       "spmv",
       Linear({"i", "k"}, {"i:U", "k:S"}),
       {"sliced level k must be followed in the format by a U level"},
       Linear({"i", "k"}, {"i:U", "k:C"})},
      {"SlicedLevelHoldingASparseOutput",
       "sddmm",
       Linear({"i1", "j", "i0", "k"}, {"i1:U", "j:S", "i0:U"}, {{"i", 4}}),
       {"sliced level j", "cannot hold a sparse output"},
       Linear({"i1", "j", "i0", "k"}, {"i1:U", "j:C", "i0:U"}, {{"i", 4}})},
      {"SlicedLoopNotDirectlyAroundItsLanes",
       "spmv",
       Linear({"k1", "i", "k0"}, {"k1:U", "i:S", "k0:U"}, {{"k", 4}}),
       {"loop i over a sliced level must directly enclose the loop k0 over its lanes"},
       Linear({"k1", "i", "k0"}, {"k1:U", "i:C", "k0:U"}, {{"k", 4}})},
      {"SlicedLoopIsParallel",
       "spmv",
       Linear({"i1", "k", "i0"}, {"i1:U", "k:S", "i0:U"}, {{"i", 8}}, "k"),
       {"loop k over a sliced level cannot be parallel"},
       Linear({"i1", "k", "i0"}, {"i1:U", "k:S", "i0:U"}, {{"i", 8}}, "i1")},
  };
}

// Cases of sparse outputs, transposed inputs and loops.
std::vector<RejectionCase> OutputAndLoopCases() {
  return {
      // ---- sparse outputs
      {"SparseOutputLevelsNotFirst",
       "spttm_spttm",
       Linear({"i", "k", "j", "l", "m"}, {"i:C", "k:C", "j:C"}),
       {"the output A is sparse over (i,j)", "those levels of B must come first"},
       Linear({"i", "j", "k", "l", "m"}, {"i:C", "j:C", "k:C"})},
      {"SparseOutputWrittenOutsideItsLevels",
       "spttm_spttm",
       {{"tree",
         {{"loops", {"i"}},
          {"where",
           {{"temp", "T(j,l)"},
            {"producer", Producer("T(j,l) += B(i,j,k) * C(k,l)", {"j", "k", "l"})},
            {"consumer", Consumer("A(i,j,m) += T(j,l) * D(l,m)", {"j", "m", "l"})}}}}},
        {"format", {"i:C", "j:C", "k:C"}},
        {"parallel", nullptr}},
       {"the sparse output A is written outside the loops over its levels of B"},
       {{"tree",
         {{"loops", {"i", "j"}},
          {"where",
           {{"temp", "T(l)"},
            {"producer", Producer("T(l) += B(i,j,k) * C(k,l)", {"k", "l"})},
            {"consumer", Consumer("A(i,j,m) += T(l) * D(l,m)", {"m", "l"})}}}}},
        {"format", {"i:C", "j:C", "k:C"}},
        {"parallel", nullptr}}},
      // ---- dense inputs read transposed
      {"TransposeOfAnUnknownTensor",
       "spmm",
       With(Linear({"i", "k", "j"}, {"i:U", "k:C"}), "transpose", {"Z"}),
       {"transpose names Z, which is not a tensor of the expression"},
       With(Linear({"i", "k", "j"}, {"i:U", "k:C"}), "transpose", {"B"})},
      {"TransposeOfTheSparseOperand",
       "spmm",
       With(Linear({"i", "k", "j"}, {"i:U", "k:C"}), "transpose", {"A"}),
       {"transpose names A", "only dense inputs of order 2"},
       With(Linear({"i", "k", "j"}, {"i:U", "k:C"}), "transpose", {"B"})},
      // ---- loops
      {"LoopNestedInItself",
       "spmv",
       Linear({"i", "k", "i"}, {"i:U", "k:C"}),
       {"loop i is nested inside another loop i"},
       Linear({"i", "k"}, {"i:U", "k:C"})},
      {"InnerPartOutsideItsOuterPart",
       "spmv",
       Linear({"i0", "i1", "k"}, {"i1:U", "k:C", "i0:U"}, {{"i", 4}}),
       {"loop i0 must be inside loop i1"},
       Linear({"i1", "k", "i0"}, {"i1:U", "k:C", "i0:U"}, {{"i", 4}})},
      {"LoopOrderMissesAnIndex",
       "spmv",
       Linear({"i"}, {"i:U", "k:C"}),
       {"uses index k but no loop k encloses it"},
       Linear({"i", "k"}, {"i:U", "k:C"})},
      {"LoopOrderMissesASplitPart",
       "spmm",
       Linear({"i", "k", "j1"}, {"i:U", "k:C"}, {{"j", 8}}),
       {"uses index j but no loop j0 encloses it"},
       Linear({"i", "k", "j1", "j0"}, {"i:U", "k:C"}, {{"j", 8}})},
  };
}

// Cases of where nodes and their temporaries.
std::vector<RejectionCase> TemporaryCases() {
  const std::string sddmm_producer = "t += B(i,j) * C(i,k) * D(j,k)";
  const std::string gemm_producer = "t += B(i,j) * C(i,k) * D(j,k)";
  return {
      // ---- where nodes and their temporaries
      {"TemporaryNamedLikeATensor",
       "sddmm_spmm",
       SddmmSpmm("E", Producer("E += B(i,j) * C(i,k) * D(j,k)"), Consumer("A(i,l) += E * E(j,l)")),
       {"temporary E has the name of a tensor of the expression"},
       SddmmSpmm()},
      {"TemporaryDeclaredTwice",
       "sddmm_spmm_gemm",
       SddmmSpmmGemm("t", "t", gemm_producer, "A(i,m) += t * F(l,m)"),
       {"temporary t is declared twice"},
       SddmmSpmmGemm("T(l)", "t", gemm_producer, "A(i,m) += T(l) * F(l,m)")},
      {"TemporaryWithAnUnknownIndex",
       "sddmm_spmm",
       SddmmSpmm("T(z)"),
       {"temporary T(z) uses unknown index z"},
       SddmmSpmm()},
      {"TemporaryThatDoesNotParse",
       "sddmm_spmm",
       SddmmSpmm("T(l"),
       {"temporary \"T(l\"", "column 4", "expected ',' or ')'"},
       SddmmSpmm()},
      {"ComputeThatDoesNotParse",
       "sddmm_spmm",
       SddmmSpmm("t", Producer("t += B(i,j) * C(i,k) * D(j,k")),
       {"compute \"t += B(i,j) * C(i,k) * D(j,k\"", "column 29", "expected ',' or ')'"},
       SddmmSpmm()},
      {"SectionWithoutCompute",
       "sddmm_spmm",
       SddmmSpmm("t", Producer(sddmm_producer), {{"loops", {"l"}}}),
       {"a producer or consumer section needs a \"compute\" or a \"where\""},
       SddmmSpmm()},
      {"TemporaryUsedWithOtherIndices",
       "sddmm_spmm_gemm",
       SddmmSpmmGemm("T(l)", "t", gemm_producer, "A(i,m) += T(m) * F(l,m)"),
       {"temporary T is declared as T(l) but used with indices (m)"},
       SddmmSpmmGemm("T(l)", "t", gemm_producer, "A(i,m) += T(l) * F(l,m)")},
      {"ComputeReadsAnUnknownTensor",
       "sddmm_spmm",
       SddmmSpmm("t", Producer("t += B(i,j) * Z(i,k) * D(j,k)")),
       {"Z is neither a tensor of the expression nor a temporary in scope"},
       SddmmSpmm()},
      {"ComputeIndexesATensorDifferently",
       "sddmm_spmm",
       SddmmSpmm("t", Producer("t += B(i,j) * C(k,i) * D(j,k)")),
       {"C is indexed (i,k) in the expression, not (k,i)"},
       SddmmSpmm()},
      {"ComputeWritesAnInput",
       "sddmm_spmm",
       SddmmSpmm("t", Producer("C(i,k) += B(i,j) * D(j,k)")),
       {"writes the input C"},
       SddmmSpmm()},
      {"ConsumerWritesItsTemporary",
       "sddmm_spmm",
       SddmmSpmm("t", Producer(sddmm_producer), Consumer("t += E(j,l)")),
       {"writes temporary t outside the producer of its where node"},
       SddmmSpmm()},
      {"ProducerWritesTheOutput",
       "sddmm_spmm",
       SddmmSpmm("t", Producer("A(i,l) += B(i,j) * C(i,k) * D(j,k)", {"k", "l"}),
                 Consumer("A(i,l) += t * E(j,l)")),
       {"writes the output inside the producer of temporary t"},
       SddmmSpmm()},
      {"InputUsedTwice",
       "sddmm_spmm",
       SddmmSpmm("t", Producer(sddmm_producer), Consumer("A(i,l) += t * E(j,l) * B(i,j)")),
       {"input B is used by 2 computes", "exactly once"},
       SddmmSpmm()},
      {"InputNeverUsed",
       "sddmm_spmm",
       SddmmSpmm("t", Producer("t += B(i,j) * C(i,k)")),
       {"input D is used by 0 computes", "exactly once"},
       SddmmSpmm()},
      {"TemporaryNeverRead",
       "sddmm_spmm",
       SddmmSpmm("t", Producer(sddmm_producer), Consumer("A(i,l) += E(j,l)")),
       {"temporary t must be written once by its producer and read once by its consumer"},
       SddmmSpmm()},
      {"LoopRepeatsACompute",
       "sddmm_spmm",
       SddmmSpmm("t", Producer(sddmm_producer), Consumer("A(i,l) += t * E(j,l)", {"k", "l"})),
       {"loop k encloses compute A(i,l) += t * E(j,l)", "does not use k", "it would be repeated"},
       SddmmSpmm()},
      {"TemporaryIndexNotProduced",
       "sddmm_spmm",
       SddmmSpmm("T(l)", Producer("T(l) += B(i,j) * C(i,k) * D(j,k)", {"k", "l"}),
                 Consumer("A(i,l) += T(l) * E(j,l)")),
       {"temporary T(l) has index l, which its producer does not use"},
       SddmmSpmm()},
      {"TemporaryMissesASharedIndex",
       "sddmm_spmm",
       SddmmSpmm("t", Producer(sddmm_producer, {"j", "k"}),
                 Consumer("A(i,l) += t * E(j,l)", {"j", "l"}), {"i"}),
       {"temporary t must be indexed by j",
        "both its producer and its consumer use it outside the enclosing loops"},
       SddmmSpmm("T(j)", Producer("T(j) += B(i,j) * C(i,k) * D(j,k)", {"j", "k"}),
                 Consumer("A(i,l) += T(j) * E(j,l)", {"j", "l"}), {"i"})},
  };
}

std::vector<RejectionCase> Cases() {
  std::vector<RejectionCase> cases = FormatCases();
  for (auto group : {OutputAndLoopCases(), TemporaryCases()})
    cases.insert(cases.end(), group.begin(), group.end());
  return cases;
}

class LoweringRefuses : public ::testing::TestWithParam<RejectionCase> {};

TEST_P(LoweringRefuses, WithAReasonNamingTheCause) {
  const RejectionCase& c = GetParam();
  const Expression e = ExpressionOf(c.kernel);
  const Schedule schedule = Schedule::FromJson(c.schedule, c.name);
  const LowerOutcome outcome = LowerNoThrow(e, schedule);
  EXPECT_EQ(outcome.nest, nullptr) << c.schedule.dump();
  ASSERT_FALSE(outcome.error.empty());
  for (const auto& part : c.reason_parts)
    EXPECT_NE(outcome.error.find(part), std::string::npos)
        << "reason: " << outcome.error << "\nlacks: " << part;
  if (!c.fixed.is_null()) {
    const LowerOutcome fixed = LowerNoThrow(e, Schedule::FromJson(c.fixed, c.name + " fixed"));
    EXPECT_NE(fixed.nest, nullptr) << c.fixed.dump() << ": " << fixed.error;
  }
}

INSTANTIATE_TEST_SUITE_P(Lower, LoweringRefuses, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<RejectionCase>& info) {
                           return info.param.name;
                         });

// Fields that JSON cannot carry wrong still reach lowering from code (samplers, mutations).
TEST(LoweringRefuses, AChunkBelowOne) {
  const Expression e = KernelExpression("spmv");
  Schedule s = FixedCsrSchedule(e);
  s.chunk = 0;
  const LowerOutcome outcome = LowerNoThrow(e, s);
  EXPECT_EQ(outcome.nest, nullptr);
  EXPECT_NE(outcome.error.find("parallel chunk is 0; it must be from 1 to 2147483647"),
            std::string::npos)
      << outcome.error;
  // Serial schedules have no chunk to check.
  s.parallel.clear();
  EXPECT_NE(LowerNoThrow(e, s).nest, nullptr);
}

TEST(LoweringRefuses, ASplitBelowOne) {
  const Expression e = KernelExpression("spmm");
  for (int64_t split : {0, -4}) {
    for (const std::string index : {"i", "j"}) {
      Schedule s = FixedCsrSchedule(e);
      s.splits[index] = split;
      const LowerOutcome outcome = LowerNoThrow(e, s);
      EXPECT_EQ(outcome.nest, nullptr) << index << " split " << split;
      EXPECT_NE(outcome.error.find("split of " + index + " is " + std::to_string(split)),
                std::string::npos)
          << outcome.error;
    }
  }
}

// The contract callers rely on: whatever the schedule, Lower answers with a nest or a reason,
// never both, never an exception.
TEST(LoweringRefuses, NeverThrowsAndGivesANestOrAReason) {
  const Expression e = KernelExpression("spmm");
  std::vector<Schedule> schedules;
  for (const auto& c : Cases()) {
    if (c.kernel == "spmm") schedules.push_back(Schedule::FromJson(c.schedule, c.name));
  }
  Schedule empty;  // no loops, no format
  schedules.push_back(empty);
  Schedule odd = FixedCsrSchedule(e);
  odd.root.compute = "C(i,j) += A(i,k) * B(k,j";  // unbalanced, given directly
  schedules.push_back(odd);
  odd.root.compute = "C(i,j) += A(i,k) * B(k,j)";  // the whole expression, written out
  schedules.push_back(odd);
  int lowered = 0;
  for (const Schedule& s : schedules) {
    const LowerOutcome outcome = LowerNoThrow(e, s);
    EXPECT_NE(outcome.nest == nullptr, outcome.error.empty()) << s.CanonicalJson();
    lowered += outcome.nest != nullptr;
  }
  EXPECT_EQ(lowered, 1);  // only the written-out compute is valid
}

// TACO's default schedule lowers for every named kernel: it is the baseline of every tune.
TEST(Lower, FixedCsrLowersForEveryNamedKernel) {
  for (const KernelDef& k : KernelLibrary()) {
    const Expression e = KernelExpression(k.name);
    const LowerOutcome outcome = LowerNoThrow(e, FixedCsrSchedule(e));
    ASSERT_NE(outcome.nest, nullptr) << k.name << ": " << outcome.error;
    EXPECT_EQ(outcome.nest->storage.levels.size(), e.sparse_input().indices.size()) << k.name;
    // The first mode is the parallel loop.
    EXPECT_NE(outcome.nest->ToString().find("for " + e.sparse_input().indices[0] + " ["),
              std::string::npos);
    EXPECT_NE(outcome.nest->ToString().find("parallel"), std::string::npos) << k.name;
  }
}

// What the nest says about a valid schedule: levels, partial sums, balanced partitions and
// where the output is cleared.
TEST(Lower, MarksLevelsPartialSumsAndPartitions) {
  const Expression e = KernelExpression("spmv");
  Schedule s = Schedule::FromJson(Linear({"i1", "k1", "i0", "k0"}, {"i1:U", "k1:C", "i0:U", "k0:U"},
                                         {{"i", 4}, {"k", 4}}, {{"index", "i1"}, {"chunk", 8}}),
                                  "bcsr");
  LowerOutcome bcsr = LowerNoThrow(e, s);
  ASSERT_NE(bcsr.nest, nullptr) << bcsr.error;
  const std::string text = bcsr.nest->ToString();
  EXPECT_NE(text.find("for i1 [U level 0, parallel]"), std::string::npos) << text;
  EXPECT_NE(text.find("for k1 [C level 1]"), std::string::npos) << text;
  EXPECT_NE(text.find("for k0 [U level 3"), std::string::npos) << text;
  EXPECT_EQ(bcsr.nest->splits.at("i"), 4);

  Schedule csr = FixedCsrSchedule(e);
  csr.unroll = 4;
  csr.partition = Partition::kBalanced;
  LowerOutcome unrolled = LowerNoThrow(e, csr);
  ASSERT_NE(unrolled.nest, nullptr) << unrolled.error;
  const std::string u = unrolled.nest->ToString();
  EXPECT_NE(u.find("for i [U level 0, parallel balanced]"), std::string::npos) << u;
  EXPECT_NE(u.find("for k [C level 1, 4 partial sums]"), std::string::npos) << u;
  // Each row is written once: no clearing of y up front.
  EXPECT_FALSE(unrolled.nest->zero_output) << u;
  // The canonical schedule drops the unused chunk of a balanced partition.
  EXPECT_EQ(unrolled.nest->schedule.chunk, 1);
}

}  // namespace
}  // namespace sparsetune
