// Grouped compressed levels (Insum's GroupCOO and BlockGroupCOO): segments padded to whole
// groups, walked in fixed-length groups, computing the reference.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "measure/runner.hpp"
#include "support/test_data.hpp"
#include "tensor/pack.hpp"

namespace sparsetune {
namespace {

Schedule Parse(const nlohmann::json& json) {
  return Schedule::FromJson(json, "test schedule");
}

TEST(Grouped, PackingPadsEverySegmentToWholeGroups) {
  const CooTensor tensor = testing::RandomSparse({61, 47}, 700, 7);
  StorageFormat f = StorageFormat::Csr();
  f.levels[1].group = 4;
  const PackOutcome out = Pack(tensor, f, DType::kF64);
  ASSERT_TRUE(out.packed) << out.refusal;
  const PackedLevel& k = out.packed->levels[1];
  int64_t padding = 0;
  for (int64_t i = 0; i < 61; ++i) {
    const int64_t length = k.pos[i + 1] - k.pos[i];
    EXPECT_EQ(length % 4, 0) << "row " << i;
    // Padding repeats the row's last coordinate and stores zeros.
    for (int64_t q = k.pos[i]; q + 1 < k.pos[i + 1]; ++q) {
      EXPECT_LE(k.Coordinate(i, q), k.Coordinate(i, q + 1));
      if (k.Coordinate(i, q) == k.Coordinate(i, q + 1)) {
        EXPECT_EQ(out.packed->value(q + 1), 0.0);
        ++padding;
      }
    }
  }
  EXPECT_EQ(out.packed->stored(), tensor.nnz() + padding);
  // What the format holds is the tensor and zeros.
  const CooTensor back = Unpack(*out.packed);
  double sum = 0, expected = 0;
  for (double v : back.values) sum += v;
  for (double v : tensor.values) expected += v;
  EXPECT_NEAR(sum, expected, 1e-9);
  // A level that is not compressed cannot be grouped.
  StorageFormat bad = StorageFormat::Csr();
  bad.levels[0].group = 4;
  EXPECT_FALSE(bad.Check(tensor.dims).empty());
}

TEST(Grouped, SchedulesNameTheGroupAndRefuseBadOnes) {
  const Schedule s = Parse({{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:G8"}}});
  EXPECT_EQ(s.groups.at("k"), 8);
  EXPECT_EQ(s.ToJson()["format"][1], "k:G8");
  EXPECT_NE(s.Summary().find("k:G8"), std::string::npos);
  for (const char* bad : {"k:G1", "k:G65", "k:Gx", "k:G"}) {
    EXPECT_THROW(Parse({{"loop_order", {"i", "k"}}, {"format", {"i:U", bad}}}), InputError) << bad;
  }
  // Grouped levels already unroll by their group.
  const Expression e = KernelExpression("spmv");
  const LowerOutcome unrolled =
      Lower(e, Parse({{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:G4"}}, {"unroll", 4}}));
  EXPECT_FALSE(unrolled.nest);
  EXPECT_NE(unrolled.error.find("grouped"), std::string::npos) << unrolled.error;
}

TEST(Grouped, SpmvSpmmAndBlockGroupsComputeTheReference) {
  Jit jit;
  const std::vector<CooTensor> tensors = {testing::SmallWorkload(2),
                                          testing::RandomSparse({301, 77}, 2500, 3)};
  const nlohmann::json balanced = {{"index", "i"}, {"chunk", 1}, {"partition", "balanced"}};
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"spmv", {{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:G2"}}, {"parallel", balanced}}},
      {"spmv",
       {{"loop_order", {"i", "k"}},
        {"format", {"i:C", "k:G16"}},
        {"parallel", balanced},
        {"narrow_coordinates", true}}},
      {"spmm",
       {{"splits", {{"j", 8}}},
        {"loop_order", {"i", "j1", "k", "j0"}},
        {"format", {"i:U", "k:G4"}},
        {"parallel", balanced}}},
      {"spmv",
       {{"splits", {{"i", 4}, {"k", 4}}},
        {"loop_order", {"i1", "k1", "i0", "k0"}},
        {"format", {"i1:U", "k1:G2", "i0:U", "k0:U"}},
        {"parallel", {{"index", "i1"}, {"chunk", 2}}}}},
  };
  for (const CooTensor& tensor : tensors) {
    for (const auto& [kernel, json] : cases) {
      const Expression e = KernelExpression(kernel);
      std::map<std::string, int64_t> dense;
      if (kernel == "spmm") dense["j"] = 24;
      KernelRunner runner(e, tensor, ResolveIndexSizes(e, tensor.dims, dense), DType::kF32, jit);
      RunOptions options;
      options.time = false;
      const RunResult r = runner.Run(Parse(json), options);
      ASSERT_TRUE(r.ok()) << json.dump() << ": " << RunStatusName(r.status) << " " << r.message
                          << "\n"
                          << r.nest;
      EXPECT_TRUE(r.verified) << json.dump();
      EXPECT_NE(r.nest.find("groups of"), std::string::npos) << r.nest;
    }
  }
}

TEST(Grouped, OneRunnerPacksEachGroupSizeOnItsOwn) {
  // Packings are kept between runs: one of G = 2 must not serve G = 8.
  const Expression e = KernelExpression("spmv");
  const CooTensor tensor = testing::RandomSparse({301, 77}, 2500, 3);
  Jit jit;
  KernelRunner runner(e, tensor, ResolveIndexSizes(e, tensor.dims, {}), DType::kF32, jit);
  RunOptions options;
  options.time = false;
  for (int g : {2, 4, 8}) {
    const RunResult r =
        runner.Run(Parse({{"loop_order", {"i", "k"}},
                          {"format", nlohmann::json::array({"i:U", "k:G" + std::to_string(g)})}}),
                   options);
    ASSERT_TRUE(r.ok()) << g << ": " << r.message;
    EXPECT_TRUE(r.verified) << g;
  }
}

}  // namespace
}  // namespace sparsetune
