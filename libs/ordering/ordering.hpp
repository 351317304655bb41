// Row and column orderings that improve the locality of a sparse matrix's gathers: rows that
// read the same entries of x (SpMV), the same rows of B (SpMM) or of C (SDDMM) are placed
// next to each other, and for square matrices the columns follow the rows, so that the entries
// they read sit close together in memory too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/coo.hpp"
#include "tensor/permutation.hpp"

namespace sparsetune {

// Why `kind` does not apply to this tensor ("" when it does): orderings are for matrices;
// rectangular ones take the row-only degree ordering.
std::string OrderingRefusal(const CooTensor& tensor, OrderingKind kind);

// The ordering of a matrix. Square matrices get one permutation for rows and columns (a
// symmetric permutation, computed on the pattern of A + A^T); rectangular ones a row
// permutation only. Deterministic: the same pattern gives the same permutation. Throws
// InputError with OrderingRefusal's reason when it does not apply.
MatrixOrdering ComputeOrdering(const CooTensor& matrix, OrderingKind kind);

// The partition or community ordering (new_of_old) of an undirected graph of n vertices given
// as adjacency lists (start: n + 1 offsets into neighbours; each edge in both lists, sorted, no
// self-loops): what ComputeOrdering computes on the graph of A + A^T. For emitted kernels, which
// build that graph themselves (pattern_ordering.hpp) and call it through libsparsetune_orderings.
std::vector<int32_t> OrderGraph(OrderingKind kind, int64_t n, const int32_t* start,
                                const int32_t* neighbours);

}  // namespace sparsetune
