#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/coo.hpp"

namespace sparsetune {

// Synthetic sparse matrices and tensors. Every generator is a pure function of its parameters:
// the same parameters and seed give the same canonical tensor whatever the thread count or
// standard library (random bits come from SplitMix64 streams mapped by our own code, never
// std::*_distribution, whose output differs between standard libraries). The generators that
// use exp/log/pow (power-law tensors, dnn, fill fractions below 1/4, offsets of
// diagonal-heavy) also rely on the C math library, which could differ in the last bit on an
// exotic platform. The pattern never depends on `pattern`: values come from their own stream.
//
// Values are uniform in [-1, 1) on a grid of 1e-7 steps, never exactly 0: seven significant
// digits are as many as float32 kernels can use, and they keep the written files compact.
// With `pattern` every value is 1 and the tensor is pattern_only. Stencils have their own
// values (the Laplacian's).
//
// Invalid parameters throw InputError naming the parameter and the cause.

struct GenerateCommon {
  uint64_t seed = 1;
  bool pattern = false;
};

// Exactly nnz distinct entries, uniformly random (nnz = round(density * rows * cols) when
// nnz is 0).
struct UniformParams : GenerateCommon {
  int64_t rows = 0, cols = 0;
  int64_t nnz = 0;
  double density = 0;
};
CooTensor GenerateUniform(const UniformParams& params);

// R-MAT (Chakrabarti et al.): each entry descends the quadrant tree choosing quadrants with
// probabilities a, b, c, d = 1 - a - b - c. Non-power-of-two sizes generate on the next power
// of two per dimension and reject coordinates out of range. Duplicates are redrawn, so nnz is
// met unless the distribution is too concentrated to hold that many distinct entries.
struct PowerLawParams : GenerateCommon {
  int64_t rows = 0, cols = 0;
  int64_t nnz = 0;
  double a = 0.57, b = 0.19, c = 0.19;
  bool shuffle = false;  // relabel rows and columns randomly (hides the locality of R-MAT)
};
CooTensor GeneratePowerLaw(const PowerLawParams& params);

// Graphs: the symmetric adjacency matrix of an undirected graph without self loops, vertices
// relabelled by one random permutation (rows and columns alike), `edges` endpoint pairs drawn
// (duplicates and self loops dropped, so fewer distinct edges remain). Two models:
//  - kGraph500: R-MAT as the Graph500 benchmark specifies it: 2^scale vertices,
//    edge_factor * 2^scale pairs, quadrant probabilities a, b, c (0.57, 0.19, 0.19).
//  - kChungLu: expected degrees following a power law, vertex r of weight (r + 1)^(-1 /
//    (exponent - 1)), each endpoint drawn in proportion to its weight: the heavy-tailed degree
//    distribution of SNAP's social and web graphs (exponent about 2 to 3).
//  - kCommunities: Chung-Lu degrees with planted communities, as in the LFR benchmark: the
//    vertices fall into communities of power-law sizes (exponent community_exponent, between
//    min_community and max_community vertices), and each pair's second endpoint is drawn
//    within the first one's community, by weight, or with probability `mixing` from the whole
//    graph; the weights are shuffled over the vertices, so hubs sit in communities of any size.
//    Crawled and social graphs have this structure; with random labels it is hidden, and an
//    ordering can find it again.
enum class GraphModel { kGraph500, kChungLu, kCommunities };
struct GraphParams : GenerateCommon {
  GraphModel model = GraphModel::kGraph500;
  int64_t vertices = 0;  // Graph500: a power of two
  int64_t edges = 0;     // endpoint pairs drawn
  double a = 0.57, b = 0.19, c = 0.19;
  double exponent = 2.1;
  double mixing = 0.2;
  int64_t min_community = 16, max_community = 4096;
  double community_exponent = 1.5;
};
CooTensor GenerateGraph(const GraphParams& params);

// Entries with |j - d(i)| <= bandwidth, d(i) = floor(i * cols / rows) (the diagonal, scaled
// for rectangular matrices), each kept with probability fill.
struct BandedParams : GenerateCommon {
  int64_t rows = 0, cols = 0;
  int64_t bandwidth = 0;
  double fill = 1.0;
};
CooTensor GenerateBanded(const BandedParams& params);

// Distinct random block positions on the grid of block x block tiles (aligned), each tile
// holding exactly round(fill * cells) entries (at least one) at random cells. nblocks, or
// when it is 0, as many blocks as nnz needs.
struct BlockedParams : GenerateCommon {
  int64_t rows = 0, cols = 0;
  int64_t block = 0;
  int64_t nblocks = 0;
  int64_t nnz = 0;
  double fill = 1.0;
};
CooTensor GenerateBlocked(const BlockedParams& params);

// 5-point (2-D) and 7-point (3-D) Laplacians on nx x ny (x nz) grids, point (x, y, z) at row
// x + nx * (y + ny * z): 4 (6) on the diagonal, -1 for each neighbour.
struct StencilParams : GenerateCommon {
  int64_t nx = 0, ny = 0, nz = 1;
};
CooTensor GenerateStencil2d(const StencilParams& params);
CooTensor GenerateStencil3d(const StencilParams& params);

// Square, nnz entries: the full main diagonal, `offdiagonals` further diagonals at random
// offsets (mostly near the main one) and uniformly scattered entries. diag_fraction is the
// share of nnz on diagonals (main and off); the main diagonal is always full, so the share is
// at least rows / nnz.
struct DiagonalHeavyParams : GenerateCommon {
  int64_t rows = 0;
  int64_t nnz = 0;
  double diag_fraction = 0.5;
  int offdiagonals = 4;
};
CooTensor GenerateDiagonalHeavy(const DiagonalHeavyParams& params);

// Pruned-network-like weights (rows = output features, cols = input features). Magnitude
// pruning of trained layers keeps more weights in some output rows and some input columns
// than in others, so each row and column gets a log-normal importance (sigma row_variation,
// col_variation) and unit (i, j) survives with probability min(1, lambda * r_i * c_j), lambda
// set so the expected density is `density`. Units are single weights (unstructured), 1 x block
// runs along a row (row-block), block x 1 runs down a column (column-block), block x block
// tiles (block), or for nm exactly n of every m consecutive weights in a row (density n/m).
enum class DnnStructure { kUnstructured, kRowBlock, kColumnBlock, kBlock, kNM };
struct DnnParams : GenerateCommon {
  int64_t rows = 0, cols = 0;
  double density = 0;
  DnnStructure structure = DnnStructure::kUnstructured;
  int64_t block = 4;
  int n = 2, m = 4;
  double row_variation = 0.5;
  double col_variation = 0.5;
};
CooTensor GenerateDnn(const DnnParams& params);
DnnStructure ParseDnnStructure(const std::string& text);

// Scales a matrix's pattern to rows x cols keeping its structure (WACO's augmentation of
// SuiteSparse). Source entry (i, j) owns the target region of rows [i*R/r, (i+1)*R/r) and
// columns [j*C/c, (j+1)*C/c) (floors, at least one row and column). When shrinking a region is
// one cell, so entries merge. When growing, the entry becomes the region's scaled diagonal:
// L = max(height, width) cells (top + t*height/L, left + t*width/L), t < L. A diagonal stays a
// diagonal, a band of width w becomes one of width w*R/r, a block covers the scaled block
// (every row and column of it, with 1/factor of its cells), and nnz grows with the linear
// factor, not its square. Values are fresh random values (the source's are not kept).
struct ResizeParams : GenerateCommon {
  int64_t rows = 0, cols = 0;
};
CooTensor ResizeMatrix(const CooTensor& source, const ResizeParams& params);

// Higher-order tensors (order 2 to 8; named for the common third-order case).
// Uniform: exactly nnz distinct uniformly random entries.
// Power law: every mode's index follows a Zipf-like law P(rank r) ~ r^-alpha (continuous
// approximation, ranks from 1) over a random relabelling of the indices, so slice sizes and
// fiber lengths are skewed (a few large slices and long fibers, many short ones), as in real
// count tensors. Duplicates are redrawn.
struct TensorParams : GenerateCommon {
  std::vector<int64_t> dims;
  int64_t nnz = 0;
  double alpha = 0.8;
};
CooTensor GenerateTensorUniform(const TensorParams& params);
CooTensor GenerateTensorPowerLaw(const TensorParams& params);

// A count: a non-negative integer with an optional decimal suffix k, M, G (or T): "10M",
// "2k", "1.5M". Throws InputError naming `what` when the text is not such a count.
int64_t ParseCount(const std::string& text, const std::string& what);
// Counts separated by commas or x: "100,2k,3M", "100x200x300".
std::vector<int64_t> ParseCountList(const std::string& text, const std::string& what);

}  // namespace sparsetune
