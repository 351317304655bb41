#include "tensor/permutation.hpp"

#include <algorithm>

namespace sparsetune {

const char* OrderingName(OrderingKind kind) {
  switch (kind) {
    case OrderingKind::kNone:
      return "none";
    case OrderingKind::kRcm:
      return "rcm";
    case OrderingKind::kDegree:
      return "degree";
    case OrderingKind::kPartition:
      return "partition";
    case OrderingKind::kCommunity:
      return "community";
  }
  return "none";
}

bool ParseOrdering(const std::string& name, OrderingKind* kind) {
  for (OrderingKind k : {OrderingKind::kNone, OrderingKind::kRcm, OrderingKind::kDegree,
                         OrderingKind::kPartition, OrderingKind::kCommunity}) {
    if (name == OrderingName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

const std::vector<OrderingKind>& AllOrderings() {
  static const std::vector<OrderingKind> all = {OrderingKind::kRcm, OrderingKind::kDegree,
                                                OrderingKind::kPartition, OrderingKind::kCommunity};
  return all;
}

namespace {
std::vector<int32_t> Inverse(const std::vector<int32_t>& p) {
  std::vector<int32_t> inverse(p.size());
  for (size_t k = 0; k < p.size(); ++k) inverse[p[k]] = static_cast<int32_t>(k);
  return inverse;
}
}  // namespace

void MatrixOrdering::Invert() {
  old_rows = Inverse(rows);
  old_cols = Inverse(cols);
}

namespace {

// Sorts entries [from, to) of a row by column, carrying their values: insertion sort for the
// short rows that dominate sparse matrices, else a sort of (column, offset) keys and a gather.
void SortRowByColumn(int32_t* cols, double* values, int64_t from, int64_t to,
                     std::vector<uint64_t>& keys, std::vector<double>& scratch) {
  const int64_t n = to - from;
  if (n <= 32) {
    for (int64_t a = from + 1; a < to; ++a) {
      const int32_t c = cols[a];
      const double v = values[a];
      int64_t b = a;
      for (; b > from && cols[b - 1] > c; --b) {
        cols[b] = cols[b - 1];
        values[b] = values[b - 1];
      }
      cols[b] = c;
      values[b] = v;
    }
    return;
  }
  keys.resize(n);
  for (int64_t q = 0; q < n; ++q) keys[q] = uint64_t(uint32_t(cols[from + q])) << 32 | uint64_t(q);
  std::sort(keys.begin(), keys.end());
  scratch.assign(values + from, values + to);
  for (int64_t q = 0; q < n; ++q) {
    cols[from + q] = static_cast<int32_t>(keys[q] >> 32);
    values[from + q] = scratch[keys[q] & 0xffffffffu];
  }
}

// A canonical matrix's rows moved whole: a row's entries stay together, so only each row's
// renumbered columns need sorting (short for the matrices orderings are for), in parallel and
// in place in the output.
CooTensor PermuteCanonicalRows(const CooTensor& matrix, const MatrixOrdering& ordering) {
  const int64_t rows = matrix.dims[0];
  const int32_t* old_row_of = matrix.coords[0].data();
  const int32_t* old_col_of = matrix.coords[1].data();
  const double* old_value_of = matrix.values.data();
  std::vector<int64_t> old_start(rows + 1, 0);
  for (int64_t e = 0; e < matrix.nnz(); ++e) ++old_start[old_row_of[e] + 1];
  for (int64_t r = 0; r < rows; ++r) old_start[r + 1] += old_start[r];
  const int32_t* old_rows = ordering.old_rows.empty() ? nullptr : ordering.old_rows.data();
  const int32_t* new_cols = ordering.cols.empty() ? nullptr : ordering.cols.data();
  std::vector<int64_t> new_start(rows + 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = old_rows ? old_rows[r] : r;
    new_start[r + 1] = new_start[r] + old_start[o + 1] - old_start[o];
  }
  CooTensor out;
  out.dims = matrix.dims;
  out.symmetry = matrix.symmetry;
  out.pattern_only = matrix.pattern_only;
  out.duplicates_summed = matrix.duplicates_summed;
  out.explicit_zeros = matrix.explicit_zeros;
  out.coords.assign(2, std::vector<int32_t>(matrix.nnz()));
  out.values.resize(matrix.nnz());
  int32_t* row_of = out.coords[0].data();
  int32_t* col_of = out.coords[1].data();
  double* value_of = out.values.data();
#pragma omp parallel
  {
    std::vector<uint64_t> keys;
    std::vector<double> scratch;
#pragma omp for schedule(dynamic, 4096)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = old_rows ? old_rows[r] : r;
      const int64_t from = old_start[o], to = old_start[o + 1], at = new_start[r];
      for (int64_t e = from; e < to; ++e) {
        row_of[at + e - from] = static_cast<int32_t>(r);
        col_of[at + e - from] = new_cols ? new_cols[old_col_of[e]] : old_col_of[e];
        value_of[at + e - from] = old_value_of[e];
      }
      if (new_cols) SortRowByColumn(col_of, value_of, at, at + to - from, keys, scratch);
    }
  }
  return out;
}

}  // namespace

CooTensor PermuteMatrix(const CooTensor& matrix, const MatrixOrdering& ordering) {
  if (matrix.order() == 2 && matrix.IsCanonical() &&
      (ordering.rows.empty() || ordering.old_rows.size() == ordering.rows.size()))
    return PermuteCanonicalRows(matrix, ordering);
  CooTensor out = matrix;
  if (!ordering.rows.empty()) {
    for (auto& r : out.coords[0]) r = ordering.rows[r];
  }
  if (!ordering.cols.empty()) {
    for (auto& c : out.coords[1]) c = ordering.cols[c];
  }
  out.Canonicalize();
  return out;
}

}  // namespace sparsetune
