#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensor/coo.hpp"
#include "tensor/tile_stats.hpp"

namespace sparsetune {

// Pattern statistics of a canonical tensor. For order-2 tensors "rows" are matrix rows; for
// higher orders they are mode-0 slices.
struct PatternStats {
  std::vector<int64_t> dims;
  int64_t nnz = 0;
  double density = 0;
  // Distinct coordinate prefixes per level of the mode order: prefix_nnz[0] = non-empty rows
  // (slices), prefix_nnz[order-1] = nnz. Average fiber length of level l is
  // prefix_nnz[l] / prefix_nnz[l-1].
  std::vector<int64_t> prefix_nnz;
  int64_t row_min = 0, row_max = 0;
  double row_mean = 0, row_stddev = 0;
  int64_t empty_rows = 0;
  // row_histogram[b] counts rows whose length lies in [2^(b-1), 2^b) (b = 0: empty rows).
  std::vector<int64_t> row_histogram;

  // Order 2 only.
  int64_t bandwidth = 0;         // max |i - j|
  double diagonal_fraction = 0;  // share of nonzeros with i == j
  double pattern_symmetry = 0;   // share of off-diagonal (i,j) whose (j,i) is stored; square only
  // Share of nonzeros inside fully dense aligned b x b blocks, and the mean fill of the
  // non-empty aligned blocks, for b = 4, 8, 16.
  double dense_block_fraction[3] = {0, 0, 0};
  double block_fill[3] = {0, 0, 0};

  // D2T2's tile statistics at the base sizes kTileStatsSizes (tensors unfolded).
  std::vector<TileStats> tiles;
};

constexpr int kStatsBlockSizes[3] = {4, 8, 16};

// kLinear computes only what one linear pass over the entries gives: the row (slice) statistics,
// prefix counts, bandwidth and diagonal fraction (the cost model's summary inputs and the
// heuristic's levels), at a fraction of the full cost on large patterns. kFull adds symmetry,
// blocks and tiles.
enum class StatsDetail { kFull, kLinear };

PatternStats ComputePatternStats(const CooTensor& tensor, StatsDetail detail = StatsDetail::kFull);

// What a format that stores `group_rows` consecutive rows over the union of their columns
// (block rows, padded with zeros) holds per nonzero of a canonical matrix: group_rows times the
// union's size over the group's nonzeros, summed over up to `sample_groups` groups spread evenly
// over the rows. 1 when the rows of each group share all their columns, group_rows when they
// share none; 1 for a matrix without nonzeros.
double RowGroupPadding(const CooTensor& matrix, int64_t group_rows, int64_t sample_groups = 4096);
nlohmann::json PatternStatsToJson(const PatternStats& stats);

}  // namespace sparsetune
