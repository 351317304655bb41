#include "tensor/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "base/errors.hpp"
#include "tensor/sort.hpp"

namespace sparsetune {

namespace {

// Follows the entries, not the declared rows: coordinates are sorted by row, so each row's
// length is a run, and the empty rows between runs are counted without being stored (a file
// declaring 2^31 rows and one entry needs no memory per row).
void ComputeRowStats(const CooTensor& t, PatternStats& s) {
  const int64_t rows = t.dims.empty() ? 0 : t.dims[0];
  if (rows == 0) return;
  const auto& coords = t.coords[0];
  const int64_t n = static_cast<int64_t>(coords.size());
  s.row_mean = double(t.nnz()) / double(rows);
  double sq = 0;
  auto add_row = [&](int64_t len) {
    sq += (len - s.row_mean) * (len - s.row_mean);
    int bucket = 0;
    while (bucket < 62 && (int64_t(1) << bucket) <= len) ++bucket;
    if (bucket >= static_cast<int>(s.row_histogram.size())) s.row_histogram.resize(bucket + 1, 0);
    ++s.row_histogram[bucket];
  };
  const double empty_term = (0 - s.row_mean) * (0 - s.row_mean);
  auto add_empty_rows = [&](int64_t count) {
    if (count <= 0) return;
    s.empty_rows += count;
    if (s.row_histogram.empty()) s.row_histogram.resize(1, 0);
    s.row_histogram[0] += count;
    // One addition per row keeps the sum as it always was; past a million empty rows in a row,
    // one multiplication keeps the time bounded.
    if (count > (int64_t(1) << 20)) {
      sq += double(count) * empty_term;
    } else {
      for (int64_t k = 0; k < count; ++k) sq += empty_term;
    }
  };
  int64_t next_row = 0, e = 0;
  s.row_min = n < rows ? 0 : std::numeric_limits<int64_t>::max();
  s.row_max = 0;
  while (e < n) {
    const int64_t row = coords[e];
    int64_t end = e;
    while (end < n && coords[end] == row) ++end;
    add_empty_rows(row - next_row);
    const int64_t len = end - e;
    s.row_min = std::min(s.row_min, len);
    s.row_max = std::max(s.row_max, len);
    add_row(len);
    next_row = row + 1;
    e = end;
  }
  add_empty_rows(rows - next_row);
  if (s.empty_rows > 0) s.row_min = 0;
  s.row_stddev = std::sqrt(sq / double(rows));
}

void ComputePrefixCounts(const CooTensor& t, PatternStats& s) {
  const int order = t.order();
  s.prefix_nnz.assign(order, 0);
  for (int64_t e = 0; e < t.nnz(); ++e) {
    // The first mode where this entry differs from the previous one starts new prefixes there
    // and at every deeper level.
    int first = 0;
    if (e > 0) {
      while (first < order && t.coords[first][e] == t.coords[first][e - 1]) ++first;
    }
    for (int l = first; l < order; ++l) ++s.prefix_nnz[l];
  }
}

// Returns the number of diagonal entries.
int64_t ComputeDiagonalStats(const CooTensor& t, PatternStats& s) {
  const auto& rows = t.coords[0];
  const auto& cols = t.coords[1];
  const int64_t n = t.nnz();
  int64_t diagonal = 0;
  for (int64_t e = 0; e < n; ++e) {
    const int64_t d = std::llabs(int64_t(rows[e]) - int64_t(cols[e]));
    s.bandwidth = std::max(s.bandwidth, d);
    if (d == 0) ++diagonal;
  }
  s.diagonal_fraction = n ? double(diagonal) / double(n) : 0;
  return diagonal;
}

// Symmetry and aligned blocks.
void ComputeMatrixStats(const CooTensor& t, int64_t diagonal, PatternStats& s) {
  const auto& rows = t.coords[0];
  const auto& cols = t.coords[1];
  const int64_t n = t.nnz();

  if (t.dims[0] == t.dims[1] && n > diagonal) {
    // Entries are sorted by (row, col); sort the transposed keys and merge.
    std::vector<uint64_t> keys(n), transposed(n);
    for (int64_t e = 0; e < n; ++e) {
      keys[e] = (uint64_t(uint32_t(rows[e])) << 32) | uint32_t(cols[e]);
      transposed[e] = (uint64_t(uint32_t(cols[e])) << 32) | uint32_t(rows[e]);
    }
    RadixSort(transposed, 64);
    int64_t matched = 0;
    size_t a = 0, b = 0;
    while (a < keys.size() && b < transposed.size()) {
      if (keys[a] < transposed[b]) {
        ++a;
      } else if (transposed[b] < keys[a]) {
        ++b;
      } else {
        if ((keys[a] >> 32) != (keys[a] & 0xffffffffu)) ++matched;
        ++a;
        ++b;
      }
    }
    s.pattern_symmetry = double(matched) / double(n - diagonal);
  } else if (t.dims[0] == t.dims[1]) {
    s.pattern_symmetry = 1.0;
  }

  // Aligned blocks: entries of one block row are contiguous in canonical order.
  for (int bi = 0; bi < 3; ++bi) {
    const int64_t b = kStatsBlockSizes[bi];
    int64_t in_dense = 0, nonempty_blocks = 0;
    std::vector<int32_t> block_cols;
    int64_t start = 0;
    while (start < n) {
      const int64_t block_row = rows[start] / b;
      int64_t end = start;
      block_cols.clear();
      while (end < n && rows[end] / b == block_row) block_cols.push_back(cols[end++] / b);
      std::sort(block_cols.begin(), block_cols.end());
      const int64_t height = std::min<int64_t>(b, t.dims[0] - block_row * b);
      for (size_t k = 0; k < block_cols.size();) {
        size_t run = k;
        while (run < block_cols.size() && block_cols[run] == block_cols[k]) ++run;
        const int64_t count = int64_t(run - k);
        const int64_t width = std::min<int64_t>(b, t.dims[1] - int64_t(block_cols[k]) * b);
        if (count == height * width) in_dense += count;
        ++nonempty_blocks;
        k = run;
      }
      start = end;
    }
    s.dense_block_fraction[bi] = n ? double(in_dense) / double(n) : 0;
    s.block_fill[bi] = nonempty_blocks ? double(n) / double(nonempty_blocks * b * b) : 0;
  }
}

}  // namespace

PatternStats ComputePatternStats(const CooTensor& t, StatsDetail detail) {
  if (!t.IsCanonical()) throw InternalError("pattern statistics of a non-canonical tensor");
  PatternStats s;
  s.dims = t.dims;
  s.nnz = t.nnz();
  double dense_size = 1;
  for (int64_t d : t.dims) dense_size *= double(d);
  s.density = dense_size > 0 ? double(s.nnz) / dense_size : 0;
  if (t.order() == 0) return s;
  ComputeRowStats(t, s);
  ComputePrefixCounts(t, s);
  const int64_t diagonal = t.order() == 2 ? ComputeDiagonalStats(t, s) : 0;
  if (detail == StatsDetail::kLinear) return s;
  if (t.order() == 2) ComputeMatrixStats(t, diagonal, s);
  for (int64_t tile : kTileStatsSizes) s.tiles.push_back(ComputeTileStats(t, tile));
  return s;
}

nlohmann::json PatternStatsToJson(const PatternStats& s) {
  nlohmann::json j;
  j["dims"] = s.dims;
  j["nnz"] = s.nnz;
  j["density"] = s.density;
  j["prefix_nnz"] = s.prefix_nnz;
  j["row_length"] = {{"min", s.row_min},
                     {"mean", s.row_mean},
                     {"max", s.row_max},
                     {"stddev", s.row_stddev},
                     {"histogram_log2", s.row_histogram}};
  j["empty_rows"] = s.empty_rows;
  if (s.dims.size() == 2) {
    j["bandwidth"] = s.bandwidth;
    j["diagonal_fraction"] = s.diagonal_fraction;
    if (s.dims[0] == s.dims[1]) j["pattern_symmetry"] = s.pattern_symmetry;
    for (int bi = 0; bi < 3; ++bi) {
      const std::string b = std::to_string(kStatsBlockSizes[bi]);
      j["dense_block_fraction_" + b] = s.dense_block_fraction[bi];
      j["block_fill_" + b] = s.block_fill[bi];
    }
  }
  j["tiles"] = nlohmann::json::array();
  for (const TileStats& tile : s.tiles) j["tiles"].push_back(TileStatsToJson(tile));
  return j;
}

double RowGroupPadding(const CooTensor& matrix, int64_t group_rows, int64_t sample_groups) {
  if (matrix.order() != 2 || matrix.nnz() == 0 || group_rows < 1) return 1;
  const auto& row = matrix.coords[0];
  const auto& col = matrix.coords[1];
  const int64_t groups = (matrix.dims[0] + group_rows - 1) / group_rows;
  const int64_t stride = std::max<int64_t>(1, groups / std::max<int64_t>(1, sample_groups));
  int64_t stored = 0, nonzeros = 0;
  std::vector<int32_t> columns;
  for (int64_t g = 0; g < groups; g += stride) {
    const int64_t first_row = g * group_rows;
    const auto lo = std::lower_bound(row.begin(), row.end(), first_row) - row.begin();
    const auto hi =
        std::lower_bound(row.begin() + lo, row.end(), first_row + group_rows) - row.begin();
    columns.assign(col.begin() + lo, col.begin() + hi);
    std::sort(columns.begin(), columns.end());
    stored += (std::unique(columns.begin(), columns.end()) - columns.begin()) * group_rows;
    nonzeros += hi - lo;
  }
  return nonzeros == 0 ? 1 : double(stored) / double(nonzeros);
}

}  // namespace sparsetune
