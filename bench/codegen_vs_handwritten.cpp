// Generated FixedCSR SpMV and SpMM against hand-written CSR loops on the same packed arrays,
// timed alternately in one run; also the JIT's compile time and its cached-load time.
//
//   codegen_vs_handwritten [--rows R] [--nnz N] [--j J] [--rounds K]
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/elapsed.hpp"
#include "codegen/codegen.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "jit/jit.hpp"
#include "measure/operands.hpp"
#include "measure/timing.hpp"
#include "tensor/generate.hpp"
#include "tensor/pack.hpp"

using namespace sparsetune;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void HandSpmv(const PackedTensor& a, const float* x, float* y) {
  const int32_t* pos = a.levels[1].pos.data();
  const int32_t* crd = static_cast<const int32_t*>(a.levels[1].crd_data());
  const float* vals = a.values_f32.data();
  const int64_t rows = a.dims[0];
#pragma omp parallel for schedule(dynamic, 128)
  for (int64_t i = 0; i < rows; ++i) {
    float sum = 0;
    for (int32_t p = pos[i]; p < pos[i + 1]; ++p) sum += vals[p] * x[crd[p]];
    y[i] = sum;
  }
}

void HandSpmm(const PackedTensor& a, const float* __restrict b, float* __restrict c, int64_t J) {
  const int32_t* pos = a.levels[1].pos.data();
  const int32_t* crd = static_cast<const int32_t*>(a.levels[1].crd_data());
  const float* vals = a.values_f32.data();
  const int64_t rows = a.dims[0];
#pragma omp parallel for schedule(dynamic, 32)
  for (int64_t i = 0; i < rows; ++i) {
    float* __restrict ci = c + i * J;
    for (int64_t j = 0; j < J; ++j) ci[j] = 0;
    for (int32_t p = pos[i]; p < pos[i + 1]; ++p) {
      const float v = vals[p];
      const float* __restrict bk = b + int64_t(crd[p]) * J;
      for (int64_t j = 0; j < J; ++j) ci[j] += v * bk[j];
    }
  }
}

struct Compiled {
  CompiledKernel kernel;
  double fresh_compile_ms = 0;
  double cached_load_ms = 0;
};

Compiled CompileTwice(const LoopNest& nest, const std::string& cache) {
  std::filesystem::remove_all(cache);
  Compiled out;
  const std::string source =
      GenerateKernelSource(nest, DType::kF32, CodegenMode::kRuntimeParameters);
  {
    Jit jit(cache);
    out.kernel = jit.Compile(source);
    out.fresh_compile_ms = out.kernel.compile_ms;
  }
  Jit second(cache);  // a new process would see the same: the object is on disk
  const auto t0 = std::chrono::steady_clock::now();
  out.kernel = second.Compile(source);
  out.cached_load_ms = MsSince(t0);
  return out;
}

st_args ArgsFor(const LoopNest& nest, const PackedTensor& a, const std::vector<int64_t>& dims) {
  st_args args;
  std::memset(&args, 0, sizeof(args));
  for (size_t k = 0; k < dims.size(); ++k) {
    args.dims[k] = dims[k];
    args.splits[k] = 1;
  }
  for (size_t l = 0; l < a.levels.size(); ++l) {
    args.levels[l] = {a.levels[l].extent, a.levels[l].positions, a.levels[l].pos.data(),
                      a.levels[l].crd_data(), a.levels[l].base_data()};
  }
  args.sparse_values = a.values_f32.data();
  args.chunk = nest.schedule.chunk;
  args.threads = 0;
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 1000000, nnz = 10000000, J = 256;
  int rounds = 5;
  for (int k = 1; k + 1 < argc; k += 2) {
    const std::string flag = argv[k];
    const int64_t value = std::atoll(argv[k + 1]);
    if (flag == "--rows") rows = value;
    if (flag == "--nnz") nnz = value;
    if (flag == "--j") J = value;
    if (flag == "--rounds") rounds = int(value);
  }
  std::printf("generating a %lld x %lld uniform matrix with %lld nonzeros...\n", (long long)rows,
              (long long)rows, (long long)nnz);
  UniformParams params;
  params.rows = params.cols = rows;
  params.nnz = nnz;
  params.seed = 7;
  CooTensor a = GenerateUniform(params);
  // 32-bit coordinates, as the hand-written loops read them.
  PackOptions pack_options;
  pack_options.narrow_coordinates = false;
  PackOutcome packed = Pack(a, StorageFormat::Csr(), DType::kF32, pack_options);
  if (!packed.packed) return 1;
  const PackedTensor& csr = *packed.packed;
  std::printf("threads %d, CSR pack %.0f ms\n\n", omp_get_max_threads(), csr.pack_ms);
  const std::string cache = std::filesystem::temp_directory_path() / "sparsetune-bench-jit";
  TimingOptions timing;
  timing.min_total_ms = 200;

  // SpMV
  {
    const Expression e = KernelExpression("spmv");
    auto nest = Lower(e, FixedCsrSchedule(e)).nest;
    Compiled c = CompileTwice(*nest, cache);
    ValueBuffer x(DType::kF32, rows), y_gen(DType::kF32, rows), y_hand(DType::kF32, rows);
    FillDeterministic(x, "x");
    st_args args = ArgsFor(*nest, csr, {rows, rows});
    args.inputs[2] = x.data();
    args.output = y_gen.data();
    std::vector<double> gen, hand;
    for (int r = 0; r < rounds; ++r) {
      gen.push_back(TimeRepeated([&] { c.kernel.function(&args); }, timing).median_ms);
      hand.push_back(
          TimeRepeated([&] { HandSpmv(csr, (const float*)x.data(), (float*)y_hand.data()); },
                       timing)
              .median_ms);
    }
    double diff = 0;
    for (int64_t i = 0; i < rows; ++i)
      diff = std::max(diff, std::fabs(y_gen.Get(i) - y_hand.Get(i)));
    std::printf(
        "spmv   generated %8.3f ms   hand-written %8.3f ms   ratio %.3f   (max |diff| %.2g)\n",
        Median(gen), Median(hand), Median(gen) / Median(hand), diff);
    std::printf("       compile %.0f ms, cached load %.2f ms\n", c.fresh_compile_ms,
                c.cached_load_ms);
  }
  // SpMM
  {
    const Expression e = KernelExpression("spmm");
    auto nest = Lower(e, FixedCsrSchedule(e)).nest;
    Compiled c = CompileTwice(*nest, cache);
    ValueBuffer b(DType::kF32, rows * J), c_gen(DType::kF32, rows * J),
        c_hand(DType::kF32, rows * J);
    FillDeterministic(b, "B");
    st_args args = ArgsFor(*nest, csr, {rows, J, rows});  // index order: i, j, k
    args.inputs[2] = b.data();
    args.output = c_gen.data();
    TimingOptions slow = timing;
    slow.min_reps = 3;
    slow.warmup_runs = 1;
    slow.warmup_ms = 0;
    slow.min_total_ms = 0;
    std::vector<double> gen, hand;
    for (int r = 0; r < rounds; ++r) {
      gen.push_back(TimeRepeated([&] { c.kernel.function(&args); }, slow).median_ms);
      hand.push_back(
          TimeRepeated([&] { HandSpmm(csr, (const float*)b.data(), (float*)c_hand.data(), J); },
                       slow)
              .median_ms);
    }
    double diff = 0;
    for (int64_t q = 0; q < rows * J; q += 97)
      diff = std::max(diff, std::fabs(c_gen.Get(q) - c_hand.Get(q)));
    std::printf(
        "spmm   generated %8.3f ms   hand-written %8.3f ms   ratio %.3f   (j = %lld, max |diff| "
        "%.2g)\n",
        Median(gen), Median(hand), Median(gen) / Median(hand), (long long)J, diff);
    std::printf("       compile %.0f ms, cached load %.2f ms\n", c.fresh_compile_ms,
                c.cached_load_ms);
  }
  std::filesystem::remove_all(cache);
  return 0;
}
