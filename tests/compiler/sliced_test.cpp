// Sliced (SELL-C) formats: a compressed level stored across the lanes of the U level below it.
#include <gtest/gtest.h>

#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "measure/runner.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

Schedule Parse(const nlohmann::json& json) {
  return Schedule::FromJson(json, "test schedule");
}

nlohmann::json SellSpmv(int lanes, bool balanced) {
  return {{"splits", {{"i", lanes}}},
          {"loop_order", {"i1", "k", "i0"}},
          {"format", {"i1:U", "k:S", "i0:U"}},
          {"parallel",
           {{"index", "i1"}, {"chunk", 4}, {"partition", balanced ? "balanced" : "dynamic"}}}};
}

TEST(Sliced, SpmvVerifiesForEveryLaneCount) {
  const Expression e = KernelExpression("spmv");
  Jit jit;
  // Rows of very different lengths (and empty rows) pad unevenly within a slice.
  const std::vector<CooTensor> tensors = {testing::SmallWorkload(2),
                                          testing::RandomSparse({301, 77}, 2500, 3),
                                          testing::RandomSparse({17, 5000}, 400, 4)};
  for (const CooTensor& tensor : tensors) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      KernelRunner runner(e, tensor, ResolveIndexSizes(e, tensor.dims, {}), dtype, jit);
      for (int lanes : {2, 4, 8, 16, 32}) {
        for (bool narrow : {false, true}) {
          Schedule s = Parse(SellSpmv(lanes, lanes % 8 == 0));
          s.narrow_coordinates = narrow;
          RunOptions options;
          options.time = false;
          const RunResult r = runner.Run(s, options);
          ASSERT_TRUE(r.ok() && r.verified) << lanes << " lanes: " << r.message;
          // The slice of lanes accumulates in registers over the slots.
          EXPECT_NE(r.nest.find("i0 slice in registers"), std::string::npos) << r.nest;
        }
      }
    }
  }
}

TEST(Sliced, SpmmAndSplitSlicedIndexVerify) {
  Jit jit;
  const CooTensor tensor = testing::SmallWorkload(2);
  const Expression spmm = KernelExpression("spmm");
  KernelRunner runner(spmm, tensor, ResolveIndexSizes(spmm, tensor.dims, {{"j", 24}}), DType::kF32,
                      jit);
  const std::vector<nlohmann::json> schedules = {
      {{"splits", {{"i", 8}}},
       {"loop_order", {"i1", "k", "i0", "j"}},
       {"format", {"i1:U", "k:S", "i0:U"}},
       {"parallel", {{"index", "i1"}, {"chunk", 2}}}},
      // The sliced level is the inner part of k, under a compressed k1.
      {{"splits", {{"i", 4}, {"k", 16}}},
       {"loop_order", {"i1", "k1", "k0", "i0", "j"}},
       {"format", {"i1:U", "k1:C", "k0:S", "i0:U"}},
       {"parallel", {{"index", "i1"}, {"chunk", 1}}}},
  };
  for (const auto& json : schedules) {
    RunOptions options;
    options.time = false;
    const RunResult r = runner.Run(Parse(json), options);
    ASSERT_TRUE(r.ok() && r.verified) << json.dump() << ": " << r.message;
  }
}

TEST(Sliced, LoweringSaysWhyASlicedScheduleDoesNotApply) {
  const Expression spmv = KernelExpression("spmv");
  auto error_of = [&](const Expression& e, const nlohmann::json& json) {
    LowerOutcome o = Lower(e, Parse(json));
    EXPECT_FALSE(o.nest) << json.dump();
    return o.error;
  };
  // No lanes below the sliced level.
  EXPECT_NE(error_of(spmv, {{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:S"}}})
                .find("must be followed in the format by a U level"),
            std::string::npos);
  // The lanes' loop is not directly inside the sliced level's loop: a reduction over them
  // would need i outside the lanes.
  EXPECT_NE(error_of(spmv, {{"splits", {{"k", 4}}},
                            {"loop_order", {"k1", "i", "k0"}},
                            {"format", {"k1:U", "i:S", "k0:U"}}})
                .find("must directly enclose the loop k0"),
            std::string::npos);
  // Parallel slots would race on the lanes' outputs.
  nlohmann::json parallel_slots = SellSpmv(8, false);
  parallel_slots["parallel"] = "k";
  EXPECT_NE(error_of(spmv, parallel_slots).find("cannot be parallel"), std::string::npos);
  // A sparse output lives at the sparse operand's positions, which padding would multiply.
  const Expression sddmm = KernelExpression("sddmm");
  EXPECT_NE(error_of(sddmm, {{"splits", {{"i", 4}}},
                             {"loop_order", {"i1", "j", "i0", "k"}},
                             {"format", {"i1:U", "j:S", "i0:U"}}})
                .find("sparse output"),
            std::string::npos);
}

}  // namespace
}  // namespace sparsetune
