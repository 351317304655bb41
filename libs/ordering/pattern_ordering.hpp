// Orderings of a matrix computed from its pattern, shared by the library (ComputeOrdering,
// ordering.cpp) and every emitted kernel whose schedule renumbers rows and columns, whose source
// carries this file verbatim: a kernel renumbers a user's matrix exactly as tune did the one it
// was tuned on.
//
// Self-contained on purpose: C++17 and its standard library (and omp.h under OpenMP), no other
// include. Reverse
// Cuthill-McKee and the degree ordering are computed here; the orderings that need METIS or
// igraph (partition, community) are passed in as a function of the graph of A + A^T.
#ifndef SPARSETUNE_ORDERING_PATTERN_ORDERING_HPP
#define SPARSETUNE_ORDERING_PATTERN_ORDERING_HPP

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace sparsetune {
namespace pattern_ordering {
// Internal linkage, as the packer's: each emitted kernel carries its own copy.
namespace {

// Numbered as the library's OrderingKind.
constexpr int kNoOrdering = 0;
constexpr int kRcmOrdering = 1;
constexpr int kDegreeOrdering = 2;
constexpr int kPartitionOrdering = 3;
constexpr int kCommunityOrdering = 4;
constexpr int kRowDegreeOrdering = 5;

// The pattern of A + A^T without the diagonal, as CSR adjacency (each neighbour once, sorted).
struct Adjacency {
  int64_t n = 0;
  std::vector<int32_t> start;  // n + 1
  std::vector<int32_t> neighbours;
};

// Of an n x n pattern given as nnz (row, column) pairs in any order. False, saying why in
// *refusal, when A + A^T has more off-diagonal entries than 32-bit offsets address.
inline bool Symmetrized(int64_t n, int64_t nnz, const int32_t* r, const int32_t* c, Adjacency* g,
                        std::string* refusal) {
  g->n = n;
  std::vector<int64_t> count(n + 1, 0);
  for (int64_t e = 0; e < nnz; ++e) {
    if (r[e] == c[e]) continue;
    ++count[r[e] + 1];
    ++count[c[e] + 1];
  }
  for (int64_t v = 0; v < n; ++v) count[v + 1] += count[v];
  if (count[n] > INT32_MAX) {
    *refusal =
        "the matrix has more than 2^31 off-diagonal entries in A + A^T; orderings take up to "
        "2^31";
    return false;
  }
  std::vector<int32_t> both(static_cast<size_t>(count[n]));
  std::vector<int64_t> fill(count.begin(), count.end() - 1);
  for (int64_t e = 0; e < nnz; ++e) {
    if (r[e] == c[e]) continue;
    both[fill[r[e]]++] = c[e];
    both[fill[c[e]]++] = r[e];
  }
  // Sort and deduplicate each vertex's neighbours (an entry and its transpose give one edge).
  g->start.assign(n + 1, 0);
  int64_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    auto begin = both.begin() + count[v], end = both.begin() + count[v + 1];
    std::sort(begin, end);
    end = std::unique(begin, end);
    for (auto it = begin; it != end; ++it) both[out++] = *it;
    g->start[v + 1] = static_cast<int32_t>(out);
  }
  both.resize(out);
  g->neighbours = std::move(both);
  return true;
}

// new_of_old from old_of_new, or the other way round.
inline std::vector<int32_t> Inverse(const std::vector<int32_t>& p) {
  std::vector<int32_t> inverse(p.size());
  for (size_t k = 0; k < p.size(); ++k) inverse[p[k]] = static_cast<int32_t>(k);
  return inverse;
}

// Breadth-first levels from `root` over the unvisited vertices, neighbours by increasing
// degree (Cuthill-McKee); appends them to `order`. Returns the last vertex reached, and the
// number of levels in `*depth`.
inline int32_t CuthillMcKeeSweep(const Adjacency& g, int32_t root, std::vector<uint8_t>& visited,
                                 std::vector<int32_t>& order, int* depth) {
  const size_t first = order.size();
  order.push_back(root);
  visited[root] = 1;
  std::vector<int32_t> next;
  size_t head = first, level_end = first + 1;
  *depth = 1;
  while (head < order.size()) {
    const int32_t v = order[head++];
    next.clear();
    for (int32_t q = g.start[v]; q < g.start[v + 1]; ++q) {
      const int32_t w = g.neighbours[q];
      if (!visited[w]) {
        visited[w] = 1;
        next.push_back(w);
      }
    }
    std::sort(next.begin(), next.end(), [&](int32_t a, int32_t b) {
      const int32_t da = g.start[a + 1] - g.start[a], db = g.start[b + 1] - g.start[b];
      return da != db ? da < db : a < b;
    });
    order.insert(order.end(), next.begin(), next.end());
    if (head == level_end && head < order.size()) {
      level_end = order.size();
      ++*depth;
    }
  }
  return order.back();
}

// Reverse Cuthill-McKee (new_of_old), each component started from a pseudo-peripheral vertex
// (the far end of repeated sweeps while they deepen, as George and Liu suggest). Written here
// because Boost Graph's cuthill_mckee_ordering clears the colour of every vertex for every
// component (quadratic in the number of components: minutes on a graph with many small ones).
inline std::vector<int32_t> ReverseCuthillMcKee(const Adjacency& g) {
  std::vector<uint8_t> visited(g.n, 0), probe(g.n, 0);
  std::vector<int32_t> order, trial;
  order.reserve(g.n);
  for (int64_t v = 0; v < g.n; ++v) {
    if (visited[v]) continue;
    // Find a pseudo-peripheral root on this component: a few sweeps, each from the last vertex
    // the previous one reached, while the number of levels grows.
    int32_t root = static_cast<int32_t>(v);
    int depth = 0;
    for (int round = 0; round < 4; ++round) {
      trial.clear();
      int d = 0;
      const int32_t far = CuthillMcKeeSweep(g, root, probe, trial, &d);
      for (int32_t w : trial) probe[w] = 0;
      if (round > 0 && d <= depth) break;
      depth = d;
      root = far;
    }
    CuthillMcKeeSweep(g, root, visited, order, &depth);
  }
  std::reverse(order.begin(), order.end());
  return Inverse(order);
}

// Nonzeros per row, and per column too when `and_columns` (the symmetric degree), of nnz
// (row, column) pairs. The increments land at random rows, so each thread counts its share of
// the entries into its own array and the arrays are summed; one thread when the arrays would
// cost more than the entries. A row's count is at most the columns, a row and column's at most
// twice the 2^31 - 1 of a coordinate: 32 bits hold both.
inline std::vector<uint32_t> Degrees(int64_t n, int64_t nnz, const int32_t* r, const int32_t* c,
                                     bool and_columns) {
  std::vector<uint32_t> degree(n, 0);
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  if (threads < 2 || nnz < 4 * n || nnz < (int64_t{1} << 16)) {
    for (int64_t e = 0; e < nnz; ++e) {
      ++degree[r[e]];
      if (and_columns) ++degree[c[e]];
    }
    return degree;
  }
  std::vector<std::vector<uint32_t>> partial(threads);
#pragma omp parallel num_threads(threads)
  {
    int me = 0, team = 1;
#ifdef _OPENMP
    me = omp_get_thread_num();
    team = omp_get_num_threads();
#endif
    std::vector<uint32_t>& mine = partial[me];
    mine.assign(n, 0);
    const int64_t first = nnz * me / team, last = nnz * (me + 1) / team;
    for (int64_t e = first; e < last; ++e) {
      ++mine[r[e]];
      if (and_columns) ++mine[c[e]];
    }
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t v = 0; v < n; ++v) {
      uint32_t sum = 0;
      for (int t = 0; t < team; ++t) sum += partial[t][v];
      degree[v] = sum;
    }
  }
  return degree;
}

// Rows by decreasing degree, ties in their original order (new_of_old): a counting sort.
inline std::vector<int32_t> ByDecreasingDegree(const std::vector<uint32_t>& degree) {
  int64_t max_degree = 0;
  for (uint32_t d : degree) max_degree = std::max<int64_t>(max_degree, d);
  std::vector<int64_t> first(max_degree + 2, 0);  // first new index per degree, highest first
  for (uint32_t d : degree) ++first[max_degree - d + 1];
  for (int64_t k = 0; k <= max_degree; ++k) first[k + 1] += first[k];
  std::vector<int32_t> new_of_old(degree.size());
  for (size_t v = 0; v < degree.size(); ++v)
    new_of_old[v] = static_cast<int32_t>(first[max_degree - degree[v]]++);
  return new_of_old;
}

// Rows by decreasing degree within consecutive windows, ties in their original order
// (new_of_old): window w holds rows [bounds[w], bounds[w + 1]), the bounds ascending from 0 to
// the rows. Each row keeps its window.
inline std::vector<int32_t> ByDecreasingDegreeWithin(const std::vector<uint32_t>& degree,
                                                     const std::vector<int64_t>& bounds) {
  std::vector<int32_t> new_of_old(degree.size());
  for (size_t w = 0; w + 1 < bounds.size(); ++w) {
    const int64_t begin = bounds[w], end = bounds[w + 1];
    const std::vector<int32_t> within =
        ByDecreasingDegree(std::vector<uint32_t>(degree.begin() + begin, degree.begin() + end));
    for (int64_t v = begin; v < end; ++v)
      new_of_old[v] = static_cast<int32_t>(begin + within[v - begin]);
  }
  return new_of_old;
}

// The rows the row-degree ordering sorts together: each thread's share of them, as a kernel
// that gives each thread one range of rows holding an equal share of the work would split them
// (a row's nonzeros plus one, as the balanced partition counts it), here with OpenMP's thread
// count (one share without OpenMP). The bounds of the shares, `threads` + 1 of them.
// Sorted within a share, not over all rows, a row stays with the thread that computes it, and
// the kernel's output goes back into the caller's order by the thread that wrote it. Sorted over
// all rows, most of y crossed between the threads on every call: on cores of two L3s a 0.13 ms
// SpMV ran 1.7-1.9x its time on cores sharing one, and a 6.1 ms one on a power-law graph 9%
// slower than sorted by shares. Shares of equal rows, not work, crossed a third of the rows on
// a matrix whose first half holds three quarters of the nonzeros. Smaller windows (4096 rows)
// cost that graph 40%: its hubs must meet.
inline std::vector<int64_t> RowDegreeShares(const std::vector<uint32_t>& degree) {
  int threads = 1;
#ifdef _OPENMP
  threads = std::max(1, omp_get_max_threads());
#endif
  const int64_t n = static_cast<int64_t>(degree.size());
  int64_t total = n;
  for (uint32_t d : degree) total += d;
  std::vector<int64_t> bounds(threads + 1, n);
  bounds[0] = 0;
  int64_t before = 0, row = 0;  // work before `row`
  for (int part = 1; part < threads; ++part) {
    // The first row whose work before it reaches the part's target (st_balanced_bound's).
    const int64_t target = total / threads * part + total % threads * part / threads;
    while (row < n && before < target) before += int64_t(degree[row++]) + 1;
    bounds[part] = row;
  }
  return bounds;
}
// Whether `kind` applies to a rows x cols matrix: the symmetric orderings need a square one;
// a rectangular one takes the row-only degree orderings.
inline bool Applies(int kind, int64_t rows, int64_t cols) {
  return kind == kNoOrdering || kind == kDegreeOrdering || kind == kRowDegreeOrdering ||
         rows == cols;
}

// The ordering `kind` of a rows x cols pattern given as nnz (row, column) pairs in any order:
// new_of_old of the rows, and of the columns (the same permutation: a symmetric one, computed
// on A + A^T) when the matrix is square; empty for what is not renumbered. `order_graph(kind,
// g, &new_of_old, refusal)` orders the graph of A + A^T for the kinds computed elsewhere
// (partition, community). Deterministic: the same pattern (and, for row-degree, the same
// number of OpenMP threads) gives the same permutation. False,
// saying why in *refusal, when the graph cannot be ordered; `kind` must apply (Applies).
template <class OrderGraph>
bool OrderMatrix(int kind, int64_t rows, int64_t cols, int64_t nnz, const int32_t* r,
                 const int32_t* c, OrderGraph order_graph, std::vector<int32_t>* new_rows,
                 std::vector<int32_t>* new_cols, std::string* refusal) {
  new_rows->clear();
  new_cols->clear();
  if (kind == kNoOrdering) return true;
  const bool square = rows == cols;
  if (kind == kRowDegreeOrdering) {
    // The rows by their own nonzeros, each within its thread's share (RowDegreeShares); the
    // columns keep their numbering, so the kernel reads its dense inputs where the caller put
    // them.
    const std::vector<uint32_t> degree = Degrees(rows, nnz, r, c, /*and_columns=*/false);
    *new_rows = ByDecreasingDegreeWithin(degree, RowDegreeShares(degree));
    return true;
  }
  if (kind == kDegreeOrdering) {
    *new_rows = ByDecreasingDegree(Degrees(rows, nnz, r, c, /*and_columns=*/square));
  } else {
    Adjacency g;
    if (!Symmetrized(rows, nnz, r, c, &g, refusal)) return false;
    if (kind == kRcmOrdering) {
      *new_rows = ReverseCuthillMcKee(g);
    } else if (!order_graph(kind, g, new_rows, refusal)) {
      return false;
    }
  }
  if (square) *new_cols = *new_rows;
  return true;
}

}  // namespace
}  // namespace pattern_ordering
}  // namespace sparsetune

#endif  // SPARSETUNE_ORDERING_PATTERN_ORDERING_HPP
