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

// A canonical matrix's rows moved whole: a row's entries stay together, so only each row's
// renumbered columns need sorting (short for the matrices orderings are for), in parallel.
CooTensor PermuteCanonicalRows(const CooTensor& matrix, const MatrixOrdering& ordering) {
  const int64_t rows = matrix.dims[0];
  const auto& old_rows = matrix.coords[0];
  const auto& old_cols = matrix.coords[1];
  std::vector<int64_t> old_start(rows + 1, 0);
  for (int32_t r : old_rows) ++old_start[r + 1];
  for (int64_t r = 0; r < rows; ++r) old_start[r + 1] += old_start[r];
  auto old_of = [&](int64_t r) -> int64_t {
    return ordering.old_rows.empty() ? r : ordering.old_rows[r];
  };
  std::vector<int64_t> new_start(rows + 1, 0);
  for (int64_t r = 0; r < rows; ++r)
    new_start[r + 1] = new_start[r] + old_start[old_of(r) + 1] - old_start[old_of(r)];
  CooTensor out;
  out.dims = matrix.dims;
  out.symmetry = matrix.symmetry;
  out.pattern_only = matrix.pattern_only;
  out.duplicates_summed = matrix.duplicates_summed;
  out.explicit_zeros = matrix.explicit_zeros;
  out.coords.assign(2, std::vector<int32_t>(matrix.nnz()));
  out.values.resize(matrix.nnz());
#pragma omp parallel
  {
    std::vector<std::pair<int32_t, double>> row;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t from = old_start[old_of(r)], to = old_start[old_of(r) + 1];
      row.clear();
      for (int64_t e = from; e < to; ++e)
        row.emplace_back(ordering.cols.empty() ? old_cols[e] : ordering.cols[old_cols[e]],
                         matrix.values[e]);
      if (!ordering.cols.empty()) std::sort(row.begin(), row.end());
      for (size_t q = 0; q < row.size(); ++q) {
        out.coords[0][new_start[r] + q] = static_cast<int32_t>(r);
        out.coords[1][new_start[r] + q] = row[q].first;
        out.values[new_start[r] + q] = row[q].second;
      }
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
