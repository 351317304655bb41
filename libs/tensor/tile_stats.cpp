#include "tensor/tile_stats.hpp"

#include <algorithm>
#include <bitset>
#include <numeric>

#include "base/errors.hpp"

namespace sparsetune {

namespace {

constexpr int kTileCorrsShifts = 8;

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

TileStats ComputeTileStats(const CooTensor& t, int64_t tile) {
  if (tile < 1 || tile > 128) throw InternalError("tile statistics: tile size out of range");
  TileStats s;
  s.tile = tile;
  s.corrs.assign(tile, 0.0);
  s.tile_corrs.assign(kTileCorrsShifts, 0);
  if (t.order() == 0 || t.nnz() == 0) return s;
  const int order = t.order();
  const int64_t rows = t.dims[0];
  int64_t cols = 1;
  for (int m = 1; m < order; ++m) cols *= t.dims[m];
  auto column = [&](int64_t e) {
    int64_t c = 0;
    for (int m = 1; m < order; ++m) c = c * t.dims[m] + t.coords[m][e];
    return c;
  };
  const int64_t tile_rows = (rows + tile - 1) / tile;
  const int64_t tile_cols = (cols + tile - 1) / tile;
  // Corrs from every tile of small patterns, down to 1% of them (as D2T2 samples) on large ones.
  const uint64_t sample_rate = static_cast<uint64_t>(std::clamp<int64_t>(t.nnz() / 100000, 1, 100));

  std::vector<char> nonempty_row(tile_rows, 0);
  double size_sum = 0, prob_row_sum = 0, fiber_share_sum = 0, col_share_sum = 0;
  int64_t fibers = 0, nonempty_tile_rows = 0;
  std::vector<double> corrs_sum(tile, 0.0);
  struct Entry {
    int64_t tile_col;
    int32_t row;  // within the tile
    int32_t col;  // within the tile
  };
  std::vector<Entry> entries;
  std::vector<std::bitset<128>> sets(tile);
  std::vector<int32_t> occupied;      // rows of the current tile, ascending
  std::vector<int64_t> shared(tile);  // columns shared by the tile's rows r and r + shift
  const int64_t n = t.nnz();
  for (int64_t begin = 0; begin < n;) {
    const int64_t tile_row = t.coords[0][begin] / tile;
    int64_t end = begin;
    entries.clear();
    while (end < n && t.coords[0][end] / tile == tile_row) {
      const int64_t c = column(end);
      entries.push_back({c / tile, static_cast<int32_t>(t.coords[0][end] % tile),
                         static_cast<int32_t>(c % tile)});
      ++end;
    }
    begin = end;
    // Entries arrive by (row, col); a stable sort by tile column keeps that order inside tiles.
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.tile_col < b.tile_col; });
    nonempty_row[tile_row] = 1;
    ++nonempty_tile_rows;
    int64_t tiles_here = 0;
    for (size_t a = 0; a < entries.size();) {
      size_t b = a;
      while (b < entries.size() && entries[b].tile_col == entries[a].tile_col) ++b;
      const int64_t nnz = static_cast<int64_t>(b - a);
      int64_t rows_here = 0;
      for (size_t e = a; e < b; ++e) {
        if (e == a || entries[e].row != entries[e - 1].row) ++rows_here;
      }
      const int64_t footprint = 2 * nnz + 2 * rows_here + 3;
      s.max_tile = std::max(s.max_tile, footprint);
      size_sum += static_cast<double>(footprint);
      prob_row_sum += static_cast<double>(rows_here) / static_cast<double>(tile);
      fiber_share_sum += static_cast<double>(nnz) / static_cast<double>(tile);
      fibers += rows_here;
      ++tiles_here;
      if (Mix(static_cast<uint64_t>(tile_row) * 0x9e3779b97f4a7c15ULL ^
              static_cast<uint64_t>(entries[a].tile_col)) %
              sample_rate ==
          0) {
        // Only pairs of occupied rows share columns, so the work is quadratic in the tile's
        // occupied rows, not in its size (most tiles of a large sparse pattern hold one row).
        occupied.clear();
        for (size_t e = a; e < b; ++e) {
          if (occupied.empty() || occupied.back() != entries[e].row) {
            occupied.push_back(entries[e].row);
            sets[entries[e].row].reset();
          }
          sets[entries[e].row].set(entries[e].col);
        }
        double held = 0;
        for (int32_t r : occupied) held += static_cast<double>(sets[r].count());
        std::fill(shared.begin(), shared.end(), 0);
        for (size_t x = 0; x < occupied.size(); ++x) {
          for (size_t y = x; y < occupied.size(); ++y)
            shared[occupied[y] - occupied[x]] += (sets[occupied[x]] & sets[occupied[y]]).count();
        }
        for (int64_t shift = 0; shift < tile; ++shift)
          corrs_sum[shift] += static_cast<double>(shared[shift]) / held;
        ++s.sampled_tiles;
      }
      a = b;
    }
    s.nonempty_tiles += tiles_here;
    col_share_sum += static_cast<double>(tiles_here) / static_cast<double>(tile_cols);
  }
  const double tiles = static_cast<double>(s.nonempty_tiles);
  s.size_tile = size_sum / tiles;
  s.pr_tile_row = static_cast<double>(nonempty_tile_rows) / static_cast<double>(tile_rows);
  s.pr_tile_col = col_share_sum / static_cast<double>(nonempty_tile_rows);
  s.prob_row = prob_row_sum / tiles;
  // Each fiber's share of the tile's columns, averaged over fibers.
  s.prob_col_given_row = fibers ? fiber_share_sum / static_cast<double>(fibers) : 0;
  for (int64_t shift = 0; shift < tile; ++shift) {
    s.corrs[shift] = s.sampled_tiles ? corrs_sum[shift] / static_cast<double>(s.sampled_tiles) : 0;
  }
  s.corrs_sum = std::accumulate(s.corrs.begin(), s.corrs.end(), 0.0);
  for (int shift = 0; shift < kTileCorrsShifts; ++shift) {
    for (int64_t r = 0; r + shift < tile_rows; ++r)
      s.tile_corrs[shift] += nonempty_row[r] && nonempty_row[r + shift];
  }
  return s;
}

nlohmann::json TileStatsToJson(const TileStats& s) {
  const size_t shown = std::min<size_t>(s.corrs.size(), 8);
  return {{"tile", s.tile},
          {"max_tile", s.max_tile},
          {"size_tile", s.size_tile},
          {"nonempty_tiles", s.nonempty_tiles},
          {"pr_tile_row", s.pr_tile_row},
          {"pr_tile_col", s.pr_tile_col},
          {"prob_row", s.prob_row},
          {"prob_col_given_row", s.prob_col_given_row},
          {"corrs_first", std::vector<double>(s.corrs.begin(), s.corrs.begin() + shown)},
          {"corrs_sum", s.corrs_sum},
          {"sampled_tiles", s.sampled_tiles},
          {"tile_corrs", s.tile_corrs}};
}

}  // namespace sparsetune
