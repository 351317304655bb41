// Structured matrices: banded, blocked, stencil Laplacians, diagonal-heavy.

#include <cmath>

#include "tensor/generate.hpp"
#include "tensor/generate_internal.hpp"

namespace sparsetune {

using gen::KeyLayout;
using gen::Part;
using gen::Rng;

namespace {

// Rows handed to one parallel task: large enough to amortize the part's bookkeeping.
constexpr int64_t kRowsPerChunk = 4096;

CooTensor Stencil(int64_t nx, int64_t ny, int64_t nz, int dimensions, const GenerateCommon& p) {
  gen::CheckDimension(nx, "nx");
  gen::CheckDimension(ny, "ny");
  gen::CheckDimension(nz, "nz");
  const int64_t plane = nx * ny;
  gen::CheckEntryBudget(double(nx) * double(ny) * double(nz) * (2 * dimensions + 1));
  if (plane > kMaxDimension || plane * nz > kMaxDimension) {
    throw InputError("the grid has " + std::to_string(nx) + " x " + std::to_string(ny) + " x " +
                     std::to_string(nz) + " points, more than the largest dimension 2147483647");
  }
  const int64_t n = plane * nz;
  CooTensor t =
      gen::BuildByUnits(n, n, n, kRowsPerChunk, [&](int64_t begin, int64_t end, Part& part) {
        part.rows.reserve((end - begin) * (2 * dimensions + 1));
        part.cols.reserve((end - begin) * (2 * dimensions + 1));
        for (int64_t r = begin; r < end; ++r) {
          const int64_t x = r % nx, y = (r / nx) % ny, z = r / plane;
          // Neighbours in increasing column order keep the output canonical.
          if (z > 0) part.Add(r, r - plane);
          if (y > 0) part.Add(r, r - nx);
          if (x > 0) part.Add(r, r - 1);
          part.Add(r, r);
          if (x + 1 < nx) part.Add(r, r + 1);
          if (y + 1 < ny) part.Add(r, r + nx);
          if (z + 1 < nz) part.Add(r, r + plane);
        }
      });
  const int64_t entries = t.coords[0].size();
  t.values.resize(entries);
  t.pattern_only = p.pattern;
  const double diagonal = 2.0 * dimensions;
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < entries; ++e) {
    t.values[e] = p.pattern ? 1.0 : (t.coords[0][e] == t.coords[1][e] ? diagonal : -1.0);
  }
  return t;
}

}  // namespace

CooTensor GenerateBanded(const BandedParams& p) {
  gen::CheckDimension(p.rows, "rows");
  gen::CheckDimension(p.cols, "cols");
  if (p.bandwidth < 0) {
    throw InputError("bandwidth must be at least 0 (got " + std::to_string(p.bandwidth) + ")");
  }
  gen::CheckFraction(p.fill, "fill");
  const int64_t w = std::min(p.bandwidth, std::max(p.rows, p.cols));
  gen::CheckEntryBudget(double(p.rows) * double(std::min(2 * w + 1, p.cols)) * p.fill);
  CooTensor t = gen::BuildByUnits(
      p.rows, p.cols, p.rows, kRowsPerChunk, [&](int64_t begin, int64_t end, Part& part) {
        const int64_t expected = std::llround((end - begin) * std::min(2 * w + 1, p.cols) * p.fill);
        part.rows.reserve(expected + 16);
        part.cols.reserve(expected + 16);
        for (int64_t i = begin; i < end; ++i) {
          const int64_t center = i * p.cols / p.rows;
          const int64_t lo = std::max<int64_t>(0, center - w);
          const int64_t hi = std::min<int64_t>(p.cols, center + w + 1);
          Rng rng(p.seed, gen::kStreamPattern, i);
          gen::BernoulliRange(rng, lo, hi, p.fill, [&](int64_t j) { part.Add(i, j); });
        }
      });
  gen::FillValues(t, p.seed, p.pattern);
  return t;
}

CooTensor GenerateBlocked(const BlockedParams& p) {
  gen::CheckDimension(p.rows, "rows");
  gen::CheckDimension(p.cols, "cols");
  if (p.block < 1 || p.block > 4096) {
    throw InputError("block must lie in [1, 4096] (got " + std::to_string(p.block) + ")");
  }
  gen::CheckFraction(p.fill, "block fill");
  if (p.nblocks < 0 || p.nnz < 0) throw InputError("nblocks and nnz must not be negative");
  if (p.nblocks != 0 && p.nnz != 0) throw InputError("give nblocks or nnz, not both");
  if (p.nblocks == 0 && p.nnz == 0) throw InputError("give nblocks or nnz");
  const int64_t b = p.block;
  const int64_t grid_rows = (p.rows + b - 1) / b, grid_cols = (p.cols + b - 1) / b;
  const int64_t grid = gen::Product({grid_rows, grid_cols});
  const int64_t per_block = std::max<int64_t>(1, std::llround(p.fill * double(b * b)));
  const int64_t nblocks = p.nblocks ? p.nblocks : (p.nnz + per_block - 1) / per_block;
  gen::CheckEntryBudget(double(nblocks) * double(per_block));
  if (nblocks > grid) {
    throw InputError(std::to_string(nblocks) + " blocks of " + std::to_string(b) + " x " +
                     std::to_string(b) + " do not fit: the " + std::to_string(p.rows) + " x " +
                     std::to_string(p.cols) + " matrix holds " + std::to_string(grid));
  }
  // Block positions: distinct, uniform over the grid (the uniform generator's sampler).
  UniformParams positions_params;
  positions_params.rows = grid_rows;
  positions_params.cols = grid_cols;
  positions_params.nnz = nblocks;
  positions_params.seed = p.seed;
  positions_params.pattern = true;
  const CooTensor positions = GenerateUniform(positions_params);
  const auto& block_row = positions.coords[0];
  const auto& block_col = positions.coords[1];
  // First position of each block row.
  std::vector<int64_t> row_start(grid_rows + 1, 0);
  for (int32_t bi : block_row) ++row_start[bi + 1];
  for (int64_t bi = 0; bi < grid_rows; ++bi) row_start[bi + 1] += row_start[bi];

  const int64_t block_rows_per_chunk = std::max<int64_t>(1, kRowsPerChunk / b);
  CooTensor t = gen::BuildByUnits(
      p.rows, p.cols, grid_rows, block_rows_per_chunk, [&](int64_t begin, int64_t end, Part& part) {
        std::vector<int32_t> cells;  // selected cells (r * width + c) of this block row's blocks
        std::vector<int64_t> start, cursor;
        for (int64_t bi = begin; bi < end; ++bi) {
          const int64_t q0 = row_start[bi], q1 = row_start[bi + 1];
          if (q0 == q1) continue;
          const int64_t height = std::min(b, p.rows - bi * b);
          cells.clear();
          start.assign(1, 0);
          for (int64_t q = q0; q < q1; ++q) {
            const int64_t width = std::min(b, p.cols - int64_t(block_col[q]) * b);
            const int64_t n = height * width;
            const int64_t take =
                n == b * b ? per_block : std::max<int64_t>(1, std::llround(p.fill * double(n)));
            if (take >= n) {
              for (int64_t k = 0; k < n; ++k) cells.push_back(static_cast<int32_t>(k));
            } else {
              Rng rng(p.seed, gen::kStreamLayout, uint64_t(bi) * grid_cols + block_col[q]);
              gen::SelectSorted(rng, n, take,
                                [&](int64_t k) { cells.push_back(static_cast<int32_t>(k)); });
            }
            start.push_back(static_cast<int64_t>(cells.size()));
          }
          // Emit row by row across the block row's blocks so the output stays canonical.
          cursor.assign(start.begin(), start.end() - 1);
          for (int64_t r = 0; r < height; ++r) {
            for (int64_t q = q0; q < q1; ++q) {
              const int64_t col0 = int64_t(block_col[q]) * b;
              const int64_t width = std::min(b, p.cols - col0);
              int64_t& c = cursor[q - q0];
              for (; c < start[q - q0 + 1] && cells[c] / width == r; ++c) {
                part.Add(bi * b + r, col0 + cells[c] % width);
              }
            }
          }
        }
      });
  gen::FillValues(t, p.seed, p.pattern);
  return t;
}

CooTensor GenerateStencil2d(const StencilParams& p) {
  if (p.nz != 1) throw InputError("a 2-D stencil has no nz");
  return Stencil(p.nx, p.ny, 1, 2, p);
}

CooTensor GenerateStencil3d(const StencilParams& p) {
  return Stencil(p.nx, p.ny, p.nz, 3, p);
}

CooTensor GenerateDiagonalHeavy(const DiagonalHeavyParams& p) {
  gen::CheckDimension(p.rows, "rows");
  const int64_t n = p.rows;
  if (p.nnz < n) {
    throw InputError("nnz = " + std::to_string(p.nnz) + " is less than rows = " +
                     std::to_string(n) + ": the full main diagonal alone needs rows entries");
  }
  gen::CheckEntryBudget(double(p.nnz));
  if (p.nnz > n * n) {
    throw InputError("nnz = " + std::to_string(p.nnz) + " exceeds the " + std::to_string(n * n) +
                     " entries of the matrix");
  }
  gen::CheckFraction(p.diag_fraction, "diag fraction");
  if (p.offdiagonals < 0 || p.offdiagonals > 2 * (n - 1)) {
    throw InputError("offdiagonals must lie in [0, " + std::to_string(2 * (n - 1)) + "] (got " +
                     std::to_string(p.offdiagonals) + ")");
  }
  // Off-diagonal offsets, log-uniform in magnitude: most lie near the main diagonal, as in
  // coupled or multi-component discretizations, a few far away.
  Rng layout_rng(p.seed, gen::kStreamLayout);
  std::vector<int64_t> offsets;
  while (int64_t(offsets.size()) < p.offdiagonals) {
    int64_t magnitude;
    if (offsets.size() * 2 < size_t(n - 1)) {
      magnitude = static_cast<int64_t>(std::exp(layout_rng.Unit() * std::log(double(n))));
    } else {  // nearly every offset is wanted: log-uniform would mostly repeat
      magnitude = static_cast<int64_t>(layout_rng.Below(n - 1)) + 1;
    }
    magnitude = std::min(n - 1, std::max<int64_t>(1, magnitude));
    const int64_t offset = (layout_rng.Next() & 1) ? magnitude : -magnitude;
    if (std::find(offsets.begin(), offsets.end(), offset) == offsets.end()) {
      offsets.push_back(offset);
    }
  }
  std::sort(offsets.begin(), offsets.end());
  int64_t capacity = 0;
  for (int64_t o : offsets) capacity += n - std::abs(o);
  const int64_t free_cells = n * n - n - capacity;
  // Entries on off-diagonals: the share asked for, and more when the rest cannot fit outside.
  int64_t extra = std::llround(double(p.nnz) * p.diag_fraction) - n;
  extra = std::max(extra, p.nnz - n - free_cells);
  extra = std::min(std::max<int64_t>(extra, 0), std::min(capacity, p.nnz - n));
  const int64_t scattered = p.nnz - n - extra;

  KeyLayout layout({n, n});
  std::vector<uint64_t> diagonal_keys;
  diagonal_keys.reserve(n + extra);
  int32_t c[2];
  for (int64_t i = 0; i < n; ++i) {
    c[0] = c[1] = static_cast<int32_t>(i);
    diagonal_keys.push_back(layout.Pack(c));
  }
  // Exactly `extra` positions among all off-diagonal cells, in order.
  {
    Rng rng(p.seed, gen::kStreamLayout, 1);
    size_t d = 0;
    int64_t base = 0;  // linear position of offsets[d]'s first cell
    gen::SelectSorted(rng, capacity, extra, [&](int64_t k) {
      while (k >= base + n - std::abs(offsets[d])) base += n - std::abs(offsets[d++]);
      const int64_t o = offsets[d];
      const int64_t i = std::max<int64_t>(0, -o) + (k - base);
      c[0] = static_cast<int32_t>(i);
      c[1] = static_cast<int32_t>(i + o);
      diagonal_keys.push_back(layout.Pack(c));
    });
  }
  gen::RadixSortUnique(diagonal_keys, layout.bits);

  std::vector<int64_t> excluded = offsets;
  excluded.push_back(0);
  std::sort(excluded.begin(), excluded.end());
  auto draw = [&](Rng& rng, int32_t* out) {
    int64_t i, j;
    do {
      i = static_cast<int64_t>(rng.Below(n));
      j = static_cast<int64_t>(rng.Below(n));
    } while (std::binary_search(excluded.begin(), excluded.end(), j - i));
    out[0] = static_cast<int32_t>(i);
    out[1] = static_cast<int32_t>(j);
  };
  std::vector<uint64_t> keys;
  if (scattered > 0) {
    const std::vector<uint64_t> scatter_keys =
        gen::SampleDistinctKeys(layout, scattered, p.seed, draw);
    keys.reserve(diagonal_keys.size() + scatter_keys.size());
    std::merge(diagonal_keys.begin(), diagonal_keys.end(), scatter_keys.begin(), scatter_keys.end(),
               std::back_inserter(keys));
  } else {
    keys = std::move(diagonal_keys);
  }
  CooTensor t = gen::TensorFromKeys(layout, keys);
  gen::FillValues(t, p.seed, p.pattern);
  return t;
}

}  // namespace sparsetune
