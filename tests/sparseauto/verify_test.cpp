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
#include "table2.hpp"

namespace sparsetune {
namespace {

CooTensor RandomTensor(std::vector<int64_t> dims, int64_t entries, uint64_t seed) {
  std::mt19937_64 rng(seed);
  CooTensor t;
  t.Reset(dims, entries);
  std::vector<int32_t> c(dims.size());
  for (int64_t n = 0; n < entries; ++n) {
    for (size_t m = 0; m < dims.size(); ++m) c[m] = int32_t(rng() % uint64_t(dims[m]));
    t.Append(c.data(), double(int64_t(rng() % 17) - 8) / 8.0 + 0.0625);
  }
  t.Canonicalize();
  return t;
}

// A small real matrix or tensor from the shared datasets, or a random one without them.
CooTensor Workload(int order) {
  const std::string relative =
      order == 2 ? "datasets/matrices/bcsstk01.mtx" : "datasets/tensors/parti_3D_12031.tns";
  const std::string path = std::string(SPARSETUNE_SHARED_DIR) + "/" + relative;
  if (std::filesystem::exists(path)) return ReadTensorFile(path);
  return order == 2 ? RandomTensor({45, 38}, 300, 5) : RandomTensor({20, 17, 23}, 600, 6);
}

class SurvivorsVerify : public ::testing::TestWithParam<std::string> {};

TEST_P(SurvivorsVerify, AgainstTheReference) {
  const Expression e = KernelExpression(GetParam());
  const SparseAutoResult r = RunSparseAuto(e, SparseAutoOptions());
  ASSERT_FALSE(r.survivors.empty());
  const CooTensor tensor = Workload(static_cast<int>(e.sparse_input().indices.size()));
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
