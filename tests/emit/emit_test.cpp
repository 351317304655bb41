// Emitted kernels compile standalone with the system compiler and reproduce the reference.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "emit/emit.hpp"
#include "emit/emit_check.hpp"
#include "ir/kernels.hpp"
#include "measure/operands.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string label;
  std::string kernel;
  nlohmann::json schedule;
  int order = 2;
  std::map<std::string, int64_t> dense;
};

// Emits the schedule for `tensor`, then compiles and checks it as a user would build it.
void CheckEmitted(const Case& c, const CooTensor& tensor, DType dtype) {
  const Expression e = KernelExpression(c.kernel);
  std::map<std::string, int64_t> dense = FindKernel(c.kernel)->dense_defaults;
  for (const auto& [index, size] : c.dense) dense[index] = size;
  const IndexSizes sizes = ResolveIndexSizes(e, tensor.dims, dense);
  const fs::path dir =
      fs::temp_directory_path() / ("sparsetune-emit-" + std::to_string(getpid()) + "-" + c.label +
                                   (dtype == DType::kF32 ? "-f32" : "-f64"));
  fs::remove_all(dir);
  const Schedule schedule = Schedule::FromJson(c.schedule, c.label);
  const auto files = EmitKernel(dir.string(), c.kernel, e, sizes, dtype, schedule, &tensor);
  ASSERT_EQ(files.size(), 3u);
  const EmittedCheck check = CheckEmittedKernel(dir.string(), c.kernel, e, sizes, dtype, tensor);
  ASSERT_TRUE(check.ok) << c.label << ": " << check.reason;
  fs::remove_all(dir);
}

TEST(Emit, StandaloneKernelsReproduceTheReference) {
  const std::vector<Case> cases = {
      {"csr",
       "spmv",
       {{"loop_order", {"i", "k"}},
        {"format", {"i:U", "k:C"}},
        {"parallel", {{"index", "i"}, {"chunk", 1}, {"partition", "balanced"}}},
        {"unroll", 4},
        {"narrow_coordinates", true}},
       2,
       {}},
      {"sell",
       "spmv",
       {{"splits", {{"i", 8}}},
        {"loop_order", {"i1", "k", "i0"}},
        {"format", {"i1:U", "k:S", "i0:U"}},
        {"parallel", {{"index", "i1"}, {"chunk", 2}}},
        {"narrow_coordinates", true}},
       2,
       {}},
      {"bcsr",
       "spmv",
       {{"splits", {{"i", 4}, {"k", 4}}},
        {"loop_order", {"i1", "k1", "i0", "k0"}},
        {"format", {"i1:U", "k1:C", "i0:U", "k0:U"}},
        {"parallel", {{"index", "i1"}, {"chunk", 8}}}},
       2,
       {}},
      {"tiles",
       "spmm",
       {{"splits", {{"j", 16}}},
        {"loop_order", {"i", "j1", "k", "j0"}},
        {"format", {"i:U", "k:C"}},
        {"parallel", {{"index", "i"}, {"chunk", 1}, {"partition", "balanced"}}},
        {"narrow_coordinates", true}},
       2,
       {{"j", 40}}},
      {"transposed",
       "sddmm",
       {{"loop_order", {"i", "j", "k"}},
        {"format", {"i:U", "j:C"}},
        {"parallel", {{"index", "i"}, {"chunk", 4}}},
        {"narrow_coordinates", true},
        {"transpose", {"C"}}},
       2,
       {{"k", 24}}},
      {"groupcoo",
       "spmv",
       {{"loop_order", {"i", "k"}},
        {"format", {"i:U", "k:G4"}},
        {"parallel", {{"index", "i"}, {"chunk", 1}, {"partition", "balanced"}}},
        {"narrow_coordinates", true}},
       2,
       {}},
      {"blockgroupcoo",
       "spmm",
       {{"splits", {{"i", 4}, {"k", 4}}},
        {"loop_order", {"i1", "k1", "i0", "k0", "j"}},
        {"format", {"i1:U", "k1:G2", "i0:U", "k0:U"}},
        {"parallel", {{"index", "i1"}, {"chunk", 1}, {"partition", "balanced"}}}},
       2,
       {{"j", 24}}},
      {"csf",
       "mttkrp",
       {{"loop_order", {"i", "k", "l", "j"}},
        {"format", {"i:C", "k:C", "l:C"}},
        {"parallel", {{"index", "i"}, {"chunk", 2}}},
        {"narrow_coordinates", true}},
       3,
       {}},
  };
  for (const Case& c : cases) {
    const CooTensor tensor = testing::SmallWorkload(c.order);
    for (DType dtype : {DType::kF32, DType::kF64}) {
      CheckEmitted(c, tensor, dtype);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(Emit, CheckReportsASourceThatDoesNotCompile) {
  const CooTensor tensor = testing::SmallWorkload(2);
  const Expression e = KernelExpression("spmv");
  const IndexSizes sizes = ResolveIndexSizes(e, tensor.dims, {});
  const fs::path dir =
      fs::temp_directory_path() / ("sparsetune-emit-broken-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const Schedule csr = Schedule::FromJson(
      nlohmann::json{{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:C"}}}, "csr");
  EmitKernel(dir.string(), "spmv", e, sizes, DType::kF32, csr, &tensor);
  std::ofstream(dir / (EmittedName("spmv") + ".cpp"), std::ios::app) << "\nnot C++ at all\n";
  const EmittedCheck check =
      CheckEmittedKernel(dir.string(), "spmv", e, sizes, DType::kF32, tensor);
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.reason.find("c++ failed"), std::string::npos) << check.reason;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sparsetune
