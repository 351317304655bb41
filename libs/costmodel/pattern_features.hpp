// What the cost model sees of a sparsity pattern, in plain C++ (no LibTorch): the sites of a
// 2-D grid for WACONet, the three side inputs, and the summary numbers of the comparison model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/coo.hpp"

namespace sparsetune {

// The pattern as active sites of a 2-D grid. A matrix maps (i, j) to its cell; a tensor of
// higher order is unfolded first (mode 0 against the others, last mode fastest). Patterns
// larger than the budget are coarsened: rows and columns are pooled by powers of two until
// the grid is at most `max_extent` on a side and holds at most `max_sites` active cells, and
// each cell's feature is log2(1 + the entries it pools); an unpooled entry has feature 1, as
// WACO's constant input.
struct PatternGrid {
  int64_t rows = 0, cols = 0;
  int row_shift = 0, col_shift = 0;
  std::vector<int32_t> coords;  // row, col per site
  std::vector<float> features;  // one per site
  int64_t sites() const { return static_cast<int64_t>(features.size()); }
};

struct GridBudget {
  int64_t max_sites = int64_t(1) << 17;
  int64_t max_extent = int64_t(1) << 14;
};

PatternGrid Featurize(const CooTensor& tensor, const GridBudget& budget = {});

// WACONet's side inputs: log2 of rows, columns (the unfolded ones for tensors) and entries.
std::vector<float> SideFeatures(const CooTensor& tensor);

// WACO's "HumanFeature" comparison, widened with row statistics: log2 rows, cols, nnz and
// density, mean, relative spread and log2 maximum of the row lengths, share of empty rows,
// bandwidth over columns, share on the diagonal.
std::vector<float> SummaryFeatures(const CooTensor& tensor);
constexpr int kSummaryFeatures = 10;

// The summary features followed by D2T2's tile statistics at 32 x 32 tiles: log2 MaxTile and
// SizeTile, PrTileIdx of rows and columns, ProbIndex of rows and of columns given a row,
// log2 of the sum of Corrs, and TileCorrs(1) over TileCorrs(0).
std::vector<float> SummaryAndTileFeatures(const CooTensor& tensor);
constexpr int kTileFeatures = 8;

// What WACONet's side network sees beside the pattern: WACO's three shape numbers
// (SideFeatures), the summary statistics (SummaryFeatures, which begin with the same three), or
// those and D2T2's tile statistics (SummaryAndTileFeatures), so that the pattern network adds
// to what the summary models know instead of competing with them.
enum class SideInputs { kShape, kSummary, kSummaryTiles };
const char* SideInputsName(SideInputs kind);  // "shape", "summary", "summary-tiles"
// The kind a name gives; false for an unknown name.
bool SideInputsFromName(const std::string& name, SideInputs* kind);
int SideInputCount(SideInputs kind);
std::vector<float> SideInputValues(const CooTensor& tensor, SideInputs kind);

}  // namespace sparsetune
