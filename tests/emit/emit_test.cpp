// Emitted kernels compile standalone with the system compiler and reproduce the reference:
// packed from shuffled entries, at dense sizes other than those emitted, after new values, in
// the caller's order and in the tuned one, on another pattern with wider coordinates; and they
// run on the threads OpenMP gives.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "emit/emit.hpp"
#include "emit/emit_check.hpp"
#include "ir/kernels.hpp"
#include "measure/operands.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

using Sizes = std::map<std::string, int64_t>;

struct Case {
  std::string label;
  std::string kernel;
  nlohmann::json schedule;
  DType dtype = DType::kF32;
  Sizes dense;  // emitted with these
  // The tensor emitted for and checked (order 2 or 3), then others of the same kind checked
  // with the same compiled kernel.
  std::function<CooTensor()> tensor;
  // Dense sizes the compiled kernel is also checked at.
  std::vector<Sizes> other_dense = {};
  std::vector<std::function<CooTensor()>> other_tensors = {};
};

CooTensor Matrix() {
  return testing::SmallWorkload(2);
}
CooTensor Tensor3() {
  return testing::SmallWorkload(3);
}
CooTensor Square() {
  return testing::RandomSparse({90, 90}, 700, 31);
}

fs::path EmitDirectory(const std::string& label) {
  const fs::path dir =
      fs::temp_directory_path() / ("sparsetune-emit-" + std::to_string(getpid()) + "-" + label);
  fs::remove_all(dir);
  return dir;
}

IndexSizes SizesFor(const Case& c, const CooTensor& tensor, const Sizes& dense) {
  std::map<std::string, int64_t> sizes = FindKernel(c.kernel)->dense_defaults;
  for (const auto& [index, size] : dense) sizes[index] = size;
  return ResolveIndexSizes(KernelExpression(c.kernel), tensor.dims, sizes);
}

// Threads come from OpenMP when the kernel runs, except that a schedule tuned for one thread
// keeps one until asked; _set_threads overrides both.
void ExpectThreadsFromOpenMP(const CompiledEmittedKernel& compiled, const Schedule& schedule,
                             const std::string& label) {
  auto threads = reinterpret_cast<int (*)()>(compiled.Symbol("_threads"));
  auto set_threads = reinterpret_cast<int (*)(int)>(compiled.Symbol("_set_threads"));
  ASSERT_TRUE(threads && set_threads) << label;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  EXPECT_EQ(threads(), schedule.threads == 1 ? 1 : 3) << label;
  EXPECT_EQ(set_threads(5), 0);
  EXPECT_EQ(threads(), 5) << label;
  EXPECT_EQ(set_threads(-1), -1);
  EXPECT_EQ(threads(), 5) << label;
  EXPECT_EQ(set_threads(0), 0);
  EXPECT_EQ(threads(), 3) << label;  // OpenMP's, also for a schedule tuned for one
  omp_set_num_threads(saved);
}

// Emits the schedule for the case's tensor, compiles it once as a user would build it, and
// checks it on every tensor and at every dense size of the case, and where its threads come
// from.
void CheckEmitted(const Case& c, const std::vector<std::string>& compiler_arguments = {}) {
  const Expression e = KernelExpression(c.kernel);
  const CooTensor tensor = c.tensor();
  const fs::path dir = EmitDirectory(c.label);
  const Schedule schedule = Schedule::FromJson(c.schedule, c.label);
  const auto files = EmitKernel(dir.string(), c.kernel, e, SizesFor(c, tensor, c.dense), c.dtype,
                                schedule, &tensor);
  ASSERT_EQ(files.size(), 3u);
  const CompiledEmittedKernel compiled(dir.string(), c.kernel, compiler_arguments);
  ASSERT_EQ(compiled.failure(), "") << c.label;
  auto check = [&](const CooTensor& t, const Sizes& dense, const std::string& what) {
    const EmittedCheck result = compiled.Check(e, SizesFor(c, t, dense), c.dtype, t);
    EXPECT_TRUE(result.ok) << c.label << " (" << what << "): " << result.reason;
  };
  check(tensor, c.dense, "as emitted");
  for (const Sizes& dense : c.other_dense) {
    std::string what;
    for (const auto& [index, size] : dense) what += index + "=" + std::to_string(size) + " ";
    check(tensor, dense, what);
  }
  for (size_t k = 0; k < c.other_tensors.size(); ++k)
    check(c.other_tensors[k](), c.dense, "another tensor " + std::to_string(k));
  ExpectThreadsFromOpenMP(compiled, schedule, c.label);
  fs::remove_all(dir);
}

nlohmann::json Parallel(const std::string& index, int chunk, bool balanced = false) {
  nlohmann::json p = {{"index", index}, {"chunk", chunk}};
  if (balanced) p["partition"] = "balanced";
  return p;
}

// Every level kind and feature an emitted kernel carries, both value types, once each: a compile
// per case is this test's cost.
TEST(Emit, StandaloneKernelsReproduceTheReference) {
  const std::vector<Case> cases = {
      {"csr",
       "spmv",
       {{"loop_order", {"i", "k"}},
        {"format", {"i:U", "k:C"}},
        {"parallel", Parallel("i", 1, true)},
        {"unroll", 4},
        {"narrow_coordinates", true}},
       DType::kF32,
       {},
       Matrix},
      {"sell",
       "spmv",
       {{"splits", {{"i", 8}}},
        {"loop_order", {"i1", "k", "i0"}},
        {"format", {"i1:U", "k:S", "i0:U"}},
        {"parallel", Parallel("i1", 2)},
        {"narrow_coordinates", true}},
       DType::kF64,
       {},
       Matrix},
      // Tuned for one thread: it keeps one until asked.
      {"bcsr",
       "spmv",
       {{"splits", {{"i", 4}, {"k", 4}}},
        {"loop_order", {"i1", "k1", "i0", "k0"}},
        {"format", {"i1:U", "k1:C", "i0:U", "k0:U"}},
        {"parallel", {{"index", "i1"}, {"chunk", 8}, {"threads", 1}}}},
       DType::kF32,
       {},
       Matrix},
      // Register tiles of 16 columns, compiled for the split: j = 40 has two whole tiles and a
      // rest, 64 only whole ones, 13 none (the general loop alone).
      {"tiles",
       "spmm",
       {{"splits", {{"j", 16}}},
        {"loop_order", {"i", "j1", "k", "j0"}},
        {"format", {"i:U", "k:C"}},
        {"parallel", Parallel("i", 1, true)},
        {"narrow_coordinates", true}},
       DType::kF64,
       {{"j", 40}},
       Matrix,
       {{{"j", 64}}, {{"j", 13}}}},
      {"transposed",
       "sddmm",
       {{"loop_order", {"i", "j", "k"}},
        {"format", {"i:U", "j:C"}},
        {"parallel", Parallel("i", 4)},
        {"narrow_coordinates", true},
        {"transpose", {"C"}}},
       DType::kF32,
       {{"k", 24}},
       Matrix,
       {{{"k", 7}}}},
      // Column segments to threads, each transposing its own segments of C.
      {"transposed-segments",
       "sddmm",
       {{"splits", {{"j", 8}}},
        {"loop_order", {"j1", "i", "j0", "k"}},
        {"format", {"j1:U", "i:C", "j0:C"}},
        {"parallel", Parallel("j1", 1)},
        {"unroll", 4},
        {"transpose", {"C"}}},
       DType::kF32,
       {{"k", 24}},
       Matrix,
       {{{"k", 7}}}},
      // Tuned for two: it runs on OpenMP's count.
      {"groupcoo",
       "spmv",
       {{"loop_order", {"i", "k"}},
        {"format", {"i:U", "k:G4"}},
        {"parallel", {{"index", "i"}, {"chunk", 1}, {"partition", "balanced"}, {"threads", 2}}},
        {"narrow_coordinates", true}},
       DType::kF64,
       {},
       Matrix},
      {"blockgroupcoo",
       "spmm",
       {{"splits", {{"i", 4}, {"k", 4}}},
        {"loop_order", {"i1", "k1", "i0", "k0", "j"}},
        {"format", {"i1:U", "k1:G2", "i0:U", "k0:U"}},
        {"parallel", Parallel("i1", 1, true)}},
       DType::kF32,
       {{"j", 24}},
       Matrix,
       {{{"j", 5}}}},
      // Coordinate lists in square blocks: a singleton level under a non-unique compressed one.
      {"coo-blocks",
       "spmv",
       {{"splits", {{"i", 16}, {"k", 16}}},
        {"loop_order", {"i1", "k1", "k0", "i0"}},
        {"format", {"i1:U", "k1:C", "k0:C", "i0:Q"}},
        {"parallel", Parallel("i1", 1)},
        {"narrow_coordinates", true}},
       DType::kF64,
       {},
       Matrix},
      // Its entries four at a time, a word of 16-bit coordinates a level (the graph rule).
      {"coo-blocks-batched",
       "spmv",
       {{"splits", {{"i", 1024}, {"k", 1024}}},
        {"loop_order", {"i1", "k1", "k0", "i0"}},
        {"format", {"i1:U", "k1:C", "k0:C", "i0:Q"}},
        {"parallel", Parallel("i1", 1)},
        {"unroll", 4},
        {"narrow_coordinates", true}},
       DType::kF32,
       {},
       Matrix},
      {"coo-blocks-spmm",
       "spmm",
       {{"splits", {{"i", 16}, {"k", 16}}},
        {"loop_order", {"i1", "k1", "k0", "i0", "j"}},
        {"format", {"i1:U", "k1:C", "k0:C", "i0:Q"}},
        {"parallel", Parallel("i1", 1)},
        {"narrow_coordinates", true}},
       DType::kF32,
       {{"j", 8}},
       Matrix,
       {{{"j", 3}}}},
      {"csf",
       "mttkrp",
       {{"loop_order", {"i", "k", "l", "j"}},
        {"format", {"i:C", "k:C", "l:C"}},
        {"parallel", Parallel("i", 2)},
        {"narrow_coordinates", true}},
       DType::kF64,
       {},
       Tensor3,
       {{{"j", 5}}}},
  };
  for (const Case& c : cases) {
    CheckEmitted(c);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// A complex matrix: Matrix()'s pattern and real parts, nonzero imaginary parts.
CooTensor ComplexMatrix() {
  CooTensor t = Matrix();
  t.imag.resize(t.nnz());
  for (int64_t e = 0; e < t.nnz(); ++e) t.imag[e] = 0.25 * double(e % 5) - 0.5 * t.values[e];
  return t;
}

// Complex values through the emitted C ABI: the kernel paths complex values take instead of
// vectors (scalar tiles and dot products, atomic updates a part at a time, transposes of
// complex elements), packed, updated and in both orders.
TEST(Emit, ComplexKernelsReproduceTheReference) {
  const std::vector<Case> cases = {
      {"complex-sell",
       "spmv",
       {{"splits", {{"i", 8}}},
        {"loop_order", {"i1", "k", "i0"}},
        {"format", {"i1:U", "k:S", "i0:U"}},
        {"parallel", Parallel("i1", 2)},
        {"narrow_coordinates", true},
        {"ordering", "degree"}},
       DType::kC64,
       {},
       ComplexMatrix},
      // Columns to threads: every row of y is updated atomically.
      {"complex-columns",
       "spmv",
       {{"loop_order", {"k", "i"}}, {"format", {"k:U", "i:C"}}, {"parallel", Parallel("k", 4)}},
       DType::kC128,
       {},
       ComplexMatrix},
      {"complex-tiles",
       "spmm",
       {{"splits", {{"j", 16}}},
        {"loop_order", {"i", "j1", "k", "j0"}},
        {"format", {"i:U", "k:C"}},
        {"parallel", Parallel("i", 1, true)},
        {"narrow_coordinates", true}},
       DType::kC128,
       {{"j", 40}},
       ComplexMatrix,
       {{{"j", 13}}}},
      {"complex-transposed",
       "sddmm",
       {{"loop_order", {"i", "j", "k"}},
        {"format", {"i:U", "j:C"}},
        {"parallel", Parallel("i", 4)},
        {"unroll", 4},
        {"transpose", {"C"}}},
       DType::kC64,
       {{"k", 24}},
       ComplexMatrix,
       {{{"k", 7}}}},
  };
  for (const Case& c : cases) {
    CheckEmitted(c);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// An ordered winner's kernel renumbers the caller's matrix as tune did and reproduces the
// reference through both entry points: the caller's order and the tuned one.
TEST(Emit, OrderedKernelsReproduceTheReferenceInBothOrders) {
  auto ordered = [](nlohmann::json schedule, const std::string& ordering) {
    schedule["ordering"] = ordering;
    return schedule;
  };
  const nlohmann::json csr = {{"loop_order", {"i", "k"}},
                              {"format", {"i:U", "k:C"}},
                              {"parallel", Parallel("i", 4)},
                              {"narrow_coordinates", true}};
  const nlohmann::json spmm_csr = {{"loop_order", {"i", "k", "j"}},
                                   {"format", {"i:U", "k:C"}},
                                   {"parallel", Parallel("i", 4)},
                                   {"narrow_coordinates", true}};
  const std::vector<Case> cases = {
      {"rcm",
       "spmv",
       ordered(csr, "rcm"),
       DType::kF64,
       {},
       Square,
       {},
       {Matrix,
        [] {
          return testing::RandomSparse({50, 70}, 400, 3);
        }}},
      // The degree ordering renumbers the columns of a square matrix too, only the rows of a
      // rectangular one.
      {"degree",
       "spmm",
       ordered(spmm_csr, "degree"),
       DType::kF32,
       {{"j", 12}},
       Square,
       {{{"j", 3}}},
       {[] {
         return testing::RandomSparse({50, 70}, 400, 3);
       }}},
      // Rows only, on a square matrix: x stays in the caller's order.
      {"row-degree",
       "spmv",
       ordered({{"loop_order", {"i1", "k", "i0"}},
                {"format", {"i1:U", "k:S", "i0:U"}},
                {"splits", {{"i", 8}}},
                {"parallel", Parallel("i1", 4)},
                {"narrow_coordinates", true}},
               "row-degree"),
       DType::kF32,
       {},
       Square},
      // The graph rule's coordinate list in blocks, four entries at a time, on a graph
      // renumbered by degree: y is computed in the tuned order and gathered back.
      {"degree-coo-blocks-batched",
       "spmv",
       ordered({{"splits", {{"i", 1024}, {"k", 1024}}},
                {"loop_order", {"i1", "k1", "k0", "i0"}},
                {"format", {"i1:U", "k1:C", "k0:C", "i0:Q"}},
                {"parallel", Parallel("i1", 1)},
                {"unroll", 4},
                {"narrow_coordinates", true}},
               "degree"),
       DType::kF32,
       {},
       Square},
      // A sparse output stays in the caller's order; its dense inputs are renumbered.
      {"rcm-sddmm",
       "sddmm",
       ordered({{"loop_order", {"i", "j", "k"}},
                {"format", {"i:U", "j:C"}},
                {"parallel", Parallel("i", 4)},
                {"transpose", {"C"}}},
               "rcm"),
       DType::kF64,
       {{"k", 16}},
       Square},
  };
  for (const Case& c : cases) {
    CheckEmitted(c);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // METIS parts come from libsparsetune_orderings, which the kernel links (Louvain communities
  // too: tests/ordering checks that the library gives ComputeOrdering's permutations).
  const std::string library = SPARSETUNE_ORDERINGS_LIBRARY;
  CheckEmitted({"partition",
                "spmv",
                ordered(csr, "partition"),
                DType::kF32,
                {},
                [] {
                  return testing::RandomSparse({5000, 5000}, 30000, 9);
                }},
               {library, "-Wl,-rpath," + fs::path(library).parent_path().string()});
}

// A pattern whose coordinates pass the widths the kernel was tuned with packs with 32-bit ones
// and runs the kernel variant compiled for them.
TEST(Emit, WiderCoordinatesRunTheWideVariant) {
  const CooTensor narrow = testing::RandomSparse({45, 200}, 400, 21);
  const Expression e = KernelExpression("spmv");
  const fs::path dir = EmitDirectory("wide");
  const Schedule csr = Schedule::FromJson(
      nlohmann::json{
          {"loop_order", {"i", "k"}}, {"format", {"i:U", "k:C"}}, {"narrow_coordinates", true}},
      "csr");
  EmitKernel(dir.string(), "spmv", e, ResolveIndexSizes(e, narrow.dims, {}), DType::kF32, csr,
             &narrow);
  std::ifstream header(dir / (EmittedName("spmv") + ".h"));
  const std::string text((std::istreambuf_iterator<char>(header)), {});
  EXPECT_NE(text.find("level 1 (k:C) u8"), std::string::npos) << text;
  const CompiledEmittedKernel compiled(dir.string(), "spmv");
  ASSERT_EQ(compiled.failure(), "");
  EmittedCheck check =
      compiled.Check(e, ResolveIndexSizes(e, narrow.dims, {}), DType::kF32, narrow);
  EXPECT_TRUE(check.ok) << check.reason;
  EXPECT_FALSE(check.wide_coordinates);
  // Columns up to 90057: a matrix of the same kind, wider.
  const CooTensor wide = testing::RandomSparse({40, 90058}, 1200, 12);
  check = compiled.Check(e, ResolveIndexSizes(e, wide.dims, {}), DType::kF32, wide);
  EXPECT_TRUE(check.ok) << check.reason;
  EXPECT_TRUE(check.wide_coordinates);
  fs::remove_all(dir);
}

TEST(Emit, CheckReportsASourceThatDoesNotCompile) {
  const CooTensor tensor = Matrix();
  const Expression e = KernelExpression("spmv");
  const IndexSizes sizes = ResolveIndexSizes(e, tensor.dims, {});
  const fs::path dir = EmitDirectory("broken");
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

// A kernel tuned on a matrix whose values are all equal keeps one value for an operand whose
// values are all equal and runs the kernel compiled for it; an operand whose values differ keeps
// them and runs a second variant, and update_values with values that differ moves an operand
// there. Check packs, computes and updates (with values that differ) against the reference.
TEST(Emit, UniformValuesKeepOneValueAndOtherValuesTheirOwnVariant) {
  CooTensor pattern = testing::RandomSparse({300, 280}, 2500, 31);
  for (double& v : pattern.values) v = 1;
  const Expression e = KernelExpression("spmv");
  const IndexSizes sizes = ResolveIndexSizes(e, pattern.dims, {});
  const fs::path dir = EmitDirectory("uniform");
  const Schedule lists =
      Schedule::FromJson(nlohmann::json{{"splits", {{"i", 128}, {"k", 128}}},
                                        {"loop_order", {"i1", "k1", "k0", "i0"}},
                                        {"format", {"i1:U", "k1:C", "k0:C", "i0:Q"}},
                                        {"parallel", {{"index", "i1"}, {"partition", "balanced"}}},
                                        {"unroll", 4},
                                        {"narrow_coordinates", true},
                                        {"uniform_values", true}},
                         "lists");
  EmitKernel(dir.string(), "spmv", e, sizes, DType::kF32, lists, &pattern);
  const std::string name = EmittedName("spmv");
  std::ifstream header(dir / (name + ".h"));
  const std::string text((std::istreambuf_iterator<char>(header)), {});
  EXPECT_NE(text.find("One value. Tuned on a matrix whose values are all equal"), std::string::npos)
      << text;
  std::ifstream source_file(dir / (name + ".cpp"));
  const std::string source((std::istreambuf_iterator<char>(source_file)), {});
  for (const char* variant :
       {"_kernel(", "_kernel_wide(", "_kernel_values(", "_kernel_values_wide("})
    EXPECT_NE(source.find("static int " + name + variant), std::string::npos) << variant;
  const CompiledEmittedKernel compiled(dir.string(), "spmv");
  ASSERT_EQ(compiled.failure(), "");
  const EmittedCheck check = compiled.Check(e, sizes, DType::kF32, pattern);
  EXPECT_TRUE(check.ok) << check.reason;

  using PackFn = void* (*)(const int64_t*, int64_t, const int32_t* const*, const float*);
  using UpdateFn = int (*)(void*, const float*);
  using ComputeFn = int (*)(const void*, const float* const*, float*);
  using QueryFn = int (*)(const void*);
  auto pack = reinterpret_cast<PackFn>(compiled.Symbol("_pack_coo"));
  auto update = reinterpret_cast<UpdateFn>(compiled.Symbol("_update_values"));
  auto compute = reinterpret_cast<ComputeFn>(compiled.Symbol("_compute"));
  auto one_value = reinterpret_cast<QueryFn>(compiled.Symbol("_one_value"));
  auto last_error = reinterpret_cast<const char* (*)()>(compiled.Symbol("_last_error"));
  auto release = reinterpret_cast<void (*)(void*)>(compiled.Symbol("_free"));
  ASSERT_TRUE(pack && update && compute && one_value && last_error && release);
  const int32_t* coords[2] = {pattern.coords[0].data(), pattern.coords[1].data()};
  std::vector<float> x(pattern.dims[1]), y(pattern.dims[0]);
  for (size_t j = 0; j < x.size(); ++j) x[j] = float(1 + j % 7);
  const float* inputs[1] = {x.data()};
  auto expected = [&](const std::vector<float>& values) {
    std::vector<float> out(pattern.dims[0], 0.0f);
    for (int64_t e = 0; e < pattern.nnz(); ++e)
      out[pattern.coords[0][e]] += values[e] * x[pattern.coords[1][e]];
    return out;
  };
  // Equal values: one kept. Values that differ in a second operand: their own variant.
  std::vector<float> ones(pattern.nnz(), 1.0f), varied(pattern.nnz());
  for (size_t e = 0; e < varied.size(); ++e) varied[e] = float(1 + e % 3);
  void* uniform = pack(pattern.dims.data(), pattern.nnz(), coords, ones.data());
  void* valued = pack(pattern.dims.data(), pattern.nnz(), coords, varied.data());
  ASSERT_TRUE(uniform && valued) << last_error();
  EXPECT_EQ(one_value(uniform), 1);
  EXPECT_EQ(one_value(valued), 0);
  ASSERT_EQ(compute(uniform, inputs, y.data()), 0);
  EXPECT_EQ(y, expected(ones));
  ASSERT_EQ(compute(valued, inputs, y.data()), 0);
  EXPECT_EQ(y, expected(varied));
  // New equal values stay one value; values that differ move the operand to its variant.
  std::vector<float> threes(pattern.nnz(), 3.0f);
  ASSERT_EQ(update(uniform, threes.data()), 0) << last_error();
  EXPECT_EQ(one_value(uniform), 1);
  ASSERT_EQ(compute(uniform, inputs, y.data()), 0);
  EXPECT_EQ(y, expected(threes));
  ASSERT_EQ(update(uniform, varied.data()), 0) << last_error();
  EXPECT_EQ(one_value(uniform), 0);
  ASSERT_EQ(compute(uniform, inputs, y.data()), 0);
  EXPECT_EQ(y, expected(varied));
  release(uniform);
  release(valued);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sparsetune
