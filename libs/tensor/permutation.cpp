#include "tensor/permutation.hpp"

#include <algorithm>

#include "tensor/level_packer.hpp"

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
    case OrderingKind::kRowDegree:
      return "row-degree";
  }
  return "none";
}

bool ParseOrdering(const std::string& name, OrderingKind* kind) {
  for (OrderingKind k :
       {OrderingKind::kNone, OrderingKind::kRcm, OrderingKind::kDegree, OrderingKind::kPartition,
        OrderingKind::kCommunity, OrderingKind::kRowDegree}) {
    if (name == OrderingName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

bool RenumbersColumns(OrderingKind kind, int64_t rows, int64_t cols) {
  return kind != OrderingKind::kNone && kind != OrderingKind::kRowDegree && rows == cols;
}

const std::vector<OrderingKind>& AllOrderings() {
  static const std::vector<OrderingKind> all = {OrderingKind::kRcm, OrderingKind::kDegree,
                                                OrderingKind::kRowDegree, OrderingKind::kPartition,
                                                OrderingKind::kCommunity};
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

// Rows at least this long are radix sorted: a pass costs 256 counters, about what a comparison
// sort of 64 keys spends (graph500_s19's degree renumbering: 400 ms with comparison sorts above
// 32 entries, 270 ms with this).
constexpr int64_t kRadixSortedRow = 64;

// Rows ahead whose start PermuteCanonicalRows prefetches.
constexpr int64_t kRowsAhead = 8;

// Sorts a long row's (new column << 32 | offset) keys by their column bits, `column_bits` of
// them: a stable LSD radix sort, 8 bits a pass (the offsets are unique and already ascending).
void RadixSortRowKeys(std::vector<uint64_t>& keys, std::vector<uint64_t>& scratch,
                      int column_bits) {
  constexpr int kDigitBits = 8;
  constexpr size_t kBuckets = size_t(1) << kDigitBits;
  scratch.resize(keys.size());
  size_t count[kBuckets];
  for (int shift = 32; shift < 32 + column_bits; shift += kDigitBits) {
    std::fill(count, count + kBuckets, 0);
    for (uint64_t key : keys) ++count[(key >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& c : count) {
      const size_t here = c;
      c = sum;
      sum += here;
    }
    for (uint64_t key : keys) scratch[count[(key >> shift) & (kBuckets - 1)]++] = key;
    keys.swap(scratch);
  }
}

// Writes old entries [from, to) of a row at `at` with their new columns, in column order: the
// (new column, offset) keys are sorted (insertion sort for the short rows that dominate sparse
// matrices, a radix sort for the long rows of hubs), then each entry is written once.
// `old_imag` and `imag` are null for real matrices.
void WriteRowByNewColumn(const int32_t* old_cols, const double* old_values, const double* old_imag,
                         int64_t from, int64_t to, const int32_t* new_cols, int column_bits,
                         int32_t* cols, double* values, double* imag, int64_t at,
                         std::vector<uint64_t>& keys, std::vector<uint64_t>& scratch) {
  const int64_t n = to - from;
  keys.resize(n);
  for (int64_t q = 0; q < n; ++q)
    keys[q] = uint64_t(uint32_t(new_cols[old_cols[from + q]])) << 32 | uint64_t(q);
  if (n <= 32) {
    for (int64_t a = 1; a < n; ++a) {
      const uint64_t key = keys[a];
      int64_t b = a;
      for (; b > 0 && keys[b - 1] > key; --b) keys[b] = keys[b - 1];
      keys[b] = key;
    }
  } else if (n < kRadixSortedRow) {
    std::sort(keys.begin(), keys.end());
  } else {
    RadixSortRowKeys(keys, scratch, column_bits);
  }
  for (int64_t q = 0; q < n; ++q) {
    cols[at + q] = static_cast<int32_t>(keys[q] >> 32);
    values[at + q] = old_values[from + (keys[q] & 0xffffffffu)];
  }
  if (imag) {
    for (int64_t q = 0; q < n; ++q) imag[at + q] = old_imag[from + (keys[q] & 0xffffffffu)];
  }
}

// A canonical matrix's rows moved whole: a row's entries stay together, so only each row's
// renumbered columns need sorting (short for the matrices orderings are for), in parallel.
CooTensor PermuteCanonicalRows(const CooTensor& matrix, const MatrixOrdering& ordering) {
  const int64_t rows = matrix.dims[0];
  const int32_t* old_row_of = matrix.coords[0].data();
  const int32_t* old_col_of = matrix.coords[1].data();
  const double* old_value_of = matrix.values.data();
  const double* old_imag_of = matrix.is_complex() ? matrix.imag.data() : nullptr;
  const int32_t* old_rows = ordering.old_rows.empty() ? nullptr : ordering.old_rows.data();
  const int32_t* new_cols = ordering.cols.empty() ? nullptr : ordering.cols.data();
  const std::vector<int64_t> old_start = packer::RowStarts(rows, matrix.nnz(), old_row_of);
  const std::vector<int64_t> new_start = packer::RenumberedRowStarts(old_start, old_rows);
  int column_bits = 1;
  while (column_bits < 31 && (int64_t(1) << column_bits) < matrix.dims[1]) ++column_bits;
  CooTensor out;
  out.dims = matrix.dims;
  out.symmetry = matrix.symmetry;
  out.pattern_only = matrix.pattern_only;
  out.duplicates_summed = matrix.duplicates_summed;
  out.explicit_zeros = matrix.explicit_zeros;
  out.coords.resize(2);
  // Zero-filled and first touched by both threads: the values on one, the coordinates on the
  // other (a third of a second single-threaded for 20M entries).
#pragma omp parallel sections num_threads(2)
  {
#pragma omp section
    out.values.resize(matrix.nnz());
#pragma omp section
    for (auto& mode : out.coords) mode.resize(matrix.nnz());
  }
  if (old_imag_of) out.imag.resize(matrix.nnz());
  double* imag_of = old_imag_of ? out.imag.data() : nullptr;
  int32_t* row_of = out.coords[0].data();
  int32_t* col_of = out.coords[1].data();
  double* value_of = out.values.data();
#pragma omp parallel
  {
    std::vector<uint64_t> keys, scratch;
#pragma omp for schedule(dynamic, 4096)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = old_rows ? old_rows[r] : r;
      const int64_t from = old_start[o], to = old_start[o + 1], at = new_start[r];
      // Renumbered rows are read in scattered order, where no hardware prefetcher follows:
      // fetch the start of a row a few ahead (its columns and values).
      if (old_rows && r + kRowsAhead < rows) {
        const int64_t ahead = old_start[old_rows[r + kRowsAhead]];
        __builtin_prefetch(old_col_of + ahead);
        __builtin_prefetch(old_value_of + ahead);
        __builtin_prefetch(old_value_of + ahead + 8);
      }
      for (int64_t e = from; e < to; ++e) row_of[at + e - from] = static_cast<int32_t>(r);
      if (new_cols) {
        WriteRowByNewColumn(old_col_of, old_value_of, old_imag_of, from, to, new_cols, column_bits,
                            col_of, value_of, imag_of, at, keys, scratch);
        continue;
      }
      for (int64_t e = from; e < to; ++e) {
        col_of[at + e - from] = old_col_of[e];
        value_of[at + e - from] = old_value_of[e];
        if (imag_of) imag_of[at + e - from] = old_imag_of[e];
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
