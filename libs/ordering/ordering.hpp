// Row and column orderings that improve the locality of a sparse matrix's gathers: rows that
// read the same entries of x (SpMV), the same rows of B (SpMM) or of C (SDDMM) are placed
// next to each other, and for square matrices the columns follow the rows, so that the entries
// they read sit close together in memory too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/coo.hpp"

namespace sparsetune {

enum class OrderingKind {
  kNone,
  kRcm,        // reverse Cuthill-McKee: breadth-first levels, a narrow band
  kDegree,     // rows by decreasing nonzeros (hub sorting): hot rows share cache lines
  kPartition,  // METIS k-way partition: parts of a few thousand rows with few cut edges
  kCommunity,  // Louvain communities (igraph), nested by level, as in Rabbit order
};

// "none", "rcm", "degree", "partition", "community".
const char* OrderingName(OrderingKind kind);
// false when `name` is none of those.
bool ParseOrdering(const std::string& name, OrderingKind* kind);
// Every kind but kNone.
const std::vector<OrderingKind>& AllOrderings();

// new_of_old[old] = new; an empty vector is the identity.
struct MatrixOrdering {
  OrderingKind kind = OrderingKind::kNone;
  std::vector<int32_t> rows;
  std::vector<int32_t> cols;
  double compute_ms = 0;
  bool identity() const { return rows.empty() && cols.empty(); }
};

// Why `kind` does not apply to this tensor ("" when it does): orderings are for matrices;
// rectangular ones take the row-only degree ordering.
std::string OrderingRefusal(const CooTensor& tensor, OrderingKind kind);

// The ordering of a matrix. Square matrices get one permutation for rows and columns (a
// symmetric permutation, computed on the pattern of A + A^T); rectangular ones a row
// permutation only. Deterministic: the same pattern gives the same permutation. Throws
// InputError with OrderingRefusal's reason when it does not apply.
MatrixOrdering ComputeOrdering(const CooTensor& matrix, OrderingKind kind);

// The tensor with row r moved to ordering.rows[r] and column c to ordering.cols[c], canonical.
CooTensor PermuteMatrix(const CooTensor& matrix, const MatrixOrdering& ordering);

}  // namespace sparsetune
