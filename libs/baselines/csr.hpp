// The sparse operand as the contenders take it: CSR with 64-bit row pointers and 32-bit column
// indices, in the canonical entry order (which is also the order of a sparse output's values).
#pragma once

#include <cstdint>
#include <vector>

#include "measure/operands.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

struct CsrArrays {
  std::vector<int64_t> row_ptr;  // rows + 1
  std::vector<int32_t> col;      // nnz
};

// `matrix` must be canonical (sorted by row, then column).
inline CsrArrays ToCsr(const CooTensor& matrix) {
  CsrArrays csr;
  csr.row_ptr.assign(matrix.dims[0] + 1, 0);
  for (int64_t e = 0; e < matrix.nnz(); ++e) ++csr.row_ptr[matrix.coords[0][e] + 1];
  for (int64_t i = 0; i < matrix.dims[0]; ++i) csr.row_ptr[i + 1] += csr.row_ptr[i];
  csr.col = matrix.coords[1];
  return csr;
}

template <class V>
std::vector<V> TypedValues(const CooTensor& matrix) {
  return std::vector<V>(matrix.values.begin(), matrix.values.end());
}

// The matrix's values in the kernel's type (complex ones with their imaginary parts, zero for
// a real matrix).
inline ValueBuffer TypedValues(const CooTensor& matrix, DType dtype) {
  ValueBuffer values(dtype, matrix.nnz());
  for (int64_t e = 0; e < matrix.nnz(); ++e)
    values.SetComplex(e, {matrix.values[e], matrix.Imag(e)});
  return values;
}

}  // namespace sparsetune
