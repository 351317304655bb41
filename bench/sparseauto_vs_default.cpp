// SparseAuto's chosen schedule against TACO's linear default (FixedCSR) for the paper's eight
// fused kernels on shared matrices (kernels 1-4) and tensors (5-8), at the kernels' default
// dense sizes. Both schedules are verified against the reference and timed in the same run.
//
//   sparseauto_vs_default [--datasets DIR] [--reps N] [--threads T]
//
// DIR defaults to ../shared/datasets beside the source checkout. T defaults to 1: on a machine
// shared with other work, a parallel region waits for its slowest thread and the times come
// out in multiples of the scheduler's time slice.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/read.hpp"
#include "ir/kernels.hpp"
#include "measure/runner.hpp"
#include "sparseauto/sparseauto.hpp"
#include "tensor/stats.hpp"

using namespace sparsetune;

int main(int argc, char** argv) {
  std::string datasets = std::string(SPARSETUNE_SOURCE_DIR) + "/../shared/datasets";
  int reps = 3;
  int threads = 1;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--datasets") && a + 1 < argc) {
      datasets = argv[++a];
    } else if (!std::strcmp(argv[a], "--reps") && a + 1 < argc) {
      reps = std::atoi(argv[++a]);
    } else if (!std::strcmp(argv[a], "--threads") && a + 1 < argc) {
      threads = std::atoi(argv[++a]);
    } else {
      std::fprintf(stderr, "usage: %s [--datasets DIR] [--reps N] [--threads T]\n", argv[0]);
      return 2;
    }
  }
  const std::vector<std::string> matrices = {"matrices/bcsstk16.mtx", "matrices/cavity24.mtx"};
  const std::vector<std::string> tensors = {"tensors/parti_3D_12031.tns", "tensors/splatt_med.tns"};
  const std::vector<std::string> kernels = {
      "sddmm_spmm", "sddmm_spmm_gemm", "hadamard_gemm", "spmm_gemm",
      "ttmc",       "spttm_ttm",       "spttm_spttm",   "mttkrp_gemm"};
  // Long linear runs take seconds each: a few repeats after one warm-up are enough for a ratio.
  RunOptions options;
  options.timing.warmup_runs = 1;
  options.timing.warmup_ms = 0;
  options.timing.min_reps = reps;
  options.timing.min_total_ms = 200;
  options.threads = threads;

  std::printf("SparseAuto's choice against TACO's linear default (FixedCSR), f32, %d thread(s)\n",
              threads > 0 ? threads : omp_get_max_threads());
  std::printf("%-2s %-16s %-16s %-14s %12s %12s %9s  %s\n", "#", "kernel", "data", "dense",
              "linear ms", "chosen ms", "speedup", "chosen schedule");
  Jit jit;
  int failures = 0;
  for (size_t n = 0; n < kernels.size(); ++n) {
    const KernelDef* def = FindKernel(kernels[n]);
    const Expression e = KernelExpression(def->name);
    const bool matrix = e.sparse_input().indices.size() == 2;
    for (const auto& relative : matrix ? matrices : tensors) {
      const std::string path = datasets + "/" + relative;
      if (!std::filesystem::exists(path)) {
        std::printf("%-2zu %-16s %-16s missing: %s\n", n + 1, def->name.c_str(), "-", path.c_str());
        continue;
      }
      const CooTensor tensor = ReadTensorFile(path);
      const IndexSizes sizes = ResolveIndexSizes(e, tensor.dims, def->dense_defaults);
      SparseAutoOptions sa;
      sa.values = ConcreteValues(e, tensor.dims, ComputePatternStats(tensor).prefix_nnz, sizes);
      const SparseAutoResult choice = RunSparseAuto(e, sa);
      const SparseAutoCandidate& chosen = choice.survivors.at(choice.chosen);

      KernelRunner runner(e, tensor, sizes, DType::kF32, jit);
      const RunResult linear = runner.Run(FixedCsrSchedule(e), options);
      const RunResult fused = runner.Run(chosen.schedule, options);
      std::string dense;
      for (const auto& [index, size] : def->dense_defaults)
        dense += (dense.empty() ? "" : ",") + index + "=" + std::to_string(size);
      const std::string name = std::filesystem::path(path).stem().string();
      if (!linear.ok() || !fused.ok() || !linear.verified || !fused.verified) {
        ++failures;
        std::printf("%-2zu %-16s %-16s %-14s linear %s, chosen %s: %s%s\n", n + 1,
                    def->name.c_str(), name.c_str(), dense.c_str(), RunStatusName(linear.status),
                    RunStatusName(fused.status), linear.message.c_str(), fused.message.c_str());
        continue;
      }
      std::printf("%-2zu %-16s %-16s %-14s %12.3f %12.3f %8.1fx  %s\n", n + 1, def->name.c_str(),
                  name.c_str(), dense.c_str(), linear.time.median_ms, fused.time.median_ms,
                  linear.time.median_ms / fused.time.median_ms, chosen.notation.c_str());
      std::fflush(stdout);
    }
  }
  return failures ? 1 : 0;
}
