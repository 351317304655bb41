// How long Scorch's heuristic takes per kernel (Scorch's Table I reports 0.5-0.75 ms for its
// autoscheduling step on an M1 Ultra), with and without measured statistics, and how that time
// splits between choosing the schedule and lowering it to check it.
//
// Usage: heuristic_time [--repeats N] [MATRIX.mtx]   (default 2000 repeats; the matrix gives
// the measured occupancies of order-2 kernels)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "heuristic/scorch.hpp"
#include "io/read.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "tensor/stats.hpp"

using namespace sparsetune;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 2000;
  std::string matrix;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--repeats" && a + 1 < argc) {
      repeats = std::atoi(argv[++a]);
    } else {
      matrix = arg;
    }
  }
  std::vector<int64_t> dims, prefix_nnz;
  if (!matrix.empty()) {
    const CooTensor tensor = ReadTensorFile(matrix);
    dims = tensor.dims;
    prefix_nnz = ComputePatternStats(tensor).prefix_nnz;
  }
  std::printf("%-18s %12s %12s %12s\n", "kernel", "median us", "p90 us", "lower us");
  for (const KernelDef& def : KernelLibrary()) {
    const Expression e = KernelExpression(def.name);
    HeuristicInput input;
    input.sizes = def.dense_defaults;
    if (!dims.empty() && e.sparse_input().indices.size() == dims.size()) {
      for (size_t m = 0; m < dims.size(); ++m) input.sizes[e.sparse_input().indices[m]] = dims[m];
      input.prefix_nnz = prefix_nnz;
    }
    std::vector<double> total, lower;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const HeuristicResult h = ScorchSchedule(e, input);
      const auto t1 = std::chrono::steady_clock::now();
      const LowerOutcome lowered = Lower(e, h.schedule);
      const auto t2 = std::chrono::steady_clock::now();
      if (!lowered.nest) return 1;
      total.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      lower.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    }
    std::sort(total.begin(), total.end());
    std::printf("%-18s %12.1f %12.1f %12.1f\n", def.name.c_str(), Median(total),
                total[total.size() * 9 / 10], Median(lower));
  }
  return 0;
}
