#include "tensor/permutation.hpp"

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

CooTensor PermuteMatrix(const CooTensor& matrix, const MatrixOrdering& ordering) {
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
