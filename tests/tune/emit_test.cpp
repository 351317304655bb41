// Emitted kernels compile standalone with the system compiler and reproduce the reference.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "ir/kernels.hpp"
#include "measure/operands.hpp"
#include "measure/reference.hpp"
#include "support/test_data.hpp"
#include "tune/emit.hpp"

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

// Compiles the emitted source into a shared object (c++ -O3 -fopenmp, nothing else) and runs
// pack_coo + compute on `tensor`, comparing with the reference.
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
  const std::string name = EmittedName(c.kernel);
  const std::string object = (dir / (name + ".so")).string();
  const std::string command = "c++ -O3 -fopenmp -std=c++17 -shared -fPIC -Werror=all -o " + object +
                              " " + (dir / (name + ".cpp")).string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  void* handle = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(handle) << dlerror();
  using PackFn = void* (*)(const int64_t*, int64_t, const int32_t* const*, const void*);
  using ComputeFn = int (*)(const void*, const void* const*, void*);
  using SizeFn = int64_t (*)(const void*);
  using FreeFn = void (*)(void*);
  auto pack = reinterpret_cast<PackFn>(dlsym(handle, (name + "_pack_coo").c_str()));
  auto compute = reinterpret_cast<ComputeFn>(dlsym(handle, (name + "_compute").c_str()));
  auto output_size = reinterpret_cast<SizeFn>(dlsym(handle, (name + "_output_size").c_str()));
  auto release = reinterpret_cast<FreeFn>(dlsym(handle, (name + "_free").c_str()));
  ASSERT_TRUE(pack && compute && output_size && release);

  ValueBuffer values(dtype, tensor.nnz());
  for (int64_t k = 0; k < tensor.nnz(); ++k) values.Set(k, tensor.values[k]);
  std::vector<const int32_t*> coords;
  for (const auto& mode : tensor.coords) coords.push_back(mode.data());
  void* a = pack(tensor.dims.data(), tensor.nnz(), coords.data(), values.data());
  ASSERT_TRUE(a) << c.label;
  const std::vector<ValueBuffer> inputs = MakeDenseInputs(e, sizes, dtype);
  std::vector<const void*> dense_inputs;
  for (size_t t = 1; t < e.tensors.size(); ++t) {
    if (static_cast<int>(t) != e.sparse) dense_inputs.push_back(inputs[t].data());
  }
  const ReferenceResult ref = ComputeReference(e, tensor, sizes, inputs);
  ASSERT_EQ(output_size(a), static_cast<int64_t>(ref.values.size())) << c.label;
  ValueBuffer output(dtype, output_size(a));
  output.Fill(std::nan(""));
  ASSERT_EQ(compute(a, dense_inputs.data(), output.data()), 0);
  const double rtol = dtype == DType::kF32 ? 2e-4 : 1e-10;
  for (size_t q = 0; q < ref.values.size(); ++q) {
    ASSERT_NEAR(output.Get(q), ref.values[q], rtol * std::max(1.0, ref.magnitudes[q]))
        << c.label << " element " << q;
  }
  release(a);
  dlclose(handle);
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

}  // namespace
}  // namespace sparsetune
