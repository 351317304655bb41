#include "ordering/ordering.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

extern "C" {
#include <igraph/igraph.h>
#include <metis.h>
}

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "ordering/pattern_ordering.hpp"

namespace sparsetune {

namespace {

// Rows per METIS part: the entries of x a part's rows read stay within a few L1-sized
// segments, and a part of SpMM's or SDDMM's dense rows within L2.
constexpr int64_t kRowsPerPart = 4096;

using pattern_ordering::Adjacency;
using pattern_ordering::Inverse;
static_assert(
    pattern_ordering::kRcmOrdering == static_cast<int>(OrderingKind::kRcm) &&
        pattern_ordering::kDegreeOrdering == static_cast<int>(OrderingKind::kDegree) &&
        pattern_ordering::kPartitionOrdering == static_cast<int>(OrderingKind::kPartition) &&
        pattern_ordering::kCommunityOrdering == static_cast<int>(OrderingKind::kCommunity) &&
        pattern_ordering::kRowDegreeOrdering == static_cast<int>(OrderingKind::kRowDegree),
    "pattern_ordering.hpp numbers the orderings as OrderingKind");

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
  if (!pattern_ordering::Applies(static_cast<int>(kind), tensor.dims[0], tensor.dims[1]))
    return std::string("the ") + OrderingName(kind) +
           " ordering permutes rows and columns alike and needs a square matrix; a " +
           std::to_string(tensor.dims[0]) + " x " + std::to_string(tensor.dims[1]) +
           " matrix takes the row orderings \"degree\" and \"row-degree\"";
  return "";
}

MatrixOrdering ComputeOrdering(const CooTensor& matrix, OrderingKind kind) {
  const std::string refusal = OrderingRefusal(matrix, kind);
  if (!refusal.empty()) throw InputError(refusal);
  const auto start = std::chrono::steady_clock::now();
  MatrixOrdering out;
  out.kind = kind;
  if (kind == OrderingKind::kNone) return out;
  auto order_graph = [](int graph_kind, const Adjacency& g, std::vector<int32_t>* new_of_old,
                        std::string*) {
    *new_of_old = static_cast<OrderingKind>(graph_kind) == OrderingKind::kPartition
                      ? MetisPartitions(g)
                      : LouvainCommunities(g);
    return true;
  };
  std::string graph_refusal;
  if (!pattern_ordering::OrderMatrix(static_cast<int>(kind), matrix.dims[0], matrix.dims[1],
                                     matrix.nnz(), matrix.coords[0].data(), matrix.coords[1].data(),
                                     order_graph, &out.rows, &out.cols, &graph_refusal))
    throw InputError(graph_refusal);
  out.Invert();
  out.compute_ms = MsSince(start);
  return out;
}

std::vector<int32_t> OrderGraph(OrderingKind kind, int64_t n, const int32_t* start,
                                const int32_t* neighbours) {
  if (kind != OrderingKind::kPartition && kind != OrderingKind::kCommunity)
    throw InputError(
        std::string("OrderGraph computes the partition and community orderings, not ") +
        OrderingName(kind));
  Adjacency g;
  g.n = n;
  g.start.assign(start, start + n + 1);
  g.neighbours.assign(neighbours, neighbours + g.start[n]);
  return kind == OrderingKind::kPartition ? MetisPartitions(g) : LouvainCommunities(g);
}

}  // namespace sparsetune
