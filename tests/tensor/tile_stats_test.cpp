// D2T2's tile statistics on a pattern small enough to count by hand.
#include <gtest/gtest.h>

#include "tensor/stats.hpp"
#include "tensor/tile_stats.hpp"

namespace sparsetune {
namespace {

CooTensor Matrix(std::vector<int64_t> dims, std::vector<std::pair<int32_t, int32_t>> entries) {
  CooTensor t;
  t.Reset(dims, static_cast<int64_t>(entries.size()));
  for (auto [r, c] : entries) {
    const int32_t coordinate[2] = {r, c};
    t.Append(coordinate, 1.0);
  }
  t.Canonicalize();
  return t;
}

TEST(TileStats, CountsTilesRowsAndOverlapsAsDefined) {
  // 2 x 2 tiles of a 4 x 4 matrix: tile (0,0) holds (0,0) (0,1) (1,1); tile (1,1) holds (3,2).
  const TileStats s = ComputeTileStats(Matrix({4, 4}, {{0, 0}, {0, 1}, {1, 1}, {3, 2}}), 2);
  EXPECT_EQ(s.nonempty_tiles, 2);
  // Footprint: values + row segment (2) + row coordinates + column segments + column coordinates.
  EXPECT_EQ(s.max_tile, 2 * 3 + 2 * 2 + 3);
  EXPECT_DOUBLE_EQ(s.size_tile, (13.0 + 7.0) / 2);
  EXPECT_DOUBLE_EQ(s.pr_tile_row, 1.0);  // both tile rows hold a tile
  EXPECT_DOUBLE_EQ(s.pr_tile_col, 0.5);  // each holds one of two tile columns
  EXPECT_DOUBLE_EQ(s.prob_row, (2.0 / 2 + 1.0 / 2) / 2);
  EXPECT_NEAR(s.prob_col_given_row, 2.0 / 3, 1e-12);  // rows hold 2, 1 and 1 of 2 columns
  // Row 1 shares one of tile (0,0)'s three entries with row 0 one below; tile (1,1) nothing.
  ASSERT_EQ(s.corrs.size(), 2u);
  EXPECT_DOUBLE_EQ(s.corrs[0], 1.0);
  EXPECT_NEAR(s.corrs[1], (1.0 / 3 + 0.0) / 2, 1e-12);
  EXPECT_NEAR(s.corrs_sum, 1.0 + 1.0 / 6, 1e-12);
  EXPECT_EQ(s.sampled_tiles, 2);
  EXPECT_EQ(s.tile_corrs[0], 2);
  EXPECT_EQ(s.tile_corrs[1], 1);
  EXPECT_EQ(s.tile_corrs[2], 0);
}

TEST(TileStats, BandedPatternsCorrelateAndScatteredOnesDoNot) {
  std::vector<std::pair<int32_t, int32_t>> band, scattered;
  for (int32_t r = 0; r < 256; ++r) {
    for (int32_t d = -2; d <= 2; ++d) {
      if (r + d >= 0 && r + d < 256) band.push_back({r, r + d});
    }
    scattered.push_back({r, (r * 97 + 13) % 256});
  }
  const TileStats b = ComputeTileStats(Matrix({256, 256}, band), 32);
  const TileStats s = ComputeTileStats(Matrix({256, 256}, scattered), 32);
  EXPECT_GT(b.corrs[1], 0.5);
  EXPECT_DOUBLE_EQ(s.corrs[1], 0.0);
  EXPECT_GT(b.corrs_sum, 1.6);  // square tiles, by D2T2's rule of thumb
  EXPECT_LT(s.corrs_sum, 1.6);  // outer-product tiles
  // The statistics come with the pattern's, at both base sizes.
  const PatternStats stats = ComputePatternStats(Matrix({256, 256}, band));
  ASSERT_EQ(stats.tiles.size(), 2u);
  EXPECT_EQ(stats.tiles[0].tile, 32);
  EXPECT_EQ(stats.tiles[1].tile, 128);
  EXPECT_TRUE(PatternStatsToJson(stats)["tiles"][0].contains("corrs_sum"));
}

}  // namespace
}  // namespace sparsetune
