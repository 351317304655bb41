// Randomly scattered patterns: uniform and R-MAT matrices, uniform and power-law tensors.

#include <cmath>
#include <numeric>

#include "tensor/generate.hpp"
#include "tensor/generate_internal.hpp"

namespace sparsetune {

using gen::KeyLayout;
using gen::Rng;

namespace {

constexpr int kMaxOrder = 8;

// Draws beyond which a concentrated distribution (R-MAT, Zipf) stops topping up duplicates.
int64_t MaxSkewedDraws(int64_t nnz) {
  return 20 * nnz + (int64_t(1) << 20);
}

template <typename Draw>
CooTensor DistinctEntries(const std::vector<int64_t>& dims, int64_t nnz, uint64_t seed, Draw draw,
                          int64_t max_draws = INT64_MAX) {
  KeyLayout layout(dims);
  if (!layout.fits) return gen::SampleDistinctWide(dims, nnz, seed, draw, max_draws);
  return gen::TensorFromKeys(layout, gen::SampleDistinctKeys(layout, nnz, seed, draw, max_draws));
}

// Exactly nnz distinct uniform entries; a dense request draws the complement instead, so the
// number of rounds stays small.
CooTensor UniformDistinct(const std::vector<int64_t>& dims, int64_t nnz, uint64_t seed) {
  auto draw = [&dims](Rng& rng, int32_t* c) {
    for (size_t m = 0; m < dims.size(); ++m) c[m] = static_cast<int32_t>(rng.Below(dims[m]));
  };
  KeyLayout layout(dims);
  const int64_t total = gen::Product(dims);
  if (layout.fits && nnz > total / 2) {
    std::vector<uint64_t> excluded = gen::SampleDistinctKeys(layout, total - nnz, seed, draw);
    return gen::TensorFromKeys(layout, gen::ComplementKeys(layout, excluded));
  }
  return DistinctEntries(dims, nnz, seed, draw);
}

void CheckNnz(int64_t nnz, const std::vector<int64_t>& dims) {
  if (nnz <= 0) throw InputError("nnz must be positive (got " + std::to_string(nnz) + ")");
  gen::CheckEntryBudget(double(nnz));
  const int64_t total = gen::Product(dims);
  if (nnz > total) {
    std::string shape;
    for (size_t m = 0; m < dims.size(); ++m) shape += (m ? " x " : "") + std::to_string(dims[m]);
    throw InputError("nnz = " + std::to_string(nnz) + " exceeds the " + std::to_string(total) +
                     " entries of a " + shape + (dims.size() == 2 ? " matrix" : " tensor"));
  }
}

void CheckTensorDims(const std::vector<int64_t>& dims) {
  if (dims.size() < 2 || dims.size() > kMaxOrder) {
    throw InputError("dims must list 2 to " + std::to_string(kMaxOrder) + " sizes (got " +
                     std::to_string(dims.size()) + ")");
  }
  for (int64_t d : dims) gen::CheckDimension(d, "each of dims");
}

// Inverse CDF of the continuous law with density ~ x^-alpha on [1, n + 1): a Zipf-like rank.
class ZipfRank {
 public:
  ZipfRank(int64_t n, double alpha) : n_(n), alpha_(alpha) {
    if (std::fabs(1.0 - alpha) < 1e-9) {
      log_top_ = std::log(double(n) + 1.0);
    } else {
      exponent_ = 1.0 - alpha;
      top_ = std::pow(double(n) + 1.0, exponent_) - 1.0;
    }
  }
  int64_t operator()(Rng& rng) const {
    const double u = rng.Unit();
    const double x =
        exponent_ == 0.0 ? std::exp(u * log_top_) : std::pow(1.0 + u * top_, 1.0 / exponent_);
    const int64_t rank = static_cast<int64_t>(x) - 1;
    return std::min(n_ - 1, std::max<int64_t>(0, rank));
  }

 private:
  int64_t n_;
  double alpha_;
  double exponent_ = 0.0, top_ = 0.0, log_top_ = 0.0;
};

// A random relabelling of [0, n): a stored permutation, or for huge n an affine map with a
// multiplier coprime to n (no memory, still spreads the popular ranks).
class Relabel {
 public:
  Relabel(int64_t n, uint64_t seed, uint64_t index) : n_(n) {
    if (n <= (int64_t(1) << 27)) {
      perm_ = gen::RandomPermutation(n, seed, index);
      return;
    }
    Rng rng(seed, gen::kStreamPermutation, index);
    add_ = rng.Below(n);
    do {
      mul_ = rng.Below(n - 1) + 1;
    } while (std::gcd(mul_, uint64_t(n)) != 1);
  }
  int32_t operator()(int64_t k) const {
    if (!perm_.empty()) return perm_[k];
    return static_cast<int32_t>((static_cast<unsigned __int128>(mul_) * uint64_t(k) + add_) %
                                uint64_t(n_));
  }

 private:
  int64_t n_;
  std::vector<int32_t> perm_;
  uint64_t mul_ = 1, add_ = 0;
};

}  // namespace

CooTensor GenerateUniform(const UniformParams& p) {
  gen::CheckDimension(p.rows, "rows");
  gen::CheckDimension(p.cols, "cols");
  int64_t nnz = p.nnz;
  if (p.nnz != 0 && p.density != 0) throw InputError("give nnz or density, not both");
  if (p.nnz == 0) {
    if (p.density == 0) throw InputError("give nnz or density");
    gen::CheckFraction(p.density, "density");
    nnz = std::max<int64_t>(1, std::llround(p.density * double(p.rows) * double(p.cols)));
  }
  const std::vector<int64_t> dims = {p.rows, p.cols};
  CheckNnz(nnz, dims);
  CooTensor t = UniformDistinct(dims, nnz, p.seed);
  gen::FillValues(t, p.seed, p.pattern);
  return t;
}

CooTensor GeneratePowerLaw(const PowerLawParams& p) {
  gen::CheckDimension(p.rows, "rows");
  gen::CheckDimension(p.cols, "cols");
  const std::vector<int64_t> dims = {p.rows, p.cols};
  CheckNnz(p.nnz, dims);
  const double d = 1.0 - p.a - p.b - p.c;
  if (!(p.a >= 0 && p.b >= 0 && p.c >= 0) || d < -1e-12) {
    throw InputError("R-MAT probabilities a, b, c must be non-negative with a + b + c <= 1 (got " +
                     std::to_string(p.a) + ", " + std::to_string(p.b) + ", " + std::to_string(p.c) +
                     ")");
  }
  // 32-bit thresholds: each level consumes half of a 64-bit random word.
  auto threshold = [](double prob) {
    return static_cast<uint64_t>(std::min(1.0, std::max(0.0, prob)) * 4294967296.0);
  };
  const uint64_t t_a = threshold(p.a), t_ab = threshold(p.a + p.b),
                 t_abc = threshold(p.a + p.b + p.c);
  const uint64_t t_row0 = threshold(p.a + p.b);  // row bit 0 when columns have run out
  const uint64_t t_col0 = threshold(p.a + p.c);  // column bit 0 when rows have run out
  const int row_bits = gen::BitsFor(p.rows), col_bits = gen::BitsFor(p.cols);
  const int levels = std::max(row_bits, col_bits);
  std::vector<int32_t> row_label, col_label;
  if (p.shuffle) {
    row_label = gen::RandomPermutation(p.rows, p.seed, 0);
    col_label = gen::RandomPermutation(p.cols, p.seed, 1);
  }
  const int both = std::min(row_bits, col_bits);
  auto draw = [&](Rng& rng, int32_t* c) {
    uint64_t i, j;
    do {
      i = j = 0;
      uint64_t word = 0;
      int l = 0;
      // Branch-free quadrant choice: the comparisons give the row bit and, by parity, the
      // column bit (quadrants in order a, b, c, d are (0,0), (0,1), (1,0), (1,1)).
      for (; l < both; ++l) {
        if ((l & 1) == 0) word = rng.Next();
        const uint64_t u = (l & 1) ? (word >> 32) : (word & 0xffffffffULL);
        const uint64_t ge_a = u >= t_a, ge_ab = u >= t_ab, ge_abc = u >= t_abc;
        i = (i << 1) | ge_ab;
        j = (j << 1) | (ge_a ^ ge_ab ^ ge_abc);
      }
      for (; l < levels; ++l) {  // only one dimension still has bits: its marginal
        if ((l & 1) == 0) word = rng.Next();
        const uint64_t u = (l & 1) ? (word >> 32) : (word & 0xffffffffULL);
        if (l < row_bits) i = (i << 1) | uint64_t(u >= t_row0);
        if (l < col_bits) j = (j << 1) | uint64_t(u >= t_col0);
      }
    } while (i >= uint64_t(p.rows) || j >= uint64_t(p.cols));
    c[0] = p.shuffle ? row_label[i] : static_cast<int32_t>(i);
    c[1] = p.shuffle ? col_label[j] : static_cast<int32_t>(j);
  };
  CooTensor t = DistinctEntries(dims, p.nnz, p.seed, draw, MaxSkewedDraws(p.nnz));
  gen::FillValues(t, p.seed, p.pattern);
  return t;
}

CooTensor GenerateTensorUniform(const TensorParams& p) {
  CheckTensorDims(p.dims);
  CheckNnz(p.nnz, p.dims);
  CooTensor t = UniformDistinct(p.dims, p.nnz, p.seed);
  gen::FillValues(t, p.seed, p.pattern);
  return t;
}

CooTensor GenerateTensorPowerLaw(const TensorParams& p) {
  CheckTensorDims(p.dims);
  CheckNnz(p.nnz, p.dims);
  if (!(p.alpha >= 0.0 && p.alpha <= 10.0)) {
    throw InputError("alpha must lie in [0, 10] (got " + std::to_string(p.alpha) + ")");
  }
  const int order = static_cast<int>(p.dims.size());
  std::vector<ZipfRank> ranks;
  std::vector<Relabel> labels;
  for (int m = 0; m < order; ++m) {
    ranks.emplace_back(p.dims[m], p.alpha);
    labels.emplace_back(p.dims[m], p.seed, 100 + m);
  }
  auto draw = [&](Rng& rng, int32_t* c) {
    for (int m = 0; m < order; ++m) c[m] = labels[m](ranks[m](rng));
  };
  CooTensor t = DistinctEntries(p.dims, p.nnz, p.seed, draw, MaxSkewedDraws(p.nnz));
  gen::FillValues(t, p.seed, p.pattern);
  return t;
}

}  // namespace sparsetune
