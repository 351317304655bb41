// Pruned-network-like weight matrices.

#include <cmath>
#include <numeric>

#include "tensor/generate.hpp"
#include "tensor/generate_internal.hpp"

namespace sparsetune {

using gen::Part;
using gen::Rng;

namespace {

// Importance of each row or column: log-normal with mean 1, capped at kMaxImportance so the
// thinning sampler below never wastes more than that factor of draws.
constexpr double kMaxImportance = 4.0;

std::vector<double> Importance(int64_t n, double sigma, uint64_t seed, uint64_t stream) {
  std::vector<double> w(n, 1.0);
  if (sigma <= 0) return w;
  for (int64_t k = 0; k < n; ++k) {
    Rng rng(seed, stream, k);
    w[k] = std::exp(sigma * rng.Normal());
  }
  const double mean = std::accumulate(w.begin(), w.end(), 0.0) / double(n);
  for (double& v : w) v = std::min(kMaxImportance, v / mean);
  return w;
}

// lambda with sum_ij min(1, lambda * r_i * c_j) = target: bisection on a monotone sum, each
// evaluation O(rows log cols) through prefix sums of the sorted column importances.
double SolveScale(const std::vector<double>& r, std::vector<double> c, double target) {
  std::sort(c.begin(), c.end());
  std::vector<double> prefix(c.size() + 1, 0.0);
  for (size_t k = 0; k < c.size(); ++k) prefix[k + 1] = prefix[k] + c[k];
  auto expected = [&](double lambda) {
    double sum = 0;
    for (double ri : r) {
      const double a = lambda * ri;
      // Columns with a * c_j >= 1 are certain.
      const size_t saturated = std::lower_bound(c.begin(), c.end(), 1.0 / a) - c.begin();
      sum += a * prefix[saturated] + double(c.size() - saturated);
    }
    return sum;
  };
  double lo = 0, hi = 1;
  while (expected(hi) < target && hi < 1e300) hi *= 2;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (expected(mid) < target ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

DnnStructure ParseDnnStructure(const std::string& text) {
  if (text == "unstructured") return DnnStructure::kUnstructured;
  if (text == "row-block") return DnnStructure::kRowBlock;
  if (text == "column-block") return DnnStructure::kColumnBlock;
  if (text == "block") return DnnStructure::kBlock;
  if (text == "nm") return DnnStructure::kNM;
  throw InputError("unknown structure '" + text +
                   "' (one of unstructured, row-block, column-block, block, nm)");
}

CooTensor GenerateDnn(const DnnParams& p) {
  gen::CheckDimension(p.rows, "rows");
  gen::CheckDimension(p.cols, "cols");
  if (!(p.row_variation >= 0 && p.row_variation <= 4 && p.col_variation >= 0 &&
        p.col_variation <= 4)) {
    throw InputError("row and column variation must lie in [0, 4]");
  }

  if (p.structure == DnnStructure::kNM) {
    if (p.n < 1 || p.m < p.n || p.m > 64) {
      throw InputError("N:M needs 1 <= N <= M <= 64 (got " + std::to_string(p.n) + ":" +
                       std::to_string(p.m) + ")");
    }
    if (p.density != 0 && std::fabs(p.density - double(p.n) / p.m) > 1e-9) {
      throw InputError("an N:M pattern has density N/M = " + std::to_string(double(p.n) / p.m) +
                       "; leave density out or make it match");
    }
    // Each group of M consecutive weights in a row keeps exactly N (a shorter last group keeps
    // its share, at least one).
    CooTensor t = gen::BuildByUnits(
        p.rows, p.cols, p.rows, 1024, [&](int64_t begin, int64_t end, Part& part) {
          for (int64_t i = begin; i < end; ++i) {
            Rng rng(p.seed, gen::kStreamPattern, i);
            for (int64_t g = 0; g < p.cols; g += p.m) {
              const int64_t len = std::min<int64_t>(p.m, p.cols - g);
              const int64_t keep =
                  len == p.m ? p.n : std::max<int64_t>(1, (int64_t(p.n) * len + p.m / 2) / p.m);
              gen::SelectSorted(rng, len, keep, [&](int64_t k) { part.Add(i, g + k); });
            }
          }
        });
    gen::FillValues(t, p.seed, p.pattern);
    return t;
  }

  gen::CheckFraction(p.density, "density");
  gen::CheckEntryBudget(double(p.rows) * double(p.cols) * p.density);
  int64_t unit_rows = 1, unit_cols = 1;
  if (p.structure != DnnStructure::kUnstructured) {
    if (p.block < 1 || p.block > 4096) {
      throw InputError("block must lie in [1, 4096] (got " + std::to_string(p.block) + ")");
    }
    if (p.structure != DnnStructure::kColumnBlock) unit_cols = p.block;
    if (p.structure != DnnStructure::kRowBlock) unit_rows = p.block;
  }
  // Pruning decisions are made per unit on the coarse grid, then each kept unit is expanded.
  const int64_t grid_rows = (p.rows + unit_rows - 1) / unit_rows;
  const int64_t grid_cols = (p.cols + unit_cols - 1) / unit_cols;
  const std::vector<double> r =
      Importance(grid_rows, p.row_variation, p.seed, gen::kStreamRowImportance);
  const std::vector<double> c =
      Importance(grid_cols, p.col_variation, p.seed, gen::kStreamColImportance);
  const double target = p.density * double(grid_rows) * double(grid_cols);
  const double lambda = p.density >= 1.0 ? 1e300 : SolveScale(r, c, target);
  const double c_max = *std::max_element(c.begin(), c.end());

  const int64_t grid_rows_per_chunk = std::max<int64_t>(1, 1024 / unit_rows);
  CooTensor t = gen::BuildByUnits(
      p.rows, p.cols, grid_rows, grid_rows_per_chunk, [&](int64_t begin, int64_t end, Part& part) {
        std::vector<int64_t> kept;
        for (int64_t gi = begin; gi < end; ++gi) {
          // Thinning: candidates at the row's highest probability, each accepted with its own
          // probability over that bound.
          const double bound = std::min(1.0, lambda * r[gi] * c_max);
          Rng rng(p.seed, gen::kStreamPattern, gi);
          kept.clear();
          gen::BernoulliRange(rng, 0, grid_cols, bound, [&](int64_t gj) {
            const double prob = std::min(1.0, lambda * r[gi] * c[gj]);
            if (prob >= bound || rng.Unit() * bound < prob) kept.push_back(gj);
          });
          const int64_t row0 = gi * unit_rows, row1 = std::min(p.rows, row0 + unit_rows);
          for (int64_t i = row0; i < row1; ++i) {
            for (int64_t gj : kept) {
              const int64_t col0 = gj * unit_cols, col1 = std::min(p.cols, col0 + unit_cols);
              for (int64_t j = col0; j < col1; ++j) part.Add(i, j);
            }
          }
        }
      });
  gen::FillValues(t, p.seed, p.pattern);
  return t;
}

}  // namespace sparsetune
