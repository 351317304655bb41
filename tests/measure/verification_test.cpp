// Verification catches a kernel that computes a wrong result, names the first wrong element,
// and tolerates rounding. The wrong kernels are the generated source with one change, put in
// the JIT cache under the original source's key: the runner then loads them as if it had
// compiled the schedule itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_support.hpp"
#include "ir/kernels.hpp"
#include "measure/runner.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

std::string ReplaceOnce(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "no \"" << from << "\" in\n" << text;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

class Verification : public ::testing::Test {
 protected:
  // Makes `runner` load `change(source)` when it asks the JIT for `schedule`'s source.
  void Plant(KernelRunner& runner, const Schedule& schedule,
             const std::function<std::string(const std::string&)>& change) {
    RunOptions options;
    std::string error;
    const std::string source = runner.Source(schedule, options, &error);
    ASSERT_FALSE(source.empty()) << error;
    const std::string wrong = change(source);
    ASSERT_NE(wrong, source);
    const CompiledKernel compiled = jit_.Compile(wrong);
    const std::string target = jit_.LibraryPath(source);
    std::filesystem::copy_file(compiled.library_path, target,
                               std::filesystem::copy_options::overwrite_existing);
    // The cache loads an object only under the key its trailer names (the last 64 bytes: a
    // 16-byte marker, then the 32-digit key): name the right source's key there, as a cache
    // whose object was replaced by a wrong but well-formed one would.
    const std::string key = std::filesystem::path(target).stem().string();
    ASSERT_EQ(key.size(), 32u);
    std::fstream file(target, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-48, std::ios::end);
    file.write(key.data(), 32);
    ASSERT_TRUE(file.good());
  }

  RunResult Verify(KernelRunner& runner, const Schedule& schedule) {
    RunOptions options;
    options.time = false;
    return runner.Run(schedule, options);
  }

  testing::TempDir dir_;
  Jit jit_{dir_.path() + "/jit"};
  CooTensor matrix_ = testing::RandomSparse({40, 30}, 300, 31, /*empty_rows=*/false);
};

// The kernel's last statement adds `delta` to output element `element`.
std::function<std::string(const std::string&)> Perturb(int element, const std::string& delta) {
  return [=](const std::string& source) {
    return ReplaceOnce(
        source, "  return 0;\n}",
        "  T0[" + std::to_string(element) + "] += (value_t)" + delta + ";\n  return 0;\n}");
  };
}

TEST_F(Verification, OneWrongElementIsReportedByIndex) {
  const Expression e = KernelExpression("spmv");
  KernelRunner runner(e, matrix_, ResolveIndexSizes(e, matrix_.dims, {}), DType::kF32, jit_);
  const Schedule csr = FixedCsrSchedule(e);
  Plant(runner, csr, Perturb(5, "0.5"));
  const RunResult r = Verify(runner, csr);
  EXPECT_EQ(r.status, RunStatus::kWrongResult) << r.message;
  EXPECT_FALSE(r.verified);
  EXPECT_NE(r.message.find("1 elements differ from the reference; first at element 5: got "),
            std::string::npos)
      << r.message;
  // Wrong results are never timed.
  EXPECT_EQ(r.time.reps, 0);
}

TEST_F(Verification, ElementsLeftUnwrittenAreCaught) {
  const Expression e = KernelExpression("spmv");
  KernelRunner runner(e, matrix_, ResolveIndexSizes(e, matrix_.dims, {}), DType::kF64, jit_);
  const Schedule csr = FixedCsrSchedule(e);
  // A kernel that returns at once: every row of y keeps what was there before the call.
  Plant(runner, csr, [](const std::string& source) {
    return ReplaceOnce(source, "int sparsetune_kernel(const st_args* args) {",
                       "int sparsetune_kernel(const st_args* args) {\n  return 0;");
  });
  const RunResult r = Verify(runner, csr);
  EXPECT_EQ(r.status, RunStatus::kWrongResult);
  EXPECT_NE(r.message.find("40 elements differ from the reference; first at element 0: got nan"),
            std::string::npos)
      << r.message;
}

TEST_F(Verification, RoundingWithinTheToleranceIsAccepted) {
  const Expression e = KernelExpression("spmv");
  KernelRunner runner(e, matrix_, ResolveIndexSizes(e, matrix_.dims, {}), DType::kF32, jit_);
  const Schedule csr = FixedCsrSchedule(e);
  // A relative change of 1e-6 of one element's terms is rounding for f32 (tolerance 2e-4).
  Plant(runner, csr, [](const std::string& source) {
    return ReplaceOnce(source, "  return 0;\n}", "  T0[3] *= (value_t)(1 + 1e-6);\n  return 0;\n}");
  });
  const RunResult r = Verify(runner, csr);
  EXPECT_TRUE(r.ok() && r.verified) << r.message;
  EXPECT_LT(r.max_relative_error, 2e-4);
}

TEST_F(Verification, SparseOutputsAreCheckedByPosition) {
  const Expression e = KernelExpression("sddmm");
  KernelRunner runner(e, matrix_, ResolveIndexSizes(e, matrix_.dims, {{"k", 4}}), DType::kF32,
                      jit_);
  const Schedule csr = FixedCsrSchedule(e);
  Plant(runner, csr, Perturb(7, "1"));
  const RunResult r = Verify(runner, csr);
  EXPECT_EQ(r.status, RunStatus::kWrongResult);
  EXPECT_NE(r.message.find("1 elements differ from the reference; first at position 7: got "),
            std::string::npos)
      << r.message;
}

// The unchanged kernels verify: the failures above are the changes'.
TEST_F(Verification, UnchangedKernelsVerify) {
  const std::vector<std::pair<std::string, std::map<std::string, int64_t>>> cases = {
      {"spmv", {}}, {"sddmm", {{"k", 4}}}};
  for (const auto& [kernel, dense] : cases) {
    const Expression e = KernelExpression(kernel);
    KernelRunner runner(e, matrix_, ResolveIndexSizes(e, matrix_.dims, dense), DType::kF32, jit_);
    const RunResult r = Verify(runner, FixedCsrSchedule(e));
    EXPECT_TRUE(r.ok() && r.verified) << kernel << ": " << r.message;
  }
}

// Called in the tuned order (RunOptions::tuned_order), a renumbered kernel reads its dense
// inputs and writes a dense output renumbered; verification converts them as a caller would,
// for each kernel's kind of output and each kind of ordering.
TEST_F(Verification, RenumberedKernelsAreVerifiedInTheTunedOrder) {
  const CooTensor square = testing::RandomSparse({40, 40}, 300, 32, /*empty_rows=*/false);
  const std::vector<std::pair<std::string, std::map<std::string, int64_t>>> cases = {
      {"spmv", {}}, {"spmm", {{"j", 4}}}, {"sddmm", {{"k", 4}}}};
  for (const auto& [kernel, dense] : cases) {
    const Expression e = KernelExpression(kernel);
    KernelRunner runner(e, square, ResolveIndexSizes(e, square.dims, dense), DType::kF64, jit_);
    for (OrderingKind kind : {OrderingKind::kDegree, OrderingKind::kRowDegree}) {
      Schedule ordered = FixedCsrSchedule(e);
      ordered.ordering = kind;
      RunOptions options;
      options.time = false;
      options.tuned_order = true;
      const RunResult r = runner.Run(ordered, options);
      EXPECT_TRUE(r.ok() && r.verified) << kernel << " " << OrderingName(kind) << ": " << r.message;
    }
  }
}

// A kernel that permutes in the tuned order too is right in the caller's order and wrong in
// the tuned one, where verification catches it.
TEST_F(Verification, AKernelThatIgnoresTheTunedOrderFailsThere) {
  const CooTensor square = testing::RandomSparse({40, 40}, 300, 33, /*empty_rows=*/false);
  const Expression e = KernelExpression("spmv");
  KernelRunner runner(e, square, ResolveIndexSizes(e, square.dims, {}), DType::kF64, jit_);
  Schedule ordered = FixedCsrSchedule(e);
  ordered.ordering = OrderingKind::kDegree;
  Plant(runner, ordered, [](std::string source) {
    const std::string from = "args->tuned_order ? nullptr : ";
    for (size_t at; (at = source.find(from)) != std::string::npos;) source.erase(at, from.size());
    return source;
  });
  RunOptions options;
  options.time = false;
  const RunResult caller = runner.Run(ordered, options);
  EXPECT_TRUE(caller.ok() && caller.verified) << caller.message;
  options.tuned_order = true;
  const RunResult tuned = runner.Run(ordered, options);
  EXPECT_EQ(tuned.status, RunStatus::kWrongResult) << tuned.message;
}

}  // namespace
}  // namespace sparsetune
