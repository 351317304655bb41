// The second round's schedules: one move from the first round's fastest, never one measured
// already, a deterministic draw.
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

TEST(Refinement, DrawsNeighboursOfTheFastestNeverMeasuredBefore) {
  const auto waco = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = {{"i", 4000}, {"k", 4000}, {"j", 64}};
  const FirstRound round = SpmmFirstRound(*waco, sizes);
  RefinementOptions options;
  options.count = 6;
  options.anchors = 2;
  const auto picks = RefinementCandidates(*waco, sizes, round.candidates, round.results, options,
                                          "spmm/fingerprint");
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
  const auto again = RefinementCandidates(*waco, sizes, round.candidates, round.results, options,
                                          "spmm/fingerprint");
  for (size_t p = 0; p < picks.size(); ++p) EXPECT_EQ(again[p].json, picks[p].json);
  // Another operand, another draw.
  const auto other =
      RefinementCandidates(*waco, sizes, round.candidates, round.results, options, "spmm/another");
  bool differs = false;
  for (size_t p = 0; p < picks.size(); ++p) differs |= other[p].json != picks[p].json;
  EXPECT_TRUE(differs);

  options.count = 0;
  EXPECT_TRUE(RefinementCandidates(*waco, sizes, round.candidates, round.results, options,
                                   "spmm/fingerprint")
                  .empty());
}

}  // namespace
}  // namespace sparsetune
