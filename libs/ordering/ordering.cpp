#include "ordering/ordering.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

extern "C" {
#include <igraph/igraph.h>
#include <metis.h>
}

#include "base/errors.hpp"

namespace sparsetune {

namespace {

// Rows per METIS part: the entries of x a part's rows read stay within a few L1-sized
// segments, and a part of SpMM's or SDDMM's dense rows within L2.
constexpr int64_t kRowsPerPart = 4096;

// The pattern of A + A^T without the diagonal, as CSR adjacency (each neighbour once).
struct Adjacency {
  int64_t n = 0;
  std::vector<int32_t> start;  // n + 1
  std::vector<int32_t> neighbours;
};

Adjacency Symmetrized(const CooTensor& a) {
  Adjacency g;
  g.n = a.dims[0];
  std::vector<int64_t> count(g.n + 1, 0);
  const int32_t* r = a.coords[0].data();
  const int32_t* c = a.coords[1].data();
  for (int64_t e = 0; e < a.nnz(); ++e) {
    if (r[e] == c[e]) continue;
    ++count[r[e] + 1];
    ++count[c[e] + 1];
  }
  for (int64_t v = 0; v < g.n; ++v) count[v + 1] += count[v];
  if (count[g.n] > INT32_MAX)
    throw InputError(
        "the matrix has more than 2^31 off-diagonal entries in A + A^T; orderings "
        "take up to 2^31");
  std::vector<int32_t> both(static_cast<size_t>(count[g.n]));
  std::vector<int64_t> fill(count.begin(), count.end() - 1);
  for (int64_t e = 0; e < a.nnz(); ++e) {
    if (r[e] == c[e]) continue;
    both[fill[r[e]]++] = c[e];
    both[fill[c[e]]++] = r[e];
  }
  // Sort and deduplicate each vertex's neighbours (an entry and its transpose give one edge).
  g.start.assign(g.n + 1, 0);
  int64_t out = 0;
  for (int64_t v = 0; v < g.n; ++v) {
    auto begin = both.begin() + count[v], end = both.begin() + count[v + 1];
    std::sort(begin, end);
    end = std::unique(begin, end);
    for (auto it = begin; it != end; ++it) both[out++] = *it;
    g.start[v + 1] = static_cast<int32_t>(out);
  }
  both.resize(out);
  g.neighbours = std::move(both);
  return g;
}

// new_of_old from a list of old indices in their new order.
std::vector<int32_t> Inverse(const std::vector<int32_t>& old_of_new) {
  std::vector<int32_t> new_of_old(old_of_new.size());
  for (size_t k = 0; k < old_of_new.size(); ++k)
    new_of_old[old_of_new[k]] = static_cast<int32_t>(k);
  return new_of_old;
}

// Breadth-first levels from `root` over the unvisited vertices, neighbours by increasing
// degree (Cuthill-McKee); appends them to `order`. Returns the last vertex reached, and the
// number of levels in `*depth`.
int32_t CuthillMcKeeSweep(const Adjacency& g, int32_t root, std::vector<uint8_t>& visited,
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

// Reverse Cuthill-McKee, each component started from a pseudo-peripheral vertex (the far end
// of repeated sweeps while they deepen, as George and Liu suggest). Written here because
// Boost Graph's cuthill_mckee_ordering clears the colour of every vertex for every component
// (quadratic in the number of components: minutes on a graph with many small ones).
std::vector<int32_t> ReverseCuthillMcKee(const Adjacency& g) {
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

// Rows by decreasing degree, ties in their original order: a counting sort over degrees.
std::vector<int32_t> ByDecreasingDegree(const std::vector<int64_t>& degree) {
  int64_t max_degree = 0;
  for (int64_t d : degree) max_degree = std::max(max_degree, d);
  std::vector<int64_t> first(max_degree + 2, 0);  // first new index per degree, highest first
  for (int64_t d : degree) ++first[max_degree - d + 1];
  for (int64_t k = 0; k <= max_degree; ++k) first[k + 1] += first[k];
  std::vector<int32_t> new_of_old(degree.size());
  for (size_t v = 0; v < degree.size(); ++v)
    new_of_old[v] = static_cast<int32_t>(first[max_degree - degree[v]]++);
  return new_of_old;
}

std::vector<int32_t> MetisPartitions(const Adjacency& g) {
  idx_t n = static_cast<idx_t>(g.n);
  idx_t parts = static_cast<idx_t>((g.n + kRowsPerPart - 1) / kRowsPerPart);
  std::vector<idx_t> part(g.n, 0);
  if (parts > 1 && !g.neighbours.empty()) {
    idx_t constraints = 1, cut = 0;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = 1;
    options[METIS_OPTION_NUMBERING] = 0;
    std::vector<idx_t> start(g.start.begin(), g.start.end());
    std::vector<idx_t> neighbours(g.neighbours.begin(), g.neighbours.end());
    const int status =
        METIS_PartGraphKway(&n, &constraints, start.data(), neighbours.data(), nullptr, nullptr,
                            nullptr, &parts, nullptr, nullptr, options, &cut, part.data());
    if (status != METIS_OK)
      throw InternalError("METIS_PartGraphKway failed (status " + std::to_string(status) + ")");
  }
  std::vector<int32_t> old_of_new(g.n);
  std::iota(old_of_new.begin(), old_of_new.end(), 0);
  std::stable_sort(old_of_new.begin(), old_of_new.end(),
                   [&](int32_t a, int32_t b) { return part[a] < part[b]; });
  return Inverse(old_of_new);
}

void CheckIgraph(igraph_error_t status, const char* what) {
  if (status != IGRAPH_SUCCESS)
    throw InternalError(std::string("igraph: ") + what + " failed: " + igraph_strerror(status));
}

std::vector<int32_t> LouvainCommunities(const Adjacency& g) {
  static const bool handler_set = [] {
    igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    return true;
  }();
  (void)handler_set;
  // Louvain visits vertices in a random order: a fixed seed keeps the ordering reproducible.
  igraph_rng_seed(igraph_rng_default(), 1);
  igraph_vector_int_t edges;
  CheckIgraph(igraph_vector_int_init(&edges, 0), "allocating the edge list");
  CheckIgraph(igraph_vector_int_reserve(&edges, static_cast<igraph_integer_t>(g.neighbours.size())),
              "allocating the edge list");
  for (int64_t v = 0; v < g.n; ++v) {
    for (int32_t q = g.start[v]; q < g.start[v + 1]; ++q) {
      if (g.neighbours[q] <= v) continue;  // each undirected edge once
      igraph_vector_int_push_back(&edges, v);
      igraph_vector_int_push_back(&edges, g.neighbours[q]);
    }
  }
  igraph_t graph;
  igraph_error_t status = igraph_create(&graph, &edges, g.n, IGRAPH_UNDIRECTED);
  igraph_vector_int_destroy(&edges);
  CheckIgraph(status, "building the graph");
  igraph_vector_int_t membership;
  igraph_matrix_int_t levels;
  igraph_vector_int_init(&membership, 0);
  igraph_matrix_int_init(&levels, 0, 0);
  status = igraph_community_multilevel(&graph, nullptr, 1.0, &membership, &levels, nullptr);
  igraph_destroy(&graph);
  if (status != IGRAPH_SUCCESS) {
    igraph_vector_int_destroy(&membership);
    igraph_matrix_int_destroy(&levels);
    CheckIgraph(status, "Louvain community detection");
  }
  // Communities nested as Louvain merged them: coarsest level first, then the finer ones, so
  // that sub-communities of one community sit next to each other.
  const igraph_integer_t depth = igraph_matrix_int_nrow(&levels);
  std::vector<int32_t> old_of_new(g.n);
  std::iota(old_of_new.begin(), old_of_new.end(), 0);
  std::stable_sort(old_of_new.begin(), old_of_new.end(), [&](int32_t a, int32_t b) {
    for (igraph_integer_t level = depth - 1; level >= 0; --level) {
      const igraph_integer_t ca = MATRIX(levels, level, a), cb = MATRIX(levels, level, b);
      if (ca != cb) return ca < cb;
    }
    return false;
  });
  igraph_vector_int_destroy(&membership);
  igraph_matrix_int_destroy(&levels);
  return Inverse(old_of_new);
}

}  // namespace

std::string OrderingRefusal(const CooTensor& tensor, OrderingKind kind) {
  if (kind == OrderingKind::kNone) return "";
  if (tensor.order() != 2)
    return std::string("the ") + OrderingName(kind) +
           " ordering is for matrices; this tensor has " + std::to_string(tensor.order()) +
           " modes";
  if (tensor.dims[0] != tensor.dims[1] && kind != OrderingKind::kDegree)
    return std::string("the ") + OrderingName(kind) +
           " ordering permutes rows and columns alike and needs a square matrix; a " +
           std::to_string(tensor.dims[0]) + " x " + std::to_string(tensor.dims[1]) +
           " matrix takes the row ordering \"degree\"";
  return "";
}

MatrixOrdering ComputeOrdering(const CooTensor& matrix, OrderingKind kind) {
  const std::string refusal = OrderingRefusal(matrix, kind);
  if (!refusal.empty()) throw InputError(refusal);
  const auto start = std::chrono::steady_clock::now();
  MatrixOrdering out;
  out.kind = kind;
  if (kind == OrderingKind::kNone) return out;
  const bool square = matrix.dims[0] == matrix.dims[1];
  if (kind == OrderingKind::kDegree) {
    std::vector<int64_t> degree(matrix.dims[0], 0);
    for (int64_t e = 0; e < matrix.nnz(); ++e) {
      ++degree[matrix.coords[0][e]];
      if (square) ++degree[matrix.coords[1][e]];
    }
    out.rows = ByDecreasingDegree(degree);
  } else {
    const Adjacency g = Symmetrized(matrix);
    out.rows = kind == OrderingKind::kRcm         ? ReverseCuthillMcKee(g)
               : kind == OrderingKind::kPartition ? MetisPartitions(g)
                                                  : LouvainCommunities(g);
  }
  if (square) out.cols = out.rows;
  out.Invert();
  out.compute_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace sparsetune
