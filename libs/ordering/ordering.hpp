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

}  // namespace sparsetune
