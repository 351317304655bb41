// What bounds SpMV on a graph: the tuned layout (SELL-8, rows sorted by their nonzeros, columns
// as given) timed beside variants that each take one cost away or change one thing:
// - without its values: what storing no values for a pattern graph could save at most (half
//   the matrix's bytes); a kernel bound by the matrix's bytes would run twice as fast;
// - with every column folded into 1024 (x read from L1): what the misses on x cost;
// - column segments that each keep their part of x in L2 (cache blocking);
// - scalar loads instead of gather instructions;
// - wider slices (16 and 32 rows: more independent gathers in flight);
// - the symmetric degree ordering, x and y in its order (the hubs' entries of x together);
// - SELL-32 prefetching the entries of x it gathers 8 steps ahead;
// - SELL-8 and SELL-32 with y scattered back to the caller's order in a pass of its own, as the
//   emitted row-degree kernels do, and written there by the loop itself;
// - SELL-C-sigma: the rows sorted only within windows of sigma rows, y written in the caller's
//   order by the loop (the writes stay local; the slices pad to each window's hubs).
// Hand-written loops over hand-built arrays, compiled with the kernels' flags, float, all
// threads, timed in turns in one run.
//
// And the layout the tuned 2-D block rule stores (rows and columns in blocks, each block's
// nonzeros sorted by column, 16-bit coordinates inside it: i1:U k1:C k0:C i0:Q), beside loops
// that each leave out one of its costs:
// - without the update of y: the products summed in registers (what the scatter into y costs);
// - without the gather of x: the values added to y (what reading x costs);
// - four entries a batch, as the generated kernels walk a coordinate list with "unroll": 4
//   (each level's four coordinates in one load, x and y through the block's part of them), and
//   the same indexing x and y from the whole vectors;
// - with blocks of 4096 rows, whose part of y stays in L1, and of 64K x 64K;
// - the entries of the rows with the most nonzeros (hubs) first in each block, a run per row
//   summed in a register, so that only the other entries update y one by one.
//
//   graph_spmv_bound [FILE.mtx] [--scale S] [--edge-factor F] [--rounds K]
//   (default: a Graph500 graph of scale 19, edge factor 16, seed 23)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/bulk_allocator.hpp"
#include "io/read.hpp"
#include "ordering/ordering.hpp"
#include "tensor/generate.hpp"
#include "tensor/permutation.hpp"

using namespace sparsetune;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A matrix's rows: offsets into its (per row ascending) columns.
struct Rows {
  std::vector<int64_t> start;
  const std::vector<int32_t>* cols = nullptr;
};

Rows RowsOf(const CooTensor& sorted) {
  Rows r;
  r.start.assign(sorted.dims[0] + 1, 0);
  for (int32_t i : sorted.coords[0]) ++r.start[i + 1];
  for (int64_t i = 0; i < sorted.dims[0]; ++i) r.start[i + 1] += r.start[i];
  r.cols = &sorted.coords[1];
  return r;
}

// SELL-C over the rows, columns restricted to [lo, hi): slice s holds slice_start[s + 1] -
// slice_start[s] steps of C slots; a lane past its row's end repeats the row's last column
// with value 0.
struct Sell {
  int lanes = 8;
  std::vector<int32_t> slice_start;
  BulkVector<int32_t> cols;
  BulkVector<float> values;
};

Sell BuildSell(const Rows& rows_of, int64_t rows, int lanes, int32_t lo, int32_t hi) {
  const std::vector<int32_t>& col = *rows_of.cols;
  const int64_t slices = (rows + lanes - 1) / lanes;
  // Per row, the range of its columns inside [lo, hi).
  std::vector<int64_t> first(rows), last(rows);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    auto b = col.begin() + rows_of.start[i], e = col.begin() + rows_of.start[i + 1];
    first[i] = std::lower_bound(b, e, lo) - col.begin();
    last[i] = std::lower_bound(b, e, hi) - col.begin();
  }
  Sell s;
  s.lanes = lanes;
  s.slice_start.assign(slices + 1, 0);
  for (int64_t t = 0; t < slices; ++t) {
    int64_t longest = 0;
    for (int64_t i = t * lanes; i < std::min(rows, (t + 1) * lanes); ++i)
      longest = std::max(longest, last[i] - first[i]);
    s.slice_start[t + 1] = s.slice_start[t] + static_cast<int32_t>(longest);
  }
  const int64_t slots = int64_t(s.slice_start[slices]) * lanes;
  s.cols.resize(slots);
  s.values.resize(slots);
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t t = 0; t < slices; ++t) {
    for (int k = 0; k < lanes; ++k) {
      const int64_t i = t * lanes + k;
      const int64_t n = i < rows ? last[i] - first[i] : 0;
      for (int64_t j = 0; j < s.slice_start[t + 1] - s.slice_start[t]; ++j) {
        const int64_t q = (s.slice_start[t] + j) * lanes + k;
        s.cols[q] = j < n ? col[first[i] + j] : n > 0 ? col[last[i] - 1] : lo;
        s.values[q] = j < n ? 1.0f : 0.0f;
      }
    }
  }
  return s;
}

// y[i] (+)= the slices' rows times x; kValues false skips the values (every value taken as 1,
// padding included: a bound, not a result). With `y_row` (the caller's row of each slot row),
// y is written in the caller's order by the loop itself.
template <int kLanes, bool kValues, bool kAdd>
void SellRows(const Sell& a, const float* __restrict x, float* __restrict y, int64_t from,
              int64_t to, const int32_t* __restrict y_row = nullptr) {
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
    if (y_row) {
      for (int k = 0; k < kLanes; ++k) y[y_row[t * kLanes + k]] = sum[k];
      continue;
    }
    for (int k = 0; k < kLanes; ++k) y[t * kLanes + k] = kAdd ? y[t * kLanes + k] + sum[k] : sum[k];
  }
}

// The same loop with scalar loads: the vectorizer left out, so no gather instructions.
__attribute__((optimize("no-tree-vectorize"))) void SellRowsScalar(const Sell& a,
                                                                   const float* __restrict x,
                                                                   float* __restrict y,
                                                                   int64_t from, int64_t to) {
  constexpr int kLanes = 8;
  const int32_t* __restrict cols = a.cols.data();
  const float* __restrict values = a.values.data();
  for (int64_t t = from; t < to; ++t) {
    float sum[kLanes] = {};
    for (int32_t j = a.slice_start[t]; j < a.slice_start[t + 1]; ++j) {
      for (int k = 0; k < kLanes; ++k) {
        const int64_t q = int64_t(j) * kLanes + k;
        sum[k] += values[q] * x[cols[q]];
      }
    }
    for (int k = 0; k < kLanes; ++k) y[t * kLanes + k] = sum[k];
  }
}

// The vector loop, also prefetching the entries of x that the slots kPrefetchSteps steps ahead
// gather (one prefetch per slot).
constexpr int kPrefetchSteps = 8;
template <int kLanes>
void SellRowsPrefetched(const Sell& a, const float* __restrict x, float* __restrict y, int64_t from,
                        int64_t to) {
  const int32_t* __restrict cols = a.cols.data();
  const float* __restrict values = a.values.data();
  const int64_t end = a.cols.size();
  for (int64_t t = from; t < to; ++t) {
    float sum[kLanes] = {};
    for (int32_t j = a.slice_start[t]; j < a.slice_start[t + 1]; ++j) {
      const int64_t ahead = (int64_t(j) + kPrefetchSteps) * kLanes;
      if (ahead + kLanes <= end) {
        for (int k = 0; k < kLanes; ++k) __builtin_prefetch(x + cols[ahead + k]);
      }
#pragma omp simd
      for (int k = 0; k < kLanes; ++k) {
        const int64_t q = int64_t(j) * kLanes + k;
        sum[k] += values[q] * x[cols[q]];
      }
    }
    for (int k = 0; k < kLanes; ++k) y[t * kLanes + k] = sum[k];
  }
}

enum class Loop { kVector, kNoValues, kScalar, kPrefetch };

// 2-D blocks: block (b, c) holds rows [b * block_rows, ...) and columns [c * block_cols, ...),
// its nonzeros sorted by column, then row, at start[b * col_blocks + c] ...
struct Blocks {
  int64_t block_rows = 0, block_cols = 0, row_blocks = 0, col_blocks = 0;
  std::vector<int64_t> start;
  BulkVector<uint16_t> row, col;  // within the block
  BulkVector<float> values;
  // With hub rows: each block starts with the entries of the rows holding at least
  // hub_degree nonzeros in all, in runs of one row (block k's runs are runs[run_start[k]] ...,
  // each a row within the block and the end of its entries); its other entries follow.
  int64_t hub_degree = 0;
  std::vector<int64_t> run_start, run_end;
  std::vector<uint16_t> run_row;
};

Blocks BuildBlocks(const CooTensor& m, int64_t block_rows, int64_t block_cols,
                   int64_t hub_degree = 0) {
  Blocks b;
  b.block_rows = block_rows;
  b.block_cols = block_cols;
  b.row_blocks = (m.dims[0] + block_rows - 1) / block_rows;
  b.col_blocks = (m.dims[1] + block_cols - 1) / block_cols;
  const int64_t nnz = m.nnz();
  auto block_of = [&](int64_t e) {
    return m.coords[0][e] / block_rows * b.col_blocks + m.coords[1][e] / block_cols;
  };
  std::vector<int64_t> degree(m.dims[0], 0);
  for (int32_t i : m.coords[0]) ++degree[i];
  b.hub_degree = hub_degree;
  auto hub = [&](int64_t e) { return hub_degree > 0 && degree[m.coords[0][e]] >= hub_degree; };
  b.start.assign(b.row_blocks * b.col_blocks + 1, 0);
  for (int64_t e = 0; e < nnz; ++e) ++b.start[block_of(e) + 1];
  for (size_t k = 1; k < b.start.size(); ++k) b.start[k] += b.start[k - 1];
  std::vector<int64_t> order(nnz), next(b.start.begin(), b.start.end() - 1);
  for (int64_t e = 0; e < nnz; ++e) order[next[block_of(e)]++] = e;
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t k = 0; k < b.row_blocks * b.col_blocks; ++k) {
    std::sort(order.begin() + b.start[k], order.begin() + b.start[k + 1],
              [&](int64_t p, int64_t q) {
                // Hub rows' entries first, by row; the rest by column.
                if (hub(p) != hub(q)) return hub(p);
                if (hub(p))
                  return std::make_pair(m.coords[0][p], m.coords[1][p]) <
                         std::make_pair(m.coords[0][q], m.coords[1][q]);
                return std::make_pair(m.coords[1][p], m.coords[0][p]) <
                       std::make_pair(m.coords[1][q], m.coords[0][q]);
              });
  }
  b.run_start.assign(b.start.size(), 0);
  for (int64_t k = 0; k + 1 < static_cast<int64_t>(b.start.size()); ++k) {
    b.run_start[k] = static_cast<int64_t>(b.run_row.size());
    for (int64_t p = b.start[k]; p < b.start[k + 1] && hub(order[p]); ++p) {
      if (p == b.start[k] || m.coords[0][order[p]] != m.coords[0][order[p - 1]]) {
        b.run_row.push_back(static_cast<uint16_t>(m.coords[0][order[p]] % block_rows));
        b.run_end.push_back(p + 1);
      } else {
        b.run_end.back() = p + 1;
      }
    }
  }
  b.run_start.back() = static_cast<int64_t>(b.run_row.size());
  b.row.resize(nnz);
  b.col.resize(nnz);
  b.values.resize(nnz);
  for (int64_t p = 0; p < nnz; ++p) {
    b.row[p] = static_cast<uint16_t>(m.coords[0][order[p]] % block_rows);
    b.col[p] = static_cast<uint16_t>(m.coords[1][order[p]] % block_cols);
    b.values[p] = 1.0f;
  }
  return b;
}

enum class BlockLoop { kFull, kHubRuns, kNoUpdateOfY, kNoGatherOfX, kBatches, kBatchesFromVectors };

// The row blocks [from, to) of y = A x.
void BlockRows(const Blocks& b, BlockLoop loop, const float* __restrict x, float* __restrict y,
               int64_t rows, int64_t from, int64_t to) {
  const uint16_t* __restrict row = b.row.data();
  const uint16_t* __restrict col = b.col.data();
  const float* __restrict values = b.values.data();
  for (int64_t r = from; r < to; ++r) {
    float* __restrict yb = y + r * b.block_rows;
    std::memset(yb, 0, sizeof(float) * std::min(b.block_rows, rows - r * b.block_rows));
    for (int64_t c = 0; c < b.col_blocks; ++c) {
      const float* __restrict xb = x + c * b.block_cols;
      const int64_t lo = b.start[r * b.col_blocks + c], hi = b.start[r * b.col_blocks + c + 1];
      if (loop == BlockLoop::kHubRuns) {
        // The hub rows' runs summed in registers, then the other entries one by one.
        const int64_t k = r * b.col_blocks + c;
        int64_t p = lo;
        for (int64_t q = b.run_start[k]; q < b.run_start[k + 1]; ++q) {
          float sum = 0;
          const int64_t end = b.run_end[q];
#pragma omp simd reduction(+ : sum)
          for (int64_t e = p; e < end; ++e) sum += values[e] * xb[col[e]];
          yb[b.run_row[q]] += sum;
          p = end;
        }
        for (; p < hi; ++p) yb[row[p]] += values[p] * xb[col[p]];
      } else if (loop == BlockLoop::kFull) {
        for (int64_t p = lo; p < hi; ++p) yb[row[p]] += values[p] * xb[col[p]];
      } else if (loop == BlockLoop::kBatches || loop == BlockLoop::kBatchesFromVectors) {
        // Four entries a batch, as the generated kernels walk them ("unroll": 4): each level's
        // four coordinates in one load, the products, then the updates in entry order; x and y
        // through the block's pointers, or indexed from the whole vectors.
        const bool whole = loop == BlockLoop::kBatchesFromVectors;
        const int64_t x_first = c * b.block_cols, y_first = r * b.block_rows;
        int64_t p = lo;
        for (; p + 4 <= hi; p += 4) {
          uint64_t rows4, cols4;
          std::memcpy(&rows4, row + p, sizeof rows4);
          std::memcpy(&cols4, col + p, sizeof cols4);
          float term[4];
          for (int u = 0; u < 4; ++u) {
            const int64_t k = int64_t((cols4 >> (16 * u)) & 0xffff);
            term[u] = values[p + u] * (whole ? x[x_first + k] : xb[k]);
          }
          for (int u = 0; u < 4; ++u) {
            const int64_t i = int64_t((rows4 >> (16 * u)) & 0xffff);
            (whole ? y[y_first + i] : yb[i]) += term[u];
          }
        }
        for (; p < hi; ++p) yb[row[p]] += values[p] * xb[col[p]];
      } else if (loop == BlockLoop::kNoGatherOfX) {
        for (int64_t p = lo; p < hi; ++p) yb[row[p]] += values[p];
      } else {
        // Eight sums, so that the adds do not wait for each other.
        float sum[8] = {};
        int64_t p = lo;
        for (; p + 8 <= hi; p += 8) {
          for (int k = 0; k < 8; ++k) sum[k] += values[p + k] * xb[col[p + k]];
        }
        for (; p < hi; ++p) sum[0] += values[p] * xb[col[p]];
        for (int k = 0; k < 8; ++k) yb[0] += sum[k];
      }
    }
  }
}

template <int kLanes>
void RunSlices(const std::vector<Sell>& segments, Loop loop, const float* x, float* y, int64_t from,
               int64_t to, const int32_t* y_row) {
  for (size_t g = 0; g < segments.size(); ++g) {
    if (y_row) {
      SellRows<kLanes, true, false>(segments[g], x, y, from, to, y_row);
    } else if (loop == Loop::kScalar) {
      SellRowsScalar(segments[g], x, y, from, to);
    } else if (loop == Loop::kPrefetch) {
      SellRowsPrefetched<kLanes>(segments[g], x, y, from, to);
    } else if (loop == Loop::kNoValues) {
      SellRows<kLanes, false, false>(segments[g], x, y, from, to);
    } else if (g == 0) {
      SellRows<kLanes, true, false>(segments[g], x, y, from, to);
    } else {
      SellRows<kLanes, true, true>(segments[g], x, y, from, to);
    }
  }
}

// One way of computing y: its segments, each thread's range of slices (an equal share of the
// slots over every segment), and where y ends up.
struct Variant {
  std::string name;
  std::vector<Sell> segments;
  Loop loop = Loop::kVector;
  std::vector<int64_t> thread_start;
  // Set (old_of_new): y is scattered to y_out[scatter[i]] after the loop, in a parallel pass of
  // its own.
  const std::vector<int32_t>* scatter = nullptr;
  // Set: the loop writes row r of the slices to y_out[y_row[r]] (padding rows to the spare
  // entries past the last row).
  std::vector<int32_t> y_row;
  // Set: 2-D blocks instead of slices (thread_start then counts row blocks).
  std::shared_ptr<const Blocks> blocks;
  BlockLoop block_loop = BlockLoop::kFull;
};

void Spmv(const Variant& v, const float* x, float* y, float* y_out, int64_t rows) {
  if (v.blocks) {
#pragma omp parallel
    {
      const int t = omp_get_thread_num();
      BlockRows(*v.blocks, v.block_loop, x, y, rows, v.thread_start[t], v.thread_start[t + 1]);
    }
    return;
  }
  const int lanes = v.segments[0].lanes;
#pragma omp parallel
  {
    const int t = omp_get_thread_num();
    const int64_t from = v.thread_start[t], to = v.thread_start[t + 1];
    const int32_t* y_row = v.y_row.empty() ? nullptr : v.y_row.data();
    float* into = y_row ? y_out : y;
    if (lanes == 8) RunSlices<8>(v.segments, v.loop, x, into, from, to, y_row);
    if (lanes == 16) RunSlices<16>(v.segments, v.loop, x, into, from, to, y_row);
    if (lanes == 32) RunSlices<32>(v.segments, v.loop, x, into, from, to, y_row);
  }
  if (v.scatter) {
    const int32_t* to = v.scatter->data();
    const int64_t n = static_cast<int64_t>(v.scatter->size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) y_out[to[i]] = y[i];
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
  MatrixOrdering row_degree = ComputeOrdering(m, OrderingKind::kRowDegree);
  if (row_degree.old_rows.empty()) row_degree.Invert();
  const CooTensor sorted = PermuteMatrix(m, row_degree);
  const int64_t rows = sorted.dims[0], cols = sorted.dims[1], nnz = sorted.nnz();
  const Rows sorted_rows = RowsOf(sorted);

  std::vector<Variant> variants;
  auto add = [&](const std::string& name, int lanes, const Rows& r, int parts, Loop loop) {
    Variant v;
    v.name = name;
    v.loop = loop;
    for (int g = 0; g < parts; ++g) {
      v.segments.push_back(BuildSell(r, rows, lanes, static_cast<int32_t>(cols * g / parts),
                                     static_cast<int32_t>(cols * (g + 1) / parts)));
    }
    variants.push_back(std::move(v));
    return &variants.back();
  };
  add("SELL-8, row-degree", 8, sorted_rows, 1, Loop::kVector);
  add("  without values (bound)", 8, sorted_rows, 1, Loop::kNoValues);
  // Every column folded into the first 1024: x's part read stays in L1.
  auto fold_columns = [](Variant* v) {
    for (auto& c : v->segments[0].cols) c &= 1023;
  };
  fold_columns(add("  x in 4 KiB (no misses on x)", 8, sorted_rows, 1, Loop::kVector));
  add("  in 2 column segments", 8, sorted_rows, 2, Loop::kVector);
  add("  in 4 column segments", 8, sorted_rows, 4, Loop::kVector);
  add("  scalar loads", 8, sorted_rows, 1, Loop::kScalar);
  add("SELL-16, row-degree", 16, sorted_rows, 1, Loop::kVector);
  add("SELL-32, row-degree", 32, sorted_rows, 1, Loop::kVector);
  fold_columns(add("  x in 4 KiB (no misses on x)", 32, sorted_rows, 1, Loop::kVector));
  add("  prefetching x 8 steps ahead", 32, sorted_rows, 1, Loop::kPrefetch);
  add("  y scattered to the caller's order", 32, sorted_rows, 1, Loop::kVector)->scatter =
      &row_degree.old_rows;
  // The caller's row of every slot row (padding rows to the spare entries of y_out).
  auto caller_rows = [&](const std::vector<int32_t>& old_of_new, int lanes) {
    std::vector<int32_t> out(old_of_new);
    const int64_t padded = (rows + lanes - 1) / lanes * lanes;
    for (int64_t r = rows; r < padded; ++r) out.push_back(static_cast<int32_t>(r));
    return out;
  };
  add("  y written to the caller's order by the loop", 32, sorted_rows, 1, Loop::kVector)->y_row =
      caller_rows(row_degree.old_rows, 32);
  add("SELL-8, y scattered to the caller's order", 8, sorted_rows, 1, Loop::kVector)->scatter =
      &row_degree.old_rows;
  add("SELL-8, y written to the caller's order by the loop", 8, sorted_rows, 1, Loop::kVector)
      ->y_row = caller_rows(row_degree.old_rows, 8);
  // SELL-C-sigma: rows sorted by their nonzeros only within windows of sigma rows, so the loop's
  // writes to y in the caller's order stay within a few KiB.
  std::vector<CooTensor> windowed(2);
  std::vector<Rows> windowed_rows(2);
  const int64_t sigmas[2] = {1024, 8192};
  for (int w = 0; w < 2; ++w) {
    MatrixOrdering window;
    window.kind = OrderingKind::kRowDegree;
    std::vector<int64_t> degree(rows, 0);
    for (int32_t i : m.coords[0]) ++degree[i];
    for (int64_t r = 0; r < rows; ++r) window.old_rows.push_back(static_cast<int32_t>(r));
    for (int64_t lo = 0; lo < rows; lo += sigmas[w]) {
      std::stable_sort(window.old_rows.begin() + lo,
                       window.old_rows.begin() + std::min(rows, lo + sigmas[w]),
                       [&](int32_t a, int32_t b) { return degree[a] > degree[b]; });
    }
    window.rows.assign(rows, 0);
    for (int64_t r = 0; r < rows; ++r) window.rows[window.old_rows[r]] = static_cast<int32_t>(r);
    windowed[w] = PermuteMatrix(m, window);
    windowed_rows[w] = RowsOf(windowed[w]);
    for (int lanes : {16, 32}) {
      add("SELL-" + std::to_string(lanes) + "-" + std::to_string(sigmas[w]) +
              ", y in the caller's order by the loop",
          lanes, windowed_rows[w], 1, Loop::kVector)
          ->y_row = caller_rows(window.old_rows, lanes);
    }
  }
  CooTensor symmetric;
  Rows symmetric_rows;
  if (rows == cols) {
    symmetric = PermuteMatrix(m, ComputeOrdering(m, OrderingKind::kDegree));
    symmetric_rows = RowsOf(symmetric);
    add("SELL-8, degree (x, y in its order)", 8, symmetric_rows, 1, Loop::kVector);
    add("SELL-32, degree (x, y in its order)", 32, symmetric_rows, 1, Loop::kVector);
  }

  // 2-D blocks in the caller's order, as the tuned rule stores them.
  auto add_blocks = [&](const std::string& name, std::shared_ptr<const Blocks> blocks,
                        BlockLoop loop) {
    Variant v;
    v.name = name;
    v.blocks = std::move(blocks);
    v.block_loop = loop;
    variants.push_back(std::move(v));
  };
  if (rows <= int64_t(1) << 31 && cols <= int64_t(1) << 31) {
    auto blocks16k = std::make_shared<const Blocks>(BuildBlocks(m, 16384, 16384));
    add_blocks("2-D blocks 16K x 16K (caller's order)", blocks16k, BlockLoop::kFull);
    add_blocks("  four entries a batch (generated)", blocks16k, BlockLoop::kBatches);
    add_blocks("  the same, x and y from whole vectors", blocks16k, BlockLoop::kBatchesFromVectors);
    add_blocks("  without the update of y (bound)", blocks16k, BlockLoop::kNoUpdateOfY);
    add_blocks("  without the gather of x (bound)", blocks16k, BlockLoop::kNoGatherOfX);
    add_blocks("2-D blocks 4K x 16K (y in L1)",
               std::make_shared<const Blocks>(BuildBlocks(m, 4096, 16384)), BlockLoop::kFull);
    add_blocks("2-D blocks 64K x 64K", std::make_shared<const Blocks>(BuildBlocks(m, 65536, 65536)),
               BlockLoop::kFull);
    // The hub rows' entries in runs, summed in registers: runs of about 16 nonzeros in 16K
    // blocks, of 64 or more in 64K ones.
    add_blocks("2-D blocks 16K, rows of 1024+ in runs",
               std::make_shared<const Blocks>(BuildBlocks(m, 16384, 16384, 1024)),
               BlockLoop::kHubRuns);
    add_blocks("2-D blocks 64K, rows of 4096+ in runs",
               std::make_shared<const Blocks>(BuildBlocks(m, 65536, 65536, 4096)),
               BlockLoop::kHubRuns);
  }

  const int threads = omp_get_max_threads();
  for (Variant& v : variants) {
    if (v.blocks) {
      // Row blocks cut at equal shares of the nonzeros.
      const Blocks& b = *v.blocks;
      const int64_t total = b.start.back();
      for (int t = 0; t <= threads; ++t) {
        int64_t r = 0;
        while (r < b.row_blocks && b.start[r * b.col_blocks] < total * t / threads) ++r;
        v.thread_start.push_back(t == threads ? b.row_blocks : r);
      }
      continue;
    }
    const int lanes = v.segments[0].lanes;
    const int64_t slices = (rows + lanes - 1) / lanes;
    std::vector<int64_t> slots(slices + 1, 0);
    for (int64_t t = 0; t < slices; ++t) {
      int64_t here = 0;
      for (const Sell& s : v.segments) here += s.slice_start[t + 1] - s.slice_start[t];
      slots[t + 1] = slots[t] + here;
    }
    // The last thread also takes the trailing slices of empty rows (they hold no slots).
    for (int t = 0; t <= threads; ++t) {
      v.thread_start.push_back(
          t == threads ? slices
                       : std::lower_bound(slots.begin(), slots.end(), slots[slices] * t / threads) -
                             slots.begin());
    }
  }

  BulkVector<float> x(cols), y(rows + 64), y_out(rows + 64);
  for (int64_t k = 0; k < cols; ++k) x[k] = 1.0f + float(k % 7) * 0.1f;
  std::vector<std::vector<double>> times(variants.size());
  std::vector<double> checksum(variants.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t n = 0; n < variants.size(); ++n) {
      const size_t v = (n + round) % variants.size();  // a different order every round
      std::vector<double> calls;
      for (int call = 0; call < 21; ++call) {
        const auto start = std::chrono::steady_clock::now();
        Spmv(variants[v], x.data(), y.data(), y_out.data(), rows);
        calls.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
      }
      times[v].push_back(Median(calls));
      const float* result =
          variants[v].scatter || !variants[v].y_row.empty() ? y_out.data() : y.data();
      double sum = 0;
      for (int64_t i = 0; i < rows; ++i) sum += result[i];
      checksum[v] = sum;
    }
  }
  std::printf("%s: %lld x %lld, %lld nonzeros, %d threads, median of %d rounds\n", file.c_str(),
              (long long)rows, (long long)cols, (long long)nnz, threads, rounds);
  const double base = Median(times[0]);
  for (size_t v = 0; v < variants.size(); ++v) {
    int64_t slots = variants[v].blocks ? nnz : 0;
    for (const Sell& s : variants[v].segments) slots += s.cols.size();
    std::printf("  %-38s %8.3f ms  %5.2fx  (%lld slots, sum of y %.6g)\n", variants[v].name.c_str(),
                Median(times[v]), Median(times[v]) / base, (long long)slots, checksum[v]);
  }
  return 0;
}
