// Reorderings of a matrix's rows and columns: which recipe (the kind, recomputable from the
// pattern) and the permutation itself. libs/ordering computes them; packing applies them.
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
  // Rows by decreasing nonzeros within each thread's share of them, columns as given
  // (SELL-C-sigma's sort of the rows, sigma a thread's rows): slices of
  // similar rows pad little, no dense input is permuted per call, and the columns keep the
  // locality their numbering has (graph SpMV in SELL-8: 1.2-1.35x faster than renumbering the
  // columns by degree too, on randomly labelled Graph500 graphs).
  kRowDegree,
};

// "none", "rcm", "degree", "partition", "community".
const char* OrderingName(OrderingKind kind);
// false when `name` is none of those.
bool ParseOrdering(const std::string& name, OrderingKind* kind);
// Every kind but kNone.
const std::vector<OrderingKind>& AllOrderings();

// A permutation of a matrix's rows and of its columns: new_of_old[old] = new and its inverse
// old_of_new[new] = old; empty vectors are the identity.
struct MatrixOrdering {
  OrderingKind kind = OrderingKind::kNone;
  std::vector<int32_t> rows, cols;          // new_of_old
  std::vector<int32_t> old_rows, old_cols;  // old_of_new
  double compute_ms = 0;
  bool identity() const { return rows.empty() && cols.empty(); }
  // Fills old_rows and old_cols from rows and cols.
  void Invert();
};

// Whether an ordering of this kind renumbers the columns of a rows x cols matrix too: the
// symmetric ones do on a square matrix; row-degree never does.
bool RenumbersColumns(OrderingKind kind, int64_t rows, int64_t cols);

// The tensor with row r moved to ordering.rows[r] and column c to ordering.cols[c], canonical.
CooTensor PermuteMatrix(const CooTensor& matrix, const MatrixOrdering& ordering);

}  // namespace sparsetune
