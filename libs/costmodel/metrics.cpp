#include "costmodel/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sparsetune {

nlohmann::json RankingMetrics::ToJson() const {
  return {{"pairwise_accuracy", pairwise_accuracy},
          {"kendall_tau", kendall_tau},
          {"top1_regret", top1_regret},
          {"top10_regret", top10_regret},
          {"top10_within_10pct", top10_within_10pct},
          {"oracle_speedup_captured", oracle_speedup_captured},
          {"top10_speedup", top10_speedup},
          {"oracle_speedup", oracle_speedup},
          {"random",
           {{"top1_regret", random_top1_regret},
            {"top10_regret", random_top10_regret},
            {"top10_within_10pct", random_top10_within_10pct},
            {"oracle_speedup_captured", random_oracle_speedup_captured}}},
          {"median_pool", median_pool},
          {"matrices", matrices}};
}

namespace {

// Expected figures of the best of k schedules drawn at random without replacement from
// `times`, sorted ascending: E[log(min / best)], P(min <= 1.1 best) and E[log(fixed / min)].
// The i-th (0-based) is the minimum of a k-subset with probability
// C(n-1-i, k-1) / C(n, k), a ratio computed as a running product to stay finite.
struct RandomDraw {
  double log_regret = 0;
  double within_10pct = 0;
  double log_speedup = 0;
};

RandomDraw RandomBestOf(const std::vector<double>& times, size_t k, double fixed_csr_ms) {
  const size_t n = times.size();
  k = std::min(k, n);
  RandomDraw d;
  // p = C(n-1-i, k-1) / C(n, k); p_0 = k / n, p_{i+1} = p_i * (n-1-i-(k-1)) / (n-1-i).
  double p = double(k) / double(n);
  for (size_t i = 0; i + k <= n; ++i) {
    d.log_regret += p * std::log(times[i] / times[0]);
    if (times[i] <= 1.1 * times[0]) d.within_10pct += p;
    if (fixed_csr_ms > 0) d.log_speedup += p * std::log(fixed_csr_ms / times[i]);
    if (n - 1 - i > 0) p *= double(n - i - k) / double(n - 1 - i);
  }
  return d;
}

}  // namespace

RankingMetrics EvaluateRanking(const std::vector<RankedMatrix>& matrices) {
  RankingMetrics m;
  int64_t correct = 0, pairs = 0;
  double tau_sum = 0, log_top1 = 0, log_top10 = 0, log_top10_speedup = 0, log_oracle = 0;
  int within = 0, with_fixed = 0;
  double random_log_top1 = 0, random_log_top10 = 0, random_within = 0, random_log_speedup = 0;
  std::vector<double> pools;
  for (const RankedMatrix& r : matrices) {
    const size_t n = r.times.size();
    if (n == 0) continue;
    ++m.matrices;
    pools.push_back(double(n));
    std::vector<double> sorted = r.times;
    std::sort(sorted.begin(), sorted.end());
    const RandomDraw one = RandomBestOf(sorted, 1, 0);
    const RandomDraw ten = RandomBestOf(sorted, 10, r.fixed_csr_ms);
    random_log_top1 += one.log_regret;
    random_log_top10 += ten.log_regret;
    random_within += ten.within_10pct;
    int64_t concordant = 0, discordant = 0;
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a + 1; b < n; ++b) {
        if (r.times[a] == r.times[b]) continue;
        const bool faster = r.times[a] < r.times[b];
        const double ds = r.scores[a] - r.scores[b];
        if (ds == 0) continue;
        ++pairs;
        const bool agree = faster == (ds < 0);
        correct += agree;
        (agree ? concordant : discordant) += 1;
      }
    }
    if (concordant + discordant > 0)
      tau_sum += double(concordant - discordant) / double(concordant + discordant);
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return r.scores[a] < r.scores[b]; });
    const double best = *std::min_element(r.times.begin(), r.times.end());
    double top10 = r.times[order[0]];
    for (size_t k = 0; k < std::min<size_t>(10, n); ++k) top10 = std::min(top10, r.times[order[k]]);
    log_top1 += std::log(r.times[order[0]] / best);
    log_top10 += std::log(top10 / best);
    within += top10 <= 1.1 * best;
    if (r.fixed_csr_ms > 0) {
      ++with_fixed;
      log_top10_speedup += std::log(r.fixed_csr_ms / top10);
      log_oracle += std::log(r.fixed_csr_ms / best);
      random_log_speedup += ten.log_speedup;
    }
  }
  if (m.matrices == 0) return m;
  m.pairwise_accuracy = pairs ? double(correct) / double(pairs) : 0;
  m.kendall_tau = tau_sum / m.matrices;
  m.top1_regret = std::exp(log_top1 / m.matrices);
  m.top10_regret = std::exp(log_top10 / m.matrices);
  m.top10_within_10pct = double(within) / m.matrices;
  m.random_top1_regret = std::exp(random_log_top1 / m.matrices);
  m.random_top10_regret = std::exp(random_log_top10 / m.matrices);
  m.random_top10_within_10pct = random_within / m.matrices;
  std::sort(pools.begin(), pools.end());
  m.median_pool = pools[pools.size() / 2];
  if (with_fixed > 0) {
    m.top10_speedup = std::exp(log_top10_speedup / with_fixed);
    m.oracle_speedup = std::exp(log_oracle / with_fixed);
    if (log_oracle != 0) {
      m.oracle_speedup_captured = log_top10_speedup / log_oracle;
      m.random_oracle_speedup_captured = random_log_speedup / log_oracle;
    }
  }
  return m;
}

bool RanksSelectionBetter(const RankingMetrics& epoch, const RankingMetrics& kept, bool by_top) {
  if (by_top && epoch.top1_regret != kept.top1_regret) return epoch.top1_regret < kept.top1_regret;
  if (by_top && epoch.top10_regret != kept.top10_regret)
    return epoch.top10_regret < kept.top10_regret;
  return epoch.kendall_tau > kept.kendall_tau;
}

}  // namespace sparsetune
