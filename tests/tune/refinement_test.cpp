// The second round's schedules: one move from the first round's best, never one measured
// already, the model's best scored or, without a model, a deterministic draw.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ir/kernels.hpp"
#include "tune/candidates.hpp"
#include "tune/refinement.hpp"

namespace sparsetune {
namespace {

using Sizes = std::map<std::string, int64_t>;

struct FirstRound {
  std::vector<TuneCandidate> candidates;
  std::vector<RunResult> results;
  void Add(const Schedule& schedule, const std::string& source, double ms, bool ok = true) {
    AddDistinct(candidates, {schedule, "", source});
    RunResult r;
    r.status = ok ? RunStatus::kOk : RunStatus::kWrongResult;
    r.time.median_ms = ms;
    results.push_back(r);
  }
};

// FixedCSR, two samples and a failed one: the fastest two that ran are the anchors.
FirstRound SpmmFirstRound(const WacoTemplate& waco, const Sizes& sizes) {
  FirstRound round;
  round.Add(FixedCsrSchedule(waco.expression()), "fixed_csr", 3.0);
  std::mt19937_64 rng(3);
  const auto samples = waco.SampleDistinct(sizes, 3, rng);
  round.Add(waco.ToSchedule(samples[0]), "sampled", 1.0);
  round.Add(waco.ToSchedule(samples[1]), "sampled", 9.0);
  round.Add(waco.ToSchedule(samples[2]), "sampled", 0.5, /*ok=*/false);
  return round;
}

std::set<std::string> NeighbourJsons(const WacoTemplate& waco, const Sizes& sizes,
                                     const std::vector<Schedule>& anchors) {
  std::set<std::string> out;
  for (const Schedule& anchor : anchors) {
    for (const SuperSchedule& n : waco.Neighbours(*waco.FromSchedule(anchor, nullptr), sizes))
      out.insert(waco.ToSchedule(n).CanonicalJson());
  }
  return out;
}

TEST(Refinement, WithoutAModelDrawsNeighboursOfTheFastestAtRandom) {
  const auto waco = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = {{"i", 4000}, {"k", 4000}, {"j", 64}};
  const FirstRound round = SpmmFirstRound(*waco, sizes);
  RefinementOptions options;
  options.count = 6;
  options.anchors = 2;
  const auto picks = RefinementCandidates(*waco, sizes, round.candidates, round.results, nullptr,
                                          options, "spmm/fingerprint");
  ASSERT_EQ(picks.size(), 6u);
  const std::set<std::string> allowed =
      NeighbourJsons(*waco, sizes, {round.candidates[1].schedule, round.candidates[0].schedule});
  std::set<std::string> measured;
  for (const auto& c : round.candidates) measured.insert(c.json);
  std::set<std::string> distinct;
  for (const auto& p : picks) {
    EXPECT_EQ(p.source, "refined");
    EXPECT_TRUE(allowed.count(p.json)) << "not a neighbour of the two fastest: " << p.json;
    EXPECT_FALSE(measured.count(p.json)) << "measured already: " << p.json;
    EXPECT_TRUE(distinct.insert(p.json).second);
  }
  const auto again = RefinementCandidates(*waco, sizes, round.candidates, round.results, nullptr,
                                          options, "spmm/fingerprint");
  for (size_t p = 0; p < picks.size(); ++p) EXPECT_EQ(again[p].json, picks[p].json);

  options.count = 0;
  EXPECT_TRUE(RefinementCandidates(*waco, sizes, round.candidates, round.results, nullptr, options,
                                   "spmm/fingerprint")
                  .empty());
}

TEST(Refinement, TheModelsBestScoredNeighboursAreMeasured) {
  const auto waco = WacoTemplate::ForKernel("spmm");
  CooTensor tensor;
  tensor.Reset({3000, 3000});
  for (int32_t i = 0; i < 3000; ++i) {
    for (int32_t k = std::max(0, i - 3); k <= std::min(2999, i + 3); ++k) {
      const int32_t c[2] = {i, k};
      tensor.Append(c, 1.0);
    }
  }
  const Sizes sizes = {{"i", 3000}, {"k", 3000}, {"j", 64}};
  const FirstRound round = SpmmFirstRound(*waco, sizes);
  auto model = LoadCostModel(std::string(SPARSETUNE_SOURCE_DIR) + "/models/spmm", "spmm");
  model->SetMatrix(tensor);
  RefinementOptions options;
  options.count = 5;
  options.anchors = 1;
  const auto picks = RefinementCandidates(*waco, sizes, round.candidates, round.results,
                                          model.get(), options, "spmm/banded");
  ASSERT_EQ(picks.size(), 5u);

  // Every neighbour of the fastest scored by the same model: the picks are its five best.
  const auto near =
      waco->Neighbours(*waco->FromSchedule(round.candidates[1].schedule, nullptr), sizes);
  std::vector<float> scores(near.size());
  for (size_t n = 0; n < near.size(); ++n) model->Enqueue(waco->Encode(near[n]), &scores[n]);
  model->EvaluateCosts();
  std::vector<std::pair<float, std::string>> ranked;
  for (size_t n = 0; n < near.size(); ++n)
    ranked.push_back({scores[n], waco->ToSchedule(near[n]).CanonicalJson()});
  std::sort(ranked.begin(), ranked.end());
  ASSERT_GT(ranked.size(), 5u);
  std::set<std::string> best;
  for (size_t r = 0; r < 5; ++r) best.insert(ranked[r].second);
  for (const auto& p : picks) EXPECT_TRUE(best.count(p.json)) << p.json;
}

}  // namespace
}  // namespace sparsetune
