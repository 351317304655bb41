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
          {"matrices", matrices}};
}

RankingMetrics EvaluateRanking(const std::vector<RankedMatrix>& matrices) {
  RankingMetrics m;
  int64_t correct = 0, pairs = 0;
  double tau_sum = 0, log_top1 = 0, log_top10 = 0, log_top10_speedup = 0, log_oracle = 0;
  int within = 0, with_fixed = 0;
  for (const RankedMatrix& r : matrices) {
    const size_t n = r.times.size();
    if (n == 0) continue;
    ++m.matrices;
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
    }
  }
  if (m.matrices == 0) return m;
  m.pairwise_accuracy = pairs ? double(correct) / double(pairs) : 0;
  m.kendall_tau = tau_sum / m.matrices;
  m.top1_regret = std::exp(log_top1 / m.matrices);
  m.top10_regret = std::exp(log_top10 / m.matrices);
  m.top10_within_10pct = double(within) / m.matrices;
  if (with_fixed > 0) {
    m.top10_speedup = std::exp(log_top10_speedup / with_fixed);
    m.oracle_speedup = std::exp(log_oracle / with_fixed);
    if (log_oracle != 0) m.oracle_speedup_captured = log_top10_speedup / log_oracle;
  }
  return m;
}

}  // namespace sparsetune
