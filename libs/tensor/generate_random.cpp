// Randomly scattered patterns: uniform and R-MAT matrices, uniform and power-law tensors.

#include <algorithm>
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

namespace {

void CheckCommunities(const GraphParams& p) {
  if (!(p.mixing >= 0.0 && p.mixing <= 1.0))
    throw InputError("the mixing fraction must be in [0, 1] (got " + std::to_string(p.mixing) +
                     ")");
  if (p.min_community < 2 || p.max_community < p.min_community)
    throw InputError("community sizes need 2 <= min-community <= max-community (got " +
                     std::to_string(p.min_community) + " and " + std::to_string(p.max_community) +
                     ")");
  if (p.min_community > p.vertices)
    throw InputError("min-community " + std::to_string(p.min_community) + " exceeds the " +
                     std::to_string(p.vertices) + " vertices");
  if (!(p.community_exponent >= 1.0 && p.community_exponent <= 10.0))
    throw InputError("the community size exponent must be in [1, 10] (got " +
                     std::to_string(p.community_exponent) + ")");
}

// Chung-Lu's weight of the vertex of rank r (0 the heaviest).
double RankWeight(int64_t r, double exponent) {
  return std::pow(double(r + 1), -1.0 / (exponent - 1.0));
}

// Plants the communities: sizes drawn from the power law of exponent community_exponent
// truncated to [min_community, max_community] (by inverting its distribution; log-uniform at
// exponent 1) until the vertices are used up, a remainder too small for a community of its own
// joining the last one. Then, as LFR does, each vertex goes to a random community with room
// for its expected internal degree (twice it, so that few pairs repeat; capped at the largest
// community), the heaviest first. Returns the weight rank of each vertex, the vertices of a
// community numbered together; `start` gets the first vertex of each community and, last, the
// vertex count.
std::vector<int64_t> PlantCommunities(const GraphParams& p, std::vector<int64_t>* start) {
  Rng rng(p.seed, gen::kStreamLayout);
  const double lo = double(p.min_community), hi = double(std::min(p.max_community, p.vertices));
  const double t = 1.0 - p.community_exponent;
  auto draw_size = [&]() -> int64_t {
    const double u = rng.Unit();
    const double size =
        t == 0.0 ? lo * std::pow(hi / lo, u)
                 : std::pow(std::pow(lo, t) + u * (std::pow(hi, t) - std::pow(lo, t)), 1.0 / t);
    return std::clamp<int64_t>(static_cast<int64_t>(size), p.min_community, int64_t(hi));
  };
  std::vector<int64_t> size;
  for (int64_t used = 0; used < p.vertices;) {
    const int64_t next = used + draw_size();
    if (next > p.vertices || p.vertices - next < p.min_community) {
      size.push_back(p.vertices - used);
      break;
    }
    size.push_back(next - used);
    used = next;
  }
  // Communities from the largest down: those with room for a vertex's need form a prefix that
  // grows as the needs fall.
  std::vector<int64_t> by_size(size.size());
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](int64_t a, int64_t b) { return size[a] > size[b]; });
  double total_weight = 0;
  for (int64_t r = 0; r < p.vertices; ++r) total_weight += RankWeight(r, p.exponent);
  std::vector<std::vector<int64_t>> members(size.size());
  std::vector<int64_t> open;  // communities of the prefix with a free place
  size_t prefix = 0;
  for (int64_t r = 0; r < p.vertices; ++r) {
    const double degree = 2.0 * double(p.edges) * RankWeight(r, p.exponent) / total_weight;
    const double need = std::min(2.0 * (1.0 - p.mixing) * degree, double(size[by_size[0]]));
    while (prefix < by_size.size() && (open.empty() || double(size[by_size[prefix]]) >= need))
      open.push_back(by_size[prefix++]);
    const size_t pick = rng.Below(open.size());
    const int64_t c = open[pick];
    members[c].push_back(r);
    if (static_cast<int64_t>(members[c].size()) == size[c]) {
      open[pick] = open.back();
      open.pop_back();
    }
  }
  std::vector<int64_t> rank_at;
  rank_at.reserve(p.vertices);
  start->assign(1, 0);
  for (const std::vector<int64_t>& m : members) {
    rank_at.insert(rank_at.end(), m.begin(), m.end());
    start->push_back(static_cast<int64_t>(rank_at.size()));
  }
  return rank_at;
}

}  // namespace

CooTensor GenerateGraph(const GraphParams& p) {
  gen::CheckDimension(p.vertices, "vertices");
  if (p.vertices < 2) throw InputError("a graph needs at least 2 vertices");
  if (p.edges <= 0)
    throw InputError("edges must be positive (got " + std::to_string(p.edges) + ")");
  // Each drawn pair is stored both ways.
  gen::CheckEntryBudget(2.0 * double(p.edges));
  int scale = 0;
  while ((int64_t(1) << scale) < p.vertices) ++scale;
  if (p.model == GraphModel::kGraph500 && (int64_t(1) << scale) != p.vertices)
    throw InputError("Graph500 graphs have 2^scale vertices (got " + std::to_string(p.vertices) +
                     ")");
  const double d = 1.0 - p.a - p.b - p.c;
  if (p.model == GraphModel::kGraph500 && (!(p.a >= 0 && p.b >= 0 && p.c >= 0) || d < -1e-12))
    throw InputError("R-MAT probabilities a, b, c must be non-negative with a + b + c <= 1");
  const bool weighted = p.model == GraphModel::kChungLu || p.model == GraphModel::kCommunities;
  if (weighted && !(p.exponent > 1.0 && p.exponent <= 10.0))
    throw InputError("the degree exponent must be in (1, 10] (got " + std::to_string(p.exponent) +
                     ")");
  if (p.model == GraphModel::kCommunities) CheckCommunities(p);
  // Chung-Lu: the cumulative weights, endpoints by binary search on a uniform draw. With
  // communities, community c holds the vertices [community_start[c], community_start[c + 1]).
  std::vector<double> cumulative;
  std::vector<int64_t> community_start;
  std::vector<int32_t> community_of;
  if (weighted) {
    std::vector<int64_t> rank_at;  // the weight rank of each vertex, communities planted
    if (p.model == GraphModel::kCommunities) rank_at = PlantCommunities(p, &community_start);
    cumulative.resize(p.vertices);
    double total = 0;
    for (int64_t v = 0; v < p.vertices; ++v) {
      total += RankWeight(rank_at.empty() ? v : rank_at[v], p.exponent);
      cumulative[v] = total;
    }
    for (double& x : cumulative) x /= total;
  }
  if (p.model == GraphModel::kCommunities) {
    community_of.resize(p.vertices);
    for (size_t c = 0; c + 1 < community_start.size(); ++c)
      std::fill(community_of.begin() + community_start[c],
                community_of.begin() + community_start[c + 1], static_cast<int32_t>(c));
  }
  auto threshold = [](double prob) {
    return static_cast<uint64_t>(std::min(1.0, std::max(0.0, prob)) * 4294967296.0);
  };
  const uint64_t t_a = threshold(p.a), t_ab = threshold(p.a + p.b),
                 t_abc = threshold(p.a + p.b + p.c);
  // A vertex of [lo, hi) drawn by weight.
  auto endpoint_in = [&](Rng& rng, int64_t lo, int64_t hi) -> int64_t {
    const double below = lo > 0 ? cumulative[lo - 1] : 0.0;
    const double u = below + rng.Unit() * (cumulative[hi - 1] - below);
    const auto it = std::upper_bound(cumulative.begin() + lo, cumulative.begin() + hi, u);
    return std::min<int64_t>(it - cumulative.begin(), hi - 1);
  };
  auto draw_pair = [&](Rng& rng, int64_t* i, int64_t* j) {
    if (p.model == GraphModel::kChungLu) {
      *i = endpoint_in(rng, 0, p.vertices);
      *j = endpoint_in(rng, 0, p.vertices);
      return;
    }
    if (p.model == GraphModel::kCommunities) {
      *i = endpoint_in(rng, 0, p.vertices);
      if (rng.Unit() < p.mixing) {
        *j = endpoint_in(rng, 0, p.vertices);
      } else {
        const int32_t c = community_of[*i];
        *j = endpoint_in(rng, community_start[c], community_start[c + 1]);
      }
      return;
    }
    uint64_t r = 0, c = 0, word = 0;
    for (int l = 0; l < scale; ++l) {
      if ((l & 1) == 0) word = rng.Next();
      const uint64_t u = (l & 1) ? (word >> 32) : (word & 0xffffffffULL);
      const uint64_t ge_a = u >= t_a, ge_ab = u >= t_ab, ge_abc = u >= t_abc;
      r = (r << 1) | ge_ab;
      c = (c << 1) | (ge_a ^ ge_ab ^ ge_abc);
    }
    *i = static_cast<int64_t>(r);
    *j = static_cast<int64_t>(c);
  };
  // Chunks of pairs from their own streams: the same graph whatever the thread count.
  constexpr int64_t kChunk = int64_t(1) << 20;
  const int64_t chunks = (p.edges + kChunk - 1) / kChunk;
  const std::vector<int32_t> label = gen::RandomPermutation(p.vertices, p.seed, 0);
  CooTensor t;
  t.Reset({p.vertices, p.vertices});
  t.coords[0].resize(2 * p.edges);
  t.coords[1].resize(2 * p.edges);
  std::vector<uint8_t> keep(p.edges, 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    Rng rng(p.seed, gen::kStreamPattern, uint64_t(ch));
    for (int64_t e = ch * kChunk; e < std::min(p.edges, (ch + 1) * kChunk); ++e) {
      int64_t i = 0, j = 0;
      draw_pair(rng, &i, &j);
      if (i == j) continue;
      keep[e] = 1;
      t.coords[0][2 * e] = t.coords[1][2 * e + 1] = label[i];
      t.coords[1][2 * e] = t.coords[0][2 * e + 1] = label[j];
    }
  }
  int64_t out = 0;
  for (int64_t e = 0; e < p.edges; ++e) {
    if (!keep[e]) continue;
    for (int k = 0; k < 2; ++k) {
      t.coords[0][out] = t.coords[0][2 * e + k];
      t.coords[1][out] = t.coords[1][2 * e + k];
      ++out;
    }
  }
  t.coords[0].resize(out);
  t.coords[1].resize(out);
  t.values.assign(out, 1.0);
  t.Canonicalize();
  t.duplicates_summed = 0;
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
