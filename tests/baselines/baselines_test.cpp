// The library baselines compute what the reference computes, on the runner's operands, and
// `sparsetune bench` reports every contender verified.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "baselines/baseline.hpp"
#include "cli/cli_support.hpp"
#include "ir/kernels.hpp"
#include "measure/reference.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

void ExpectLibrariesMatch(const std::string& kernel, const CooTensor& tensor, DType dtype) {
  const Expression e = KernelExpression(kernel);
  std::map<std::string, int64_t> dense = {{"j", 24}, {"k", 24}};
  if (kernel == "spmv") dense.clear();
  if (kernel == "spmm") dense.erase("k");
  if (kernel == "sddmm") dense.erase("j");
  const IndexSizes sizes = ResolveIndexSizes(e, tensor.dims, dense);
  const std::vector<ValueBuffer> inputs = MakeDenseInputs(e, sizes, dtype);
  const ReferenceResult ref = ComputeReference(e, tensor, sizes, inputs);
  BaselineOperands o;
  o.kernel = kernel;
  o.expression = &e;
  o.sparse = &tensor;
  o.inputs = &inputs;
  o.sizes = sizes;
  o.dtype = dtype;
  o.threads = 2;
  auto libraries = MakeBaselines(o);
  EXPECT_EQ(libraries.size(), kernel == "sddmm" ? 1u : 4u) << kernel;
  const double rtol = dtype == DType::kF32 ? 2e-4 : 1e-10;
  for (auto& library : libraries) {
    library->Prepare();
    library->Call();
    const ValueBuffer out = library->Output();
    ASSERT_EQ(out.size(), static_cast<int64_t>(ref.values.size())) << library->name();
    for (int64_t q = 0; q < out.size(); ++q) {
      const double scale = ref.magnitudes[q] > 0 ? ref.magnitudes[q] : 1.0;
      ASSERT_NEAR(out.Get(q), ref.values[q], rtol * scale)
          << library->name() << " " << kernel << " element " << q;
    }
  }
}

TEST(Baselines, EveryLibraryMatchesTheReference) {
  const CooTensor real = testing::SmallWorkload(2);
  const CooTensor random = testing::RandomSparse({203, 151}, 3000, 11);
  for (const std::string kernel : {"spmv", "spmm", "sddmm"}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      ExpectLibrariesMatch(kernel, real, dtype);
      ExpectLibrariesMatch(kernel, random, dtype);
    }
  }
}

TEST(BenchCli, ReportsEveryContenderVerified) {
  testing::TempDir dir;
  // Pattern only: every contender gets the same generated, non-constant values.
  const std::string file = dir.File(
      "p.mtx",
      "%%MatrixMarket matrix coordinate pattern general\n6 5 9\n1 1\n1 4\n2 2\n3 1\n3 5\n4 3\n5 "
      "2\n6 4\n6 5\n");
  for (const std::string kernel : {"spmv", "spmm", "sddmm"}) {
    const auto r = testing::RunCli(
        {"bench", file, "--kernel", kernel, "--min-ms", "5", "--db", dir.File("b.db"), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto out = nlohmann::json::parse(r.out);
    EXPECT_EQ(out["kernel"], kernel);
    EXPECT_GT(out["bandwidth_probe_gbs"].get<double>(), 0);
    ASSERT_TRUE(out.contains("effective_gbs"));
    bool library = false;
    for (const auto& result : out["results"]) {
      EXPECT_TRUE(result["verified"].get<bool>()) << result.dump();
      EXPECT_GT(result["time_ms"].get<double>(), 0);
      library |= result["kind"] == "library";
    }
    EXPECT_TRUE(library);
  }
}

TEST(BenchCli, KernelsWithoutALibraryAreRefused) {
  testing::TempDir dir;
  const auto r = testing::RunCli(
      {"bench", std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx", "--kernel",
       "spmm_gemm"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("spmm_gemm"), std::string::npos) << r.err;
}

// GraphBLAS and librsb take milliseconds to load and relocate: the commands that never
// benchmark (above all `query`, which build scripts call) must not load them, and `bench` must.
TEST(Baselines, OnlyBenchLoadsTheLibraries) {
  testing::TempDir dir;
  const std::string example =
      std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";
  const std::vector<std::vector<std::string>> commands = {
      {"info", example},
      {"run", example, "--kernel", "spmv"},
      {"query", example, "--kernel", "spmv", "--db", dir.File("q.db")}};
  for (const auto& args : commands) {
    const auto r = testing::RunCli(args, {"LD_DEBUG=libs"});
    EXPECT_NE(r.err.find("libgomp"), std::string::npos) << "LD_DEBUG printed nothing?";
    EXPECT_EQ(r.err.find("libgraphblas"), std::string::npos) << args[0] << " loaded GraphBLAS";
    EXPECT_EQ(r.err.find("librsb"), std::string::npos) << args[0] << " loaded librsb";
  }
  const auto bench =
      testing::RunCli({"bench", example, "--kernel", "spmv", "--json"}, {"LD_DEBUG=libs"});
  EXPECT_EQ(bench.exit_code, 0) << bench.err.substr(
      bench.err.size() > 2000 ? bench.err.size() - 2000 : 0);
  EXPECT_NE(bench.err.find("libgraphblas"), std::string::npos);
}

}  // namespace
}  // namespace sparsetune
