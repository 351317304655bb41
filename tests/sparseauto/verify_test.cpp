// Every schedule that survives SparseAuto's symbolic stages must run through the code generator
// and match the reference on a real matrix or tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "io/read.hpp"
#include "ir/kernels.hpp"
#include "measure/runner.hpp"
#include "sparseauto/sparseauto.hpp"
#include "support/test_data.hpp"
#include "table2.hpp"

namespace sparsetune {
namespace {

class SurvivorsVerify : public ::testing::TestWithParam<std::string> {};

TEST_P(SurvivorsVerify, AgainstTheReference) {
  const Expression e = KernelExpression(GetParam());
  const SparseAutoResult r = RunSparseAuto(e, SparseAutoOptions());
  ASSERT_FALSE(r.survivors.empty());
  const CooTensor tensor =
      testing::SmallWorkload(static_cast<int>(e.sparse_input().indices.size()));
  std::map<std::string, int64_t> dense = FindKernel(GetParam())->dense_defaults;
  for (auto& [index, size] : dense) size = std::min<int64_t>(size, 12);  // a quick reference
  const IndexSizes sizes = ResolveIndexSizes(e, tensor.dims, dense);
  Jit jit;
  KernelRunner runner(e, tensor, sizes, DType::kF32, jit);
  RunOptions options;
  options.time = false;
  for (const auto& c : r.survivors) {
    const RunResult run = runner.Run(c.schedule, options);
    ASSERT_TRUE(run.ok()) << c.notation << ": " << RunStatusName(run.status) << ": " << run.message
                          << "\n"
                          << run.nest << run.source_path;
    EXPECT_TRUE(run.verified) << c.notation;
  }
}

INSTANTIATE_TEST_SUITE_P(EightKernels, SurvivorsVerify,
                         ::testing::ValuesIn(testing::SparseAutoKernels()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace sparsetune
