// The baselines compute what the reference computes, on the runner's operands in the layout
// each kernel names, say what runs, and `sparsetune bench` reports every contender verified
// with versions and both probes.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "baselines/baseline.hpp"
#include "cli/cli_support.hpp"
#include "ir/kernels.hpp"
#include "jit/jit.hpp"
#include "measure/reference.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

const std::vector<std::string> kKernels = {"spmv", "spmm", "sddmm", "sddmm_nt"};

std::set<std::string> ExpectedBaselines(const std::string& kernel) {
  if (kernel == "spmv" || kernel == "spmm")
    return {"hand", "hand_dynamic", "eigen", "librsb", "librsb_tuned", "graphblas", "pytorch"};
  return {"hand", "hand_dynamic", "graphblas", "pytorch"};
}

void ExpectNear(const ValueBuffer& out, const ReferenceResult& ref, DType dtype, double factor,
                const std::string& what) {
  const double rtol = dtype == DType::kF32 ? 2e-4 : 1e-10;
  ASSERT_EQ(out.size(), static_cast<int64_t>(ref.values.size())) << what;
  for (int64_t q = 0; q < out.size(); ++q) {
    const double scale = ref.magnitudes[q] > 0 ? ref.magnitudes[q] : 1.0;
    ASSERT_NEAR(out.Get(q), factor * ref.values[q], factor * rtol * scale)
        << what << " element " << q;
  }
}

void ExpectBaselinesMatch(const std::string& kernel, const CooTensor& tensor, DType dtype) {
  const Expression e = KernelExpression(kernel);
  std::map<std::string, int64_t> dense = {{"j", 24}, {"k", 24}};
  if (kernel == "spmv") dense.clear();
  if (kernel == "spmm") dense.erase("k");
  if (kernel == "sddmm" || kernel == "sddmm_nt") dense.erase("j");
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
  auto baselines = MakeBaselines(o);
  std::set<std::string> names;
  for (auto& baseline : baselines) {
    const std::string what = baseline->name() + " " + kernel + " " + DTypeName(dtype);
    names.insert(baseline->name());
    baseline->Prepare();
    EXPECT_FALSE(baseline->version.empty()) << what;
    EXPECT_FALSE(baseline->method.empty()) << what;
    const bool textbook = baseline->name() == "hand" || baseline->name() == "hand_dynamic";
    EXPECT_EQ(baseline->kind(), textbook ? "hand" : "library") << what;
    if (textbook || baseline->name() == "eigen") {
      // Compiled by the JIT with the generated kernels' flags.
      EXPECT_NE(baseline->flags.find(Jit::Flags()), std::string::npos) << what;
    } else {
      // A prebuilt library names the shared object it runs from.
      EXPECT_EQ(baseline->flags.rfind("prebuilt /", 0), 0u) << what << ": " << baseline->flags;
    }
    if (baseline->name() == "eigen") {
      EXPECT_EQ(baseline->version.rfind("Eigen 3.", 0), 0u);
    }
    if (baseline->name() == "graphblas") {
      EXPECT_EQ(baseline->version, "SuiteSparse:GraphBLAS 7.4.0") << what;
    }
    if (baseline->name() == "pytorch") {
      EXPECT_EQ(baseline->version.rfind("PyTorch 1.", 0), 0u);
    }
    baseline->Call();
    ExpectNear(baseline->Output(), ref, dtype, 1.0, what);
    // GraphBLAS accumulates into its full output in place (C += A*B); its second call gives
    // twice the product, every other baseline the product again.
    baseline->Call();
    const bool accumulates =
        baseline->name() == "graphblas" && (kernel == "spmv" || kernel == "spmm");
    ExpectNear(baseline->Output(), ref, dtype, accumulates ? 2.0 : 1.0, what + " (second call)");
  }
  EXPECT_EQ(names, ExpectedBaselines(kernel)) << kernel;
}

TEST(Baselines, EveryBaselineMatchesTheReference) {
  const CooTensor real = testing::SmallWorkload(2);
  const CooTensor random = testing::RandomSparse({203, 151}, 3000, 11);
  for (const std::string& kernel : kKernels) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      ExpectBaselinesMatch(kernel, real, dtype);
      ExpectBaselinesMatch(kernel, random, dtype);
    }
  }
}

// LibTorch 1.13's CPU sampled_addmm forms dense M x N matrices: where they would not fit, the
// PyTorch baseline refuses instead of exhausting memory.
TEST(Baselines, PyTorchSddmmRefusesWhatCannotFit) {
  CooTensor tensor;
  tensor.Reset({200000, 200000}, 3);
  for (int32_t e = 0; e < 3; ++e) {
    const int32_t c[2] = {e * 1000, e * 7};
    tensor.Append(c, 0.5 + e);
  }
  tensor.Canonicalize();
  const Expression e = KernelExpression("sddmm");
  const IndexSizes sizes = ResolveIndexSizes(e, tensor.dims, {{"k", 4}});
  const std::vector<ValueBuffer> inputs = MakeDenseInputs(e, sizes, DType::kF32);
  BaselineOperands o;
  o.kernel = "sddmm";
  o.expression = &e;
  o.sparse = &tensor;
  o.inputs = &inputs;
  o.sizes = sizes;
  bool seen = false;
  for (auto& baseline : MakeBaselines(o)) {
    if (baseline->name() != "pytorch") continue;
    seen = true;
    try {
      baseline->Prepare();
      ADD_FAILURE() << "PyTorch prepared a 200000 x 200000 SDDMM";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("not run"), std::string::npos) << error.what();
    }
  }
  EXPECT_TRUE(seen);
}

TEST(Baselines, FlopProbeMeasuresThisMachine) {
  Jit jit;
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const FlopProbe probe = MeasureFlopRate(jit, dtype, 2);
    EXPECT_GT(probe.gflops, 1.0) << DTypeName(dtype);
    EXPECT_TRUE(probe.isa == "avx512" || probe.isa == "avx2-fma" || probe.isa == "sse2")
        << probe.isa;
    const int width = probe.isa == "avx512" ? 64 : probe.isa == "avx2-fma" ? 32 : 16;
    EXPECT_EQ(probe.lanes, width / int(DTypeSize(dtype)));
  }
}

const char* kPatternMatrix =
    "%%MatrixMarket matrix coordinate pattern general\n6 5 9\n1 1\n1 4\n2 2\n3 1\n3 5\n4 3\n5 "
    "2\n6 4\n6 5\n";

TEST(BenchCli, ReportsEveryContenderVerifiedWithVersionsAndProbes) {
  testing::TempDir dir;
  // Pattern only: every contender gets the same generated, non-constant values.
  const std::string file = dir.File("p.mtx", kPatternMatrix);
  for (const std::string& kernel : kKernels) {
    const auto r = testing::RunCli(
        {"bench", file, "--kernel", kernel, "--min-ms", "5", "--db", dir.File("b.db"), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto out = nlohmann::json::parse(r.out);
    EXPECT_EQ(out["kernel"], kernel);
    EXPECT_GT(out["bandwidth_probe_gbs"].get<double>(), 0);
    EXPECT_GT(out["flop_probe_gflops"].get<double>(), 0);
    EXPECT_EQ(out["flop_probe"]["dtype"], "f32");
    EXPECT_NE(out["flop_probe"]["flags"].get<std::string>().find(Jit::Flags()), std::string::npos);
    ASSERT_TRUE(out.contains("effective_gbs"));
    const double width = kernel == "spmv" ? 1 : 256;
    EXPECT_DOUBLE_EQ(out["flops"].get<double>(), 2 * 9 * width) << kernel;
    std::set<std::string> baselines;
    std::map<std::string, double> textbook_ms;  // both textbook forms, by name
    for (const auto& result : out["results"]) {
      EXPECT_TRUE(result["verified"].get<bool>()) << result.dump();
      if (result["kind"] == "hand") textbook_ms[result["name"]] = result["time_ms"].get<double>();
      EXPECT_GT(result["time_ms"].get<double>(), 0);
      EXPECT_GT(result["gflops"].get<double>(), 0);
      EXPECT_NEAR(result["flop_share"].get<double>(),
                  result["gflops"].get<double>() / out["flop_probe_gflops"].get<double>(), 1e-9);
      EXPECT_FALSE(result["version"].get<std::string>().empty()) << result.dump();
      if (result["kind"] != "sparsetune") {
        baselines.insert(result["name"].get<std::string>());
        EXPECT_FALSE(result["method"].get<std::string>().empty()) << result.dump();
      }
      if (result["kind"] == "hand" || result["name"] == "eigen" || result["kind"] == "sparsetune") {
        EXPECT_EQ(result["flags"], out["flop_probe"]["flags"]) << result.dump();
      }
    }
    EXPECT_EQ(baselines, ExpectedBaselines(kernel)) << kernel;
    EXPECT_TRUE(out.contains("best_library"));
    // The textbook kernel bench compares with is the faster of its two forms.
    ASSERT_EQ(textbook_ms.size(), 2u) << kernel;
    EXPECT_EQ(out["best_hand"],
              textbook_ms["hand"] <= textbook_ms["hand_dynamic"] ? "hand" : "hand_dynamic");
    EXPECT_TRUE(out.contains("best_baseline"));
    EXPECT_TRUE(out.contains("speedup_vs_best_baseline"));
  }
}

// SDDMM with C given as C(j,k) counts its operands like SDDMM: A in CSR, B, C and D's values;
// a pattern matrix's values are all 1, so A's CSR counts no values.
TEST(BenchCli, SddmmNtCountsItsOperands) {
  testing::TempDir dir;
  const std::string file = dir.File("p.mtx", kPatternMatrix);
  const auto r =
      testing::RunCli({"bench", file, "--kernel", "sddmm_nt", "--dense", "k=16", "--dtype", "f64",
                       "--min-ms", "5", "--db", dir.File("b.db"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  const double csr = 9 * 4 + 7 * 4, dense = (6 + 5) * 16 * 8, values = 9 * 8;
  EXPECT_DOUBLE_EQ(out["effective_bytes"].get<double>(), csr + dense + values);
  EXPECT_TRUE(out["uniform_values"].get<bool>());
  EXPECT_EQ(out["flop_probe"]["dtype"], "f64");
}

// GraphBLAS takes the paths its source names: the in-place dot4 (w += A*u) and saxpy5
// (C += A*B), and the masked dot product dot3 for both SDDMM layouts.
TEST(BenchCli, GraphBlasTakesItsFastPaths) {
  testing::TempDir dir;
  const std::string file = dir.File("p.mtx", kPatternMatrix);
  const std::vector<std::pair<std::string, std::string>> paths = {
      {"spmv", "dot4"}, {"spmm", "saxpy5"}, {"sddmm", "dot3"}, {"sddmm_nt", "dot3"}};
  for (const auto& [kernel, method] : paths) {
    const auto r = testing::RunCli(
        {"bench", file, "--kernel", kernel, "--min-ms", "1", "--db", dir.File("b.db"), "--json"},
        {"SPARSETUNE_GRAPHBLAS_BURBLE=1"});
    ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
    EXPECT_NE(r.err.find("(" + method), std::string::npos)
        << kernel << ": " << r.err.substr(0, 2000);
    // With GrB_REPLACE the masked product is handed to its output as it is, never merged into
    // the previous call's entries through a masked assign.
    EXPECT_EQ(r.err.find("via assign"), std::string::npos) << kernel;
    // The burble goes to stderr: stdout stays one JSON object.
    EXPECT_NO_THROW(nlohmann::json::parse(r.out));
  }
}

TEST(BenchCli, KernelsWithoutABaselineAreRefused) {
  testing::TempDir dir;
  const auto r = testing::RunCli(
      {"bench", std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx", "--kernel",
       "spmm_gemm"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("spmm_gemm"), std::string::npos) << r.err;
}

// Without baselines, bench times sparsetune's kernels for any kernel; rates it cannot count
// are left out.
TEST(BenchCli, KernelsWithoutABaselineRunAlone) {
  testing::TempDir dir;
  const std::string file = dir.File("p.mtx", kPatternMatrix);
  const auto r =
      testing::RunCli({"bench", file, "--kernel", "spmm_gemm", "--dense", "k=4,l=4",
                       "--no-libraries", "--min-ms", "1", "--db", dir.File("b.db"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["flops"].get<double>(), 0);
  ASSERT_FALSE(out["results"].empty());
  for (const auto& result : out["results"]) {
    EXPECT_EQ(result["kind"], "sparsetune");
    EXPECT_TRUE(result["verified"].get<bool>()) << result.dump();
    EXPECT_FALSE(result.contains("gflops"));
  }
}

// GraphBLAS, librsb and LibTorch take milliseconds to seconds to load and relocate: the
// commands that never benchmark (above all `query`, which build scripts call) must not load
// them, and `bench` must (quietly).
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
    EXPECT_EQ(r.err.find("libtorch"), std::string::npos) << args[0] << " loaded LibTorch";
  }
  const auto bench = testing::RunCli(
      {"bench", example, "--kernel", "spmv", "--min-ms", "5", "--db", dir.File("b.db"), "--json"},
      {"LD_DEBUG=libs"});
  EXPECT_EQ(bench.exit_code, 0) << bench.err.substr(
      bench.err.size() > 2000 ? bench.err.size() - 2000 : 0);
  EXPECT_NE(bench.err.find("libgraphblas"), std::string::npos);
  EXPECT_NE(bench.err.find("libtorch"), std::string::npos);
  // LibTorch's once-a-process notice that sparse CSR is in beta, through glog, is not shown.
  EXPECT_EQ(bench.err.find("InitGoogleLogging"), std::string::npos);
  EXPECT_EQ(bench.err.find("in beta state"), std::string::npos);
}

}  // namespace
}  // namespace sparsetune
