// What bounds SpMV on a graph: the tuned layout (SELL-8, rows sorted by their nonzeros, columns
// as given) timed beside the same loop without its values (what storing no values for a
// pattern graph could save at most: half the matrix's bytes) and beside column segments that
// each keep their part of x in L2 (cache blocking). If the kernel were bound by the bytes of
// the matrix, the first would run twice as fast; if by misses on x, the second would help.
// Hand-written loops over hand-built arrays, compiled with the kernels' flags, float, all
// threads, timed in turns in one run.
//
//   graph_spmv_bound [FILE.mtx] [--scale S] [--edge-factor F] [--rounds K]
//   (default: a Graph500 graph of scale 19, edge factor 16, seed 23)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/bulk_allocator.hpp"
#include "io/read.hpp"
#include "ordering/ordering.hpp"
#include "tensor/generate.hpp"
#include "tensor/permutation.hpp"

using namespace sparsetune;

namespace {

constexpr int kLanes = 8;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// SELL over the rows of a row-sorted CSR, columns restricted to [lo, hi): slice s holds
// slice_start[s + 1] - slice_start[s] steps of kLanes slots; a lane past its row's end repeats
// the row's last column with value 0.
struct Sell {
  std::vector<int32_t> slice_start;
  BulkVector<int32_t> cols;
  BulkVector<float> values;
};

Sell BuildSell(const std::vector<int64_t>& row_start, const std::vector<int32_t>& col, int64_t rows,
               int32_t lo, int32_t hi) {
  const int64_t slices = (rows + kLanes - 1) / kLanes;
  // Per row, the range of its (ascending) columns inside [lo, hi).
  std::vector<int64_t> first(rows), last(rows);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    auto b = col.begin() + row_start[i], e = col.begin() + row_start[i + 1];
    first[i] = std::lower_bound(b, e, lo) - col.begin();
    last[i] = std::lower_bound(b, e, hi) - col.begin();
  }
  Sell s;
  s.slice_start.assign(slices + 1, 0);
  for (int64_t t = 0; t < slices; ++t) {
    int64_t longest = 0;
    for (int64_t i = t * kLanes; i < std::min(rows, (t + 1) * kLanes); ++i)
      longest = std::max(longest, last[i] - first[i]);
    s.slice_start[t + 1] = s.slice_start[t] + static_cast<int32_t>(longest);
  }
  const int64_t slots = int64_t(s.slice_start[slices]) * kLanes;
  s.cols.resize(slots);
  s.values.resize(slots);
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t t = 0; t < slices; ++t) {
    for (int k = 0; k < kLanes; ++k) {
      const int64_t i = t * kLanes + k;
      const int64_t n = i < rows ? last[i] - first[i] : 0;
      for (int64_t j = 0; j < s.slice_start[t + 1] - s.slice_start[t]; ++j) {
        const int64_t q = (s.slice_start[t] + j) * kLanes + k;
        s.cols[q] = j < n ? col[first[i] + j] : n > 0 ? col[last[i] - 1] : lo;
        s.values[q] = j < n ? 1.0f : 0.0f;
      }
    }
  }
  return s;
}

// y[i] (+)= the slices' rows times x; kValues false skips the values (every value taken as 1,
// padding included: a bound, not a result).
template <bool kValues, bool kAdd>
void SellRows(const Sell& a, const float* __restrict x, float* __restrict y, int64_t from,
              int64_t to) {
  const int32_t* __restrict cols = a.cols.data();
  const float* __restrict values = a.values.data();
  for (int64_t t = from; t < to; ++t) {
    float sum[kLanes] = {};
    for (int32_t j = a.slice_start[t]; j < a.slice_start[t + 1]; ++j) {
#pragma omp simd
      for (int k = 0; k < kLanes; ++k) {
        const int64_t q = int64_t(j) * kLanes + k;
        sum[k] += kValues ? values[q] * x[cols[q]] : x[cols[q]];
      }
    }
    for (int k = 0; k < kLanes; ++k) y[t * kLanes + k] = kAdd ? y[t * kLanes + k] + sum[k] : sum[k];
  }
}

// Each thread takes a range of slices with an equal share of the slots, over every segment.
template <bool kValues>
void Spmv(const std::vector<Sell>& segments, const std::vector<int64_t>& thread_start,
          const float* x, float* y) {
#pragma omp parallel
  {
    const int t = omp_get_thread_num();
    const int64_t from = thread_start[t], to = thread_start[t + 1];
    for (size_t g = 0; g < segments.size(); ++g) {
      if (g == 0) {
        SellRows<kValues, false>(segments[g], x, y, from, to);
      } else {
        SellRows<kValues, true>(segments[g], x, y, from, to);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  int scale = 19, edge_factor = 16, rounds = 7;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--scale") && a + 1 < argc) {
      scale = std::atoi(argv[++a]);
    } else if (!std::strcmp(argv[a], "--edge-factor") && a + 1 < argc) {
      edge_factor = std::atoi(argv[++a]);
    } else if (!std::strcmp(argv[a], "--rounds") && a + 1 < argc) {
      rounds = std::atoi(argv[++a]);
    } else {
      file = argv[a];
    }
  }
  CooTensor m;
  if (!file.empty()) {
    m = ReadTensorFile(file);
  } else {
    GraphParams p;
    p.vertices = int64_t(1) << scale;
    p.edges = p.vertices * edge_factor;
    p.seed = 23;
    m = GenerateGraph(p);
    file =
        "graph500 scale " + std::to_string(scale) + ", edge factor " + std::to_string(edge_factor);
  }
  if (m.order() != 2) {
    std::fprintf(stderr, "graph_spmv_bound: %s is not a matrix\n", file.c_str());
    return 2;
  }
  const CooTensor sorted = PermuteMatrix(m, ComputeOrdering(m, OrderingKind::kRowDegree));
  const int64_t rows = sorted.dims[0], cols = sorted.dims[1], nnz = sorted.nnz();
  std::vector<int64_t> row_start(rows + 1, 0);
  for (int32_t r : sorted.coords[0]) ++row_start[r + 1];
  for (int64_t i = 0; i < rows; ++i) row_start[i + 1] += row_start[i];

  struct Variant {
    std::string name;
    std::vector<Sell> segments;
    std::vector<int64_t> thread_start;
    bool values = true;
  };
  std::vector<Variant> variants;
  for (int parts : {1, 2, 4}) {
    Variant v;
    v.name =
        parts == 1 ? "SELL-8, row-degree" : "  in " + std::to_string(parts) + " column segments";
    for (int g = 0; g < parts; ++g) {
      v.segments.push_back(BuildSell(row_start, sorted.coords[1], rows,
                                     static_cast<int32_t>(cols * g / parts),
                                     static_cast<int32_t>(cols * (g + 1) / parts)));
    }
    variants.push_back(std::move(v));
    if (parts == 1) {
      variants.push_back(variants.back());
      variants.back().name = "  without values (bound)";
      variants.back().values = false;
    }
  }
  const int threads = omp_get_max_threads();
  const int64_t slices = (rows + kLanes - 1) / kLanes;
  for (Variant& v : variants) {
    std::vector<int64_t> slots(slices + 1, 0);
    for (int64_t t = 0; t < slices; ++t) {
      int64_t here = 0;
      for (const Sell& s : v.segments) here += s.slice_start[t + 1] - s.slice_start[t];
      slots[t + 1] = slots[t] + here;
    }
    for (int t = 0; t <= threads; ++t) {
      v.thread_start.push_back(
          std::lower_bound(slots.begin(), slots.end(), slots[slices] * t / threads) -
          slots.begin());
    }
  }

  BulkVector<float> x(cols), y(slices * kLanes);
  for (int64_t k = 0; k < cols; ++k) x[k] = 1.0f + float(k % 7) * 0.1f;
  std::vector<std::vector<double>> times(variants.size());
  std::vector<double> checksum(variants.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t n = 0; n < variants.size(); ++n) {
      const size_t v = (n + round) % variants.size();  // a different order every round
      std::vector<double> calls;
      for (int call = 0; call < 21; ++call) {
        const auto start = std::chrono::steady_clock::now();
        if (variants[v].values) {
          Spmv<true>(variants[v].segments, variants[v].thread_start, x.data(), y.data());
        } else {
          Spmv<false>(variants[v].segments, variants[v].thread_start, x.data(), y.data());
        }
        calls.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
      }
      times[v].push_back(Median(calls));
      double sum = 0;
      for (int64_t i = 0; i < rows; ++i) sum += y[i];
      checksum[v] = sum;
    }
  }
  std::printf("%s: %lld x %lld, %lld nonzeros, %d threads, median of %d rounds\n", file.c_str(),
              (long long)rows, (long long)cols, (long long)nnz, threads, rounds);
  const double base = Median(times[0]);
  for (size_t v = 0; v < variants.size(); ++v) {
    int64_t slots = 0;
    for (const Sell& s : variants[v].segments) slots += s.cols.size();
    std::printf("  %-34s %8.3f ms  %5.2fx  (%lld slots, sum of y %.6g)\n", variants[v].name.c_str(),
                Median(times[v]), Median(times[v]) / base, (long long)slots, checksum[v]);
  }
  return 0;
}
