#include "costmodel/pattern_features.hpp"

#include <algorithm>
#include <cmath>

#include "tensor/sort.hpp"
#include "tensor/stats.hpp"

namespace sparsetune {

namespace {

// Rows and unfolded columns of an entry.
struct Unfolded {
  int64_t rows = 0, cols = 0;
};

Unfolded UnfoldedShape(const CooTensor& t) {
  Unfolded u;
  u.rows = t.dims.empty() ? 1 : t.dims[0];
  u.cols = 1;
  for (size_t m = 1; m < t.dims.size(); ++m) u.cols *= t.dims[m];
  return u;
}

int64_t UnfoldedColumn(const CooTensor& t, int64_t e) {
  int64_t c = 0;
  for (size_t m = 1; m < t.dims.size(); ++m) c = c * t.dims[m] + t.coords[m][e];
  return c;
}

}  // namespace

PatternGrid Featurize(const CooTensor& t, const GridBudget& budget) {
  const Unfolded shape = UnfoldedShape(t);
  const int64_t n = t.nnz();
  std::vector<int64_t> cols(n);
  for (int64_t e = 0; e < n; ++e) cols[e] = UnfoldedColumn(t, e);
  int rs = 0, cs = 0;
  while ((shape.rows >> rs) > budget.max_extent) ++rs;
  while ((shape.cols >> cs) > budget.max_extent) ++cs;
  std::vector<uint64_t> keys;
  auto count_cells = [&] {
    keys.resize(n);
    for (int64_t e = 0; e < n; ++e)
      keys[e] = (uint64_t(int64_t(t.coords[0][e]) >> rs) << 32) | uint64_t(cols[e] >> cs);
    RadixSort(keys, 64);
    return static_cast<int64_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
  };
  int64_t cells = count_cells();
  while (cells > budget.max_sites) {
    ++rs;
    ++cs;
    cells = count_cells();
  }
  // Counts per cell: the keys again, now sorted with repeats.
  keys.resize(n);
  for (int64_t e = 0; e < n; ++e)
    keys[e] = (uint64_t(int64_t(t.coords[0][e]) >> rs) << 32) | uint64_t(cols[e] >> cs);
  RadixSort(keys, 64);
  PatternGrid g;
  g.rows = ((shape.rows - 1) >> rs) + 1;
  g.cols = ((shape.cols - 1) >> cs) + 1;
  g.row_shift = rs;
  g.col_shift = cs;
  for (int64_t e = 0; e < n;) {
    int64_t f = e;
    while (f < n && keys[f] == keys[e]) ++f;
    g.coords.push_back(static_cast<int32_t>(keys[e] >> 32));
    g.coords.push_back(static_cast<int32_t>(keys[e] & 0xffffffffu));
    g.features.push_back(static_cast<float>(std::log2(1.0 + double(f - e))));
    e = f;
  }
  return g;
}

std::vector<float> SideFeatures(const CooTensor& t) {
  const Unfolded shape = UnfoldedShape(t);
  return {float(std::log2(double(std::max<int64_t>(shape.rows, 1)))),
          float(std::log2(double(std::max<int64_t>(shape.cols, 1)))),
          float(std::log2(double(std::max<int64_t>(t.nnz(), 1))))};
}

const char* SideInputsName(SideInputs kind) {
  switch (kind) {
    case SideInputs::kShape:
      return "shape";
    case SideInputs::kSummary:
      return "summary";
    case SideInputs::kSummaryTiles:
      return "summary-tiles";
  }
  return "summary";
}

bool SideInputsFromName(const std::string& name, SideInputs* kind) {
  for (SideInputs k : {SideInputs::kShape, SideInputs::kSummary, SideInputs::kSummaryTiles}) {
    if (name == SideInputsName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

int SideInputCount(SideInputs kind) {
  switch (kind) {
    case SideInputs::kShape:
      return 3;
    case SideInputs::kSummary:
      return kSummaryFeatures;
    case SideInputs::kSummaryTiles:
      return kSummaryFeatures + kTileFeatures;
  }
  return kSummaryFeatures;
}

std::vector<float> SideInputValues(const CooTensor& tensor, SideInputs kind) {
  switch (kind) {
    case SideInputs::kShape:
      return SideFeatures(tensor);
    case SideInputs::kSummary:
      return SummaryFeatures(tensor);
    case SideInputs::kSummaryTiles:
      return SummaryAndTileFeatures(tensor);
  }
  return SummaryFeatures(tensor);
}

namespace {

std::vector<float> SummaryOf(const CooTensor& t, const PatternStats& s) {
  const Unfolded shape = UnfoldedShape(t);
  const double rows = double(std::max<int64_t>(shape.rows, 1));
  const double cols = double(std::max<int64_t>(shape.cols, 1));
  const double nnz = double(std::max<int64_t>(t.nnz(), 1));
  return {float(std::log2(rows)),
          float(std::log2(cols)),
          float(std::log2(nnz)),
          float(std::log2(nnz / rows / cols)),
          float(s.row_mean),
          float(s.row_mean > 0 ? s.row_stddev / s.row_mean : 0),
          float(std::log2(1.0 + double(s.row_max))),
          float(double(s.empty_rows) / rows),
          float(t.order() == 2 ? double(s.bandwidth) / cols : 1.0),
          float(t.order() == 2 ? s.diagonal_fraction : 0.0)};
}

}  // namespace

std::vector<float> SummaryFeatures(const CooTensor& t) {
  return SummaryOf(t, ComputePatternStats(t, StatsDetail::kLinear));
}

std::vector<float> SummaryAndTileFeatures(const CooTensor& t) {
  const PatternStats s = ComputePatternStats(t);
  std::vector<float> out = SummaryOf(t, s);
  const TileStats& tile = s.tiles.front();  // 32 x 32
  out.insert(
      out.end(),
      {float(std::log2(1.0 + double(tile.max_tile))), float(std::log2(1.0 + tile.size_tile)),
       float(tile.pr_tile_row), float(tile.pr_tile_col), float(tile.prob_row),
       float(tile.prob_col_given_row), float(std::log2(std::max(tile.corrs_sum, 1.0))),
       float(double(tile.tile_corrs[1]) / double(std::max<int64_t>(tile.tile_corrs[0], 1)))});
  return out;
}

}  // namespace sparsetune
