// D2T2's tile statistics (Sharma et al., "A Probabilistic Perspective on Tiling Sparse Tensor
// Algebra"): one pass over the pattern tiled at a base size T x T gives the expected size and
// access probabilities of tiles, and how often neighbouring rows and tile rows overlap. D2T2
// predicts memory traffic from them; here they also describe a pattern to the cost model.
// Tensors of higher order are unfolded: mode 0 against the others, the last mode fastest.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensor/coo.hpp"

namespace sparsetune {

struct TileStats {
  int64_t tile = 0;
  // Footprint of a non-empty tile stored as a CSF of its rows: values, row segment and
  // coordinates, column segments and coordinates. MaxTile and SizeTile (the mean).
  int64_t max_tile = 0;
  double size_tile = 0;
  int64_t nonempty_tiles = 0;
  // PrTileIdx: the share of tile rows that are non-empty, and the mean share of non-empty tile
  // columns in a non-empty tile row.
  double pr_tile_row = 0, pr_tile_col = 0;
  // ProbIndex: the mean share of a tile's rows that are non-empty, and the mean share of a
  // tile's columns that a non-empty row of it holds.
  double prob_row = 0, prob_col_given_row = 0;
  // Corrs(s), s = 0..T-1: over a sample of tiles (every tile up to 200k nonzeros, down to 1% from
  // 10M), the mean share of a row's columns that the row s below it also holds (Corrs(0) = 1).
  // Their sum is D2T2's rule of thumb: under 1.6, outer-product-shaped tiles win.
  std::vector<double> corrs;
  double corrs_sum = 0;
  int64_t sampled_tiles = 0;
  // TileCorrs(s), s = 0..7: tile rows r such that r and r + s are both non-empty.
  std::vector<int64_t> tile_corrs;
};

// Base tile sizes `info --stats` reports and the database stores (ExTensor's 128 and Opal's 32).
constexpr int64_t kTileStatsSizes[2] = {32, 128};

// T must be between 1 and 128.
TileStats ComputeTileStats(const CooTensor& tensor, int64_t tile);
nlohmann::json TileStatsToJson(const TileStats& stats);

}  // namespace sparsetune
