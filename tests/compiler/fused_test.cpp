// Each of SparseAuto's eight fused kernels verifies under TACO's linear default schedule and
// under the paper's chosen branched schedule (the cleaned Table 2), and the fused schedules
// lower to the loop structure they describe.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/read.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "measure/runner.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

struct FusedCase {
  std::string kernel;
  std::string schedule;  // JSON
};

// Paper Table 2 (cleaned), written as schedule trees.
std::vector<FusedCase> FusedCases() {
  return {
      {"sddmm_spmm", R"J({"tree": {"loops": ["i","j"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j) * C(i,k) * D(j,k)"},
          "consumer": {"loops": ["l"], "compute": "A(i,l) += t * E(j,l)"}}},
          "format": ["i:U","j:C"], "parallel": {"index": "i", "chunk": 16}})J"},
      {"sddmm_spmm_gemm", R"J({"tree": {"loops": ["i"], "where": {"temp": "T(l)",
          "producer": {"loops": ["j"], "where": {"temp": "t",
              "producer": {"loops": ["k"], "compute": "t += B(i,j) * C(i,k) * D(j,k)"},
              "consumer": {"loops": ["l"], "compute": "T(l) += t * E(j,l)"}}},
          "consumer": {"loops": ["m","l"], "compute": "A(i,m) += T(l) * F(l,m)"}}},
          "format": ["i:U","j:C"], "parallel": {"index": "i", "chunk": 16}})J"},
      {"sddmm_spmm_gemm", R"J({"tree": {"loops": ["i","j"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j) * C(i,k) * D(j,k)"},
          "consumer": {"loops": ["m","l"], "compute": "A(i,m) += t * E(j,l) * F(l,m)"}}},
          "format": ["i:U","j:C"], "parallel": {"index": "i", "chunk": 16}})J"},
      {"hadamard_gemm", R"J({"tree": {"loops": ["i","k"], "where": {"temp": "t",
          "producer": {"loops": ["j"], "compute": "t += B(i,j) * C(j,k) * D(j,k)"},
          "consumer": {"loops": ["l"], "compute": "A(i,l) += t * E(k,l)"}}},
          "format": ["i:U","j:C"], "parallel": {"index": "i", "chunk": 16}})J"},
      {"spmm_gemm", R"J({"tree": {"loops": ["i","k"], "where": {"temp": "t",
          "producer": {"loops": ["j"], "compute": "t += B(i,j) * C(j,k)"},
          "consumer": {"loops": ["l"], "compute": "A(i,l) += t * D(k,l)"}}},
          "format": ["i:U","j:C"], "parallel": {"index": "i", "chunk": 16}})J"},
      {"ttmc", R"J({"tree": {"loops": ["i","j","n"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j,k) * E(k,n)"},
          "consumer": {"loops": ["m","l"], "compute": "A(l,m,n) += t * C(i,l) * D(j,m)"}}},
          "format": ["i:C","j:C","k:C"], "parallel": {"index": "i", "chunk": 4}})J"},
      {"ttmc", R"J({"tree": {"loops": ["i","n"], "where": {"temp": "T(m)",
          "producer": {"loops": ["j"], "where": {"temp": "t",
              "producer": {"loops": ["k"], "compute": "t += B(i,j,k) * E(k,n)"},
              "consumer": {"loops": ["m"], "compute": "T(m) += t * D(j,m)"}}},
          "consumer": {"loops": ["m","l"], "compute": "A(l,m,n) += T(m) * C(i,l)"}}},
          "format": ["i:C","j:C","k:C"], "parallel": null})J"},
      {"spttm_ttm", R"J({"tree": {"loops": ["i","j","m"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j,k) * D(k,m)"},
          "consumer": {"loops": ["l"], "compute": "A(i,l,m) += t * C(j,l)"}}},
          "format": ["i:C","j:C","k:C"], "parallel": {"index": "i", "chunk": 4}})J"},
      {"spttm_spttm", R"J({"tree": {"loops": ["i","j","l"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j,k) * C(k,l)"},
          "consumer": {"loops": ["m"], "compute": "A(i,j,m) += t * D(l,m)"}}},
          "format": ["i:C","j:C","k:C"], "parallel": {"index": "i", "chunk": 4}})J"},
      {"mttkrp_gemm", R"J({"tree": {"loops": ["i","j"], "where": {"temp": "t",
          "producer": {"loops": ["k","l"], "compute": "t += B(i,k,l) * C(l,j) * D(k,j)"},
          "consumer": {"loops": ["m"], "compute": "A(i,m) += t * E(j,m)"}}},
          "format": ["i:C","k:C","l:C"], "parallel": {"index": "i", "chunk": 4}})J"},
  };
}

CooTensor WorkloadFor(const Expression& e) {
  return testing::SmallWorkload(static_cast<int>(e.sparse_input().indices.size()));
}

class FusedKernels : public ::testing::TestWithParam<FusedCase> {};

TEST_P(FusedKernels, LinearAndFusedSchedulesVerify) {
  const FusedCase& c = GetParam();
  const Expression e = KernelExpression(c.kernel);
  const CooTensor tensor = WorkloadFor(e);
  std::map<std::string, int64_t> dense = FindKernel(c.kernel)->dense_defaults;
  for (auto& [index, size] : dense) size = std::min<int64_t>(size, 24);  // keep the reference quick
  IndexSizes sizes = ResolveIndexSizes(e, tensor.dims, dense);
  Jit jit;
  KernelRunner runner(e, tensor, sizes, DType::kF32, jit);
  RunOptions options;
  options.time = false;

  RunResult linear = runner.Run(FixedCsrSchedule(e), options);
  ASSERT_TRUE(linear.ok()) << RunStatusName(linear.status) << ": " << linear.message << "\n"
                           << linear.nest;

  Schedule fused = Schedule::FromJson(nlohmann::json::parse(c.schedule), c.kernel);
  RunResult r = runner.Run(fused, options);
  ASSERT_TRUE(r.ok()) << RunStatusName(r.status) << ": " << r.message << "\n"
                      << r.nest << r.source_path;
  EXPECT_TRUE(r.verified);
  EXPECT_NE(r.nest.find("where"), std::string::npos) << r.nest;
}

INSTANTIATE_TEST_SUITE_P(Table2, FusedKernels, ::testing::ValuesIn(FusedCases()),
                         [](const ::testing::TestParamInfo<FusedCase>& info) {
                           return info.param.kernel + "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace sparsetune
