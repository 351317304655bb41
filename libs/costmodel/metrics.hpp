// How well a model ranks the measured schedules of held-out matrices. Plain C++.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace sparsetune {

// One matrix: the measured median times of its schedules, the model's scores for them (lower
// means predicted faster) and FixedCSR's time.
struct RankedMatrix {
  std::vector<double> times;
  std::vector<double> scores;
  double fixed_csr_ms = 0;
};

struct RankingMetrics {
  double pairwise_accuracy = 0;   // pairs with different times ordered as measured
  double kendall_tau = 0;         // mean over matrices
  double top1_regret = 0;         // geomean of (time of the model's first) / (best time)
  double top10_regret = 0;        // geomean of (best time among the model's top 10) / (best)
  double top10_within_10pct = 0;  // share of matrices whose top-10 regret is at most 1.1
  // Geomean speedup over FixedCSR of measuring the model's top 10, over the oracle's (the
  // best measured schedule) geomean speedup, in log space: 1 captures all of it.
  double oracle_speedup_captured = 0;
  double top10_speedup = 0;   // geomean over FixedCSR of the best of the model's top 10
  double oracle_speedup = 0;  // geomean over FixedCSR of the best measured schedule
  // The same figures for a ranking drawn uniformly at random (their expected values, exact):
  // what a model must beat to be worth having on pools of this size. A random ranking's
  // pairwise accuracy is 0.5 and its tau 0.
  double random_top1_regret = 0;
  double random_top10_regret = 0;
  double random_top10_within_10pct = 0;
  double random_oracle_speedup_captured = 0;
  double median_pool = 0;  // median count of measured schedules per matrix
  int matrices = 0;
  nlohmann::json ToJson() const;
};

RankingMetrics EvaluateRanking(const std::vector<RankedMatrix>& matrices);

// Whether an epoch's ranking of the selection patterns is better than the kept one's. Training
// from scratch goes by Kendall tau over whole pools (steadier on a hundred patterns than any
// one rank). Fine-tuning (`by_top`) goes by the top of the ranking: the top-1 regret, then the
// top-10 regret, then tau. Tune measures the model's first ten of thousands, and a calibration
// chosen by tau ordered held-out pools better (tau 0.738 to 0.769) while their top ten got
// worse (0.933 to 0.909 of the oracle); the top ten of a calibration pool (25 schedules) holds
// its best nearly always, so the first place is what tells epochs apart there.
bool RanksSelectionBetter(const RankingMetrics& epoch, const RankingMetrics& kept, bool by_top);

}  // namespace sparsetune
