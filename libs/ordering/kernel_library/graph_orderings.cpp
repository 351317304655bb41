// libsparsetune_orderings: the orderings that need METIS or igraph (partition, community),
// behind one C function, for emitted kernels whose schedules name them. An emitted kernel builds
// the graph of A + A^T itself (pattern_ordering.hpp) and gets the same permutation as
// ComputeOrdering gives tune.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "ordering/ordering.hpp"

// new_of_old (n entries) for the graph of n vertices given as adjacency lists (start: n + 1
// offsets into neighbours). kind is the OrderingKind: 3 partition, 4 community. Returns 0, or
// -1 with the reason in error (error_size bytes, NUL-terminated).
extern "C" int sparsetune_order_graph(int kind, int64_t n, const int32_t* start,
                                      const int32_t* neighbours, int32_t* new_of_old, char* error,
                                      int64_t error_size) {
  try {
    if (kind != static_cast<int>(sparsetune::OrderingKind::kPartition) &&
        kind != static_cast<int>(sparsetune::OrderingKind::kCommunity))
      throw std::invalid_argument("ordering kind " + std::to_string(kind) +
                                  " is neither partition (3) nor community (4)");
    const std::vector<int32_t> order =
        sparsetune::OrderGraph(static_cast<sparsetune::OrderingKind>(kind), n, start, neighbours);
    std::copy(order.begin(), order.end(), new_of_old);
    return 0;
  } catch (const std::exception& e) {
    if (error && error_size > 0) std::snprintf(error, error_size, "%s", e.what());
    return -1;
  }
}
