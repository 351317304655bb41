// Dense inputs read through a transposed copy made on entry.
#include <gtest/gtest.h>

#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "measure/runner.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

TEST(Transposed, SddmmAndSpmmVerify) {
  Jit jit;
  const CooTensor tensor = testing::SmallWorkload(2);
  struct Case {
    std::string kernel;
    std::string transposed;
    std::vector<std::string> order;
  };
  const std::vector<Case> cases = {{"sddmm", "C", {"i", "j", "k"}},
                                   {"sddmm", "B", {"i", "j", "k"}},
                                   {"spmm", "B", {"i", "k", "j"}}};
  for (const auto& c : cases) {
    const Expression e = KernelExpression(c.kernel);
    for (DType dtype : {DType::kF32, DType::kF64}) {
      // 37 is not a multiple of the copy's 32 x 32 blocks.
      const std::string dense = c.kernel == "sddmm" ? "k" : "j";
      KernelRunner runner(e, tensor, ResolveIndexSizes(e, tensor.dims, {{dense, 37}}), dtype, jit);
      Schedule s = Schedule::FromJson({{"loop_order", c.order},
                                       {"format", {"i:U", (c.kernel == "sddmm" ? "j:C" : "k:C")}},
                                       {"parallel", {{"index", "i"}, {"chunk", 8}}},
                                       {"transpose", {c.transposed}}},
                                      "test");
      RunOptions options;
      options.time = false;
      const RunResult r = runner.Run(s, options);
      ASSERT_TRUE(r.ok() && r.verified) << c.kernel << " " << c.transposed << ": " << r.message;
      EXPECT_NE(r.nest.find("transpose " + c.transposed), std::string::npos);
    }
  }
}

// Under column segments of A (the outermost loop), C(k,j)'s copy holds one segment's columns at
// a time (shared by the threads, or one per thread when the segments go to threads); segment
// widths that do not divide the columns leave a short last segment.
TEST(Transposed, ASegmentAtATimeVerifies) {
  Jit jit;
  const CooTensor tensor = testing::RandomSparse({70, 70}, 900, 4);
  const Expression e = KernelExpression("sddmm");
  for (DType dtype : {DType::kF32, DType::kF64}) {
    KernelRunner runner(e, tensor, ResolveIndexSizes(e, tensor.dims, {{"k", 37}}), dtype, jit);
    for (int64_t width : {8, 16, 64}) {
      for (int unroll : {1, 4}) {
        const nlohmann::json parallel =
            width == 8 ? nlohmann::json{{"index", "j1"}, {"threads", 3}}
                       : nlohmann::json{{"index", "i"}, {"partition", "balanced"}};
        Schedule s = Schedule::FromJson({{"splits", {{"j", width}}},
                                         {"loop_order", {"j1", "i", "j0", "k"}},
                                         {"format", {"j1:U", "i:C", "j0:C"}},
                                         {"parallel", parallel},
                                         {"unroll", unroll},
                                         {"transpose", {"C"}},
                                         // Renumbered columns: the whole copy is permuted.
                                         {"ordering", unroll == 4 ? "degree" : "none"}},
                                        "test");
        RunOptions options;
        options.time = false;
        const RunResult r = runner.Run(s, options);
        EXPECT_TRUE(r.ok() && r.verified)
            << DTypeName(dtype) << " width " << width << " unroll " << unroll << ": " << r.message;
      }
    }
  }
}

TEST(Transposed, OnlyDenseInputsOfOrderTwo) {
  auto error_of = [](const std::string& kernel, const std::string& name) {
    const Expression e = KernelExpression(kernel);
    Schedule s = FixedCsrSchedule(e);
    s.transposed = {name};
    LowerOutcome o = Lower(e, s);
    EXPECT_FALSE(o.nest) << kernel << " " << name;
    return o.error;
  };
  EXPECT_NE(error_of("spmv", "x").find("order 2"), std::string::npos);
  EXPECT_NE(error_of("spmv", "A").find("order 2"), std::string::npos);
  EXPECT_NE(error_of("spmm", "C").find("order 2"), std::string::npos);  // the output
  EXPECT_NE(error_of("spmm", "Z").find("not a tensor"), std::string::npos);
}

}  // namespace
}  // namespace sparsetune
