// Two timings of identical code tell whether a contest's times can be trusted: tune and collect
// measure FixedCSR twice and compare. The final round re-times the best of the first, in
// several contests, and counts each finalist's median one.
#include <gtest/gtest.h>

#include <stdexcept>

#include "ir/kernels.hpp"
#include "tune/measuring.hpp"

namespace sparsetune {
namespace {

RunResult Timed(double median_ms) {
  RunResult r;
  r.time.median_ms = median_ms;
  return r;
}

TEST(Twins, AgreeWithinTheLimitAndDisagreeBeyondIt) {
  EXPECT_EQ(TwinDisagreement(Timed(1.0), Timed(1.05), 0.10, 0.002), "");
  EXPECT_EQ(TwinDisagreement(Timed(1.05), Timed(1.0), 0.10, 0.002), "");
  const std::string apart = TwinDisagreement(Timed(1.0), Timed(1.2), 0.10, 0.002);
  EXPECT_NE(apart.find("1 and 1.2 ms"), std::string::npos) << apart;
  EXPECT_NE(TwinDisagreement(Timed(1.3), Timed(1.0), 0.10, 0.002), "");
}

TEST(Twins, DifferencesWithinTheTimersGrainAreNoise) {
  // 15% apart, but by 1.5 us.
  EXPECT_EQ(TwinDisagreement(Timed(0.010), Timed(0.0115), 0.10, 0.002), "");
  EXPECT_NE(TwinDisagreement(Timed(0.010), Timed(0.0130), 0.10, 0.002), "");
}

RunResult Disturbed(double median_ms) {
  RunResult r = Timed(median_ms);
  r.time.disturbed = true;
  r.time.disturbance = "the threads ran in two placements";
  return r;
}

// A contest of FixedCSR (the anchor), four candidates and FixedCSR's repeat.
std::vector<RunResult> Contest(std::vector<RunResult> middle) {
  std::vector<RunResult> results{Timed(1.0)};
  results.insert(results.end(), middle.begin(), middle.end());
  results.push_back(Timed(1.02));
  return results;
}

TEST(MeasuringAgain, OnlyTheDisturbedGroupsAreMeasuredAgainBesideTheAnchor) {
  const auto results = Contest({Timed(0.5), Disturbed(0.9), Timed(0.7), Disturbed(0.6)});
  EXPECT_EQ(SchedulesToMeasureAgain(results, 0), (std::vector<size_t>{0, 2, 4}));
}

TEST(MeasuringAgain, TwinsThatDisagreeAreBothMeasuredAgain) {
  auto results = Contest({Timed(0.5), Timed(0.9), Disturbed(0.7), Timed(0.6)});
  results.back() = Timed(2.5);
  EXPECT_EQ(SchedulesToMeasureAgain(results, 0), (std::vector<size_t>{0, 3, 5}));
}

TEST(MeasuringAgain, ADisturbedAnchorMeansEverythingIsMeasuredAgain) {
  auto results = Contest({Timed(0.5), Disturbed(0.9), Timed(0.7), Timed(0.6)});
  results.front().time.disturbed = true;
  EXPECT_EQ(SchedulesToMeasureAgain(results, 0), (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  RunResult failed = Timed(1.0);
  failed.status = RunStatus::kTimedOut;
  results.front() = failed;
  EXPECT_EQ(SchedulesToMeasureAgain(results, 0).size(), results.size());
}

TEST(MeasuringAgain, CandidatesThatDidNotRunAreNotRetried) {
  RunResult failed = Disturbed(0.9);
  failed.status = RunStatus::kWrongResult;
  const auto results = Contest({Timed(0.5), failed, Disturbed(0.7), Timed(0.6)});
  EXPECT_EQ(SchedulesToMeasureAgain(results, 0), (std::vector<size_t>{0, 3}));
}

TEST(Twins, ATwinThatDidNotRunSaysNothing) {
  RunResult failed = Timed(5.0);
  failed.status = RunStatus::kTimedOut;
  EXPECT_EQ(TwinDisagreement(Timed(1.0), failed, 0.10, 0.002), "");
}

// The SpMV library-rule schedules, the last one renumbered by degree, on a square matrix.
std::vector<TuneCandidate> SpmvCandidates(CooTensor* matrix) {
  const Expression spmv = KernelExpression("spmv");
  std::vector<TuneCandidate> candidates =
      LibraryRuleCandidates("spmv", spmv, {{"i", 64}, {"k", 64}}, 64);
  EXPECT_GE(candidates.size(), 4u);
  candidates.back().schedule.ordering = OrderingKind::kDegree;
  candidates.back().json = candidates.back().schedule.CanonicalJson();
  matrix->Reset({64, 64});
  for (int32_t r = 0; r < 64; ++r) {
    const int32_t coordinate[2] = {r, (r * 7) % 64};
    matrix->Append(coordinate, 1.0);
  }
  return candidates;
}

TEST(FinalRound, RetimesTheBestAsTheyAreAndRenumbersTheBestUnordered) {
  CooTensor matrix;
  const std::vector<TuneCandidate> candidates = SpmvCandidates(&matrix);
  const size_t n = candidates.size(), ordered = n - 1;
  // The renumbered schedule was fastest, then candidate 2, then the others in order.
  std::vector<RunResult> results;
  for (size_t c = 0; c < n; ++c) results.push_back(Timed(10.0 + c));
  results[ordered] = Timed(1.0);
  results[2] = Timed(2.0);
  results[0].status = RunStatus::kTimedOut;  // never among the best
  const std::vector<TuneCandidate> final_round =
      FinalRound(candidates, results, matrix, {OrderingKind::kDegree, OrderingKind::kRcm},
                 FinalRoundSize{2, 2, 0.10, 2});
  auto has = [&](const TuneCandidate& c, OrderingKind kind) {
    Schedule s = c.schedule;
    s.ordering = kind;
    s.Canonicalize();
    for (const auto& f : final_round) {
      if (f.json == s.CanonicalJson()) return true;
    }
    return false;
  };
  // The two best as they are (one of them already ordered), and the two best unordered ones
  // (candidates 2 and 1) renumbered by both orderings: 1 + 3 + 3.
  EXPECT_TRUE(has(candidates[ordered], OrderingKind::kDegree));
  for (size_t c : {size_t(2), size_t(1)}) {
    EXPECT_TRUE(has(candidates[c], OrderingKind::kNone)) << c;
    EXPECT_TRUE(has(candidates[c], OrderingKind::kDegree)) << c;
    EXPECT_TRUE(has(candidates[c], OrderingKind::kRcm)) << c;
  }
  EXPECT_FALSE(has(candidates[0], OrderingKind::kNone));
  EXPECT_FALSE(has(candidates[3], OrderingKind::kNone));
  EXPECT_EQ(final_round.size(), 7u);
}

TEST(FinalRound, WithoutOrderingsTheBestAreStillTimedAgain) {
  CooTensor matrix;
  const std::vector<TuneCandidate> candidates = SpmvCandidates(&matrix);
  std::vector<RunResult> results;
  for (size_t c = 0; c < candidates.size(); ++c) results.push_back(Timed(10.0 - c));
  const std::vector<TuneCandidate> final_round =
      FinalRound(candidates, results, matrix, {}, FinalRoundSize{3, 6, 0.10, 1});
  ASSERT_EQ(final_round.size(), 3u);  // the best three; the best unordered is among them
  EXPECT_EQ(final_round[0].json, candidates.back().json);
}

TEST(FinalRound, AdmitsBeyondTheLeastThoseCloseToTheFastest) {
  // A large pool: the true best may time a few percent high once and rank past the third.
  CooTensor matrix;
  const std::vector<TuneCandidate> candidates = SpmvCandidates(&matrix);
  ASSERT_GE(candidates.size(), 5u);
  std::vector<RunResult> results;
  for (size_t c = 0; c < candidates.size(); ++c) results.push_back(Timed(20.0 + c));
  for (size_t c = 0; c < 4; ++c) results[c] = Timed(10.0 + 0.2 * c);  // all within 10%
  const FinalRoundSize size{2, 3, 0.10, 0};
  const std::vector<TuneCandidate> final_round = FinalRound(candidates, results, matrix, {}, size);
  ASSERT_EQ(final_round.size(), 3u);  // two by rank, one more by closeness; not the fourth
  for (size_t c = 0; c < 3; ++c) EXPECT_EQ(final_round[c].json, candidates[c].json) << c;
  // Times 20% apart: only the least count goes on.
  for (size_t c = 0; c < 4; ++c) results[c] = Timed(10.0 * (1 + 0.2 * c));
  EXPECT_EQ(FinalRound(candidates, results, matrix, {}, size).size(), 2u);
}

// The first round times each schedule in one packing: the fastest library rule also goes on
// when the model's picks lead it by less than rule_within, and only then.
TEST(FinalRound, TheFastestRuleGoesOnWhenItIsNotFarBehind) {
  CooTensor matrix;
  std::vector<TuneCandidate> candidates = SpmvCandidates(&matrix);
  ASSERT_GE(candidates.size(), 5u);
  std::vector<RunResult> results;
  for (size_t c = 0; c < candidates.size(); ++c) {
    candidates[c].source = c < 3 ? "model" : "heuristic";
    results.push_back(Timed(c < 3 ? 1.0 + 0.01 * c : 1.5 + 0.01 * c));
  }
  const FinalRoundSize size{3, 6, 0.10, 0};
  auto rules_in = [&] {
    const std::vector<TuneCandidate> final_round =
        FinalRound(candidates, results, matrix, {}, size);
    std::vector<std::string> rules;
    for (const auto& f : final_round)
      if (f.source == "heuristic") rules.push_back(f.json);
    EXPECT_EQ(final_round.size(), 3 + rules.size());
    return rules;
  };
  for (size_t c = 3; c < candidates.size(); ++c) results[c] = Timed(2.1 + 0.01 * c);
  EXPECT_TRUE(rules_in().empty());  // 2.13 ms: 113% behind
  results[4] = Timed(1.90);         // the fastest rule, 90% behind
  EXPECT_EQ(rules_in(), (std::vector<std::string>{candidates[4].json}));
  FinalRoundSize none = size;
  none.rule_within = 0;
  EXPECT_EQ(FinalRound(candidates, results, matrix, {}, none).size(), 3u);
}

TEST(FinalRound, ForACallCountPreparationCounts) {
  CooTensor matrix;
  const std::vector<TuneCandidate> candidates = SpmvCandidates(&matrix);
  std::vector<RunResult> results;
  for (size_t c = 0; c < candidates.size(); ++c) {
    results.push_back(Timed(1.0 + 0.1 * c));
    results.back().pack_ms = 100.0 - 10 * c;  // the slower a call, the cheaper to prepare
  }
  const FinalRoundSize size{1, 1, 0.0, 0};
  // Per call, candidate 0; for 10 calls the last (cost 100 - 10c + 10 + c).
  EXPECT_EQ(FinalRound(candidates, results, matrix, {}, size)[0].json, candidates[0].json);
  EXPECT_EQ(FinalRound(candidates, results, matrix, {}, size, 10)[0].json, candidates.back().json);
  EXPECT_DOUBLE_EQ(ChoiceCost(results[1], 0), 1.1);
  EXPECT_DOUBLE_EQ(ChoiceCost(results[1], 10), 90.0 + 11.0);
  results[1].ordering_ms = 5;  // renumbering is preparation too
  EXPECT_DOUBLE_EQ(ChoiceCost(results[1], 10), 95.0 + 11.0);
}

TEST(FinalRound, TheWinnerIsTheFastestFinalist) {
  // A finalist's typical time, taken in the final round, is not compared with a first-round
  // time that nothing timed again: that one may be the luckiest of a large pool.
  Measured m;
  m.candidates.resize(4);
  m.results = {Timed(9.0), Timed(5.0), Timed(6.0), Timed(5.5), Timed(9.0)};
  EXPECT_EQ(WinningCandidate(m), 1);  // no final round: the fastest of all
  m.finalists = {2, 3};
  EXPECT_EQ(WinningCandidate(m), 3);
  m.results[3].status = RunStatus::kTimedOut;
  EXPECT_EQ(WinningCandidate(m), 2);
  m.results[2].status = RunStatus::kWrongResult;  // no finalist ran: the fastest of the rest
  EXPECT_EQ(WinningCandidate(m), 1);
  // For 100 calls, 99 ms more preparation outweigh 0.5 ms a call less: 1 + 600 against
  // 100 + 550.
  m.results[2].status = m.results[3].status = RunStatus::kOk;
  m.results[2].pack_ms = 1.0;
  m.results[3].pack_ms = 100.0;
  EXPECT_EQ(WinningCandidate(m), 3);
  m.calls = 100;
  EXPECT_EQ(WinningCandidate(m), 2);
}

TEST(FinalRound, TheRestAreBroughtToTheFinalRoundsSpeed) {
  // The host ran 20% slower by the final round: the finalists' median move is the drift.
  const std::vector<RunResult> first = {Timed(5.0), Timed(5.2), Timed(6.0)};
  const std::vector<RunResult> final_round = {Timed(6.1), Timed(6.2), Timed(7.2)};
  EXPECT_NEAR(FinalRoundDrift(first, final_round), 1.2, 1e-12);
  // Within the tolerance, or with nothing timed in both rounds, nothing is scaled.
  EXPECT_EQ(FinalRoundDrift(first, {Timed(5.1), Timed(5.2), Timed(6.0)}), 1);
  EXPECT_EQ(FinalRoundDrift({}, {}), 1);
  RunResult timed_out = Timed(50.0);
  timed_out.status = RunStatus::kTimedOut;
  // A finalist that did not run in either round says nothing of the drift.
  EXPECT_NEAR(FinalRoundDrift({Timed(5.0), timed_out}, {Timed(4.0), Timed(5.0)}), 0.8, 1e-12);
}

TEST(FinalRound, AFinalistCountsItsMedianContest) {
  // Fast in one packing, slow in two: judged slow, with that contest's whole result.
  std::vector<RunResult> contests = {Timed(9.4), Timed(6.8), Timed(9.3)};
  contests[2].pack_ms = 3.0;
  const RunResult typical = MedianContest(contests);
  EXPECT_DOUBLE_EQ(typical.time.median_ms, 9.3);
  EXPECT_DOUBLE_EQ(typical.pack_ms, 3.0);
  // Of two, the slower counts: one lucky contest does not make a winner.
  EXPECT_DOUBLE_EQ(MedianContest({Timed(6.8), Timed(9.4)}).time.median_ms, 9.4);
  EXPECT_DOUBLE_EQ(MedianContest({Timed(5.0)}).time.median_ms, 5.0);
}

TEST(FinalRound, ThoseCloseToTheFastestAreTimedAgain) {
  RunResult timed_out = Timed(4.0);
  timed_out.status = RunStatus::kTimedOut;
  const std::vector<RunResult> typical = {Timed(10.3), Timed(9.9), timed_out, Timed(10.6),
                                          Timed(10.35)};
  // Within 5% of 9.9 ms, the fastest first; a finalist that did not run is not among them.
  EXPECT_EQ(RunoffFinalists(typical, 0.05), (std::vector<size_t>{1, 0, 4}));
  EXPECT_EQ(RunoffFinalists(typical, 0.08), (std::vector<size_t>{1, 0, 4, 3}));
  // One alone has nothing to be told apart from.
  EXPECT_TRUE(RunoffFinalists(typical, 0.01).empty());
  EXPECT_TRUE(RunoffFinalists({Timed(1.0)}, 0.05).empty());
}

TEST(FinalRound, ARunoffGoesOnUntilEachFinalistSawBothPlacements) {
  auto contest = [](int near, int far) {
    RunResult r = Timed(1.0);
    r.time.near_rounds = near;
    r.time.far_rounds = far;
    return r;
  };
  PlacementTally host;  // a host that moves the threads between near and far cores
  host.near_rounds = 40;
  host.far_rounds = 20;
  // Seven contests all near: its time is the near placement's alone.
  EXPECT_TRUE(MissesAPlacement(std::vector<RunResult>(7, contest(2, 0)), host));
  // Far rounds spread over contests count together.
  EXPECT_TRUE(MissesAPlacement({contest(5, 1), contest(4, 1)}, host));
  EXPECT_FALSE(MissesAPlacement({contest(5, 1), contest(4, 1), contest(0, 1)}, host));
  // A host that has not shown both placements (or has, too rarely) asks for nothing more.
  PlacementTally near_only;
  near_only.near_rounds = 60;
  near_only.far_rounds = 2;
  EXPECT_FALSE(MissesAPlacement({contest(7, 0)}, near_only));
  // Nor one whose missing placement is rare enough to weigh little (near in 5% of rounds).
  PlacementTally mostly_far;
  mostly_far.near_rounds = 20;
  mostly_far.far_rounds = 380;
  EXPECT_FALSE(MissesAPlacement({contest(0, 9)}, mostly_far));
  EXPECT_TRUE(MissesAPlacement({contest(9, 0)}, mostly_far));
  // Nor does a finalist that did not run: more contests would not change that.
  RunResult timed_out = contest(1, 0);
  timed_out.status = RunStatus::kTimedOut;
  EXPECT_FALSE(MissesAPlacement({contest(3, 0), timed_out}, host));
}

TEST(FinalRound, AFinalistThatTimedOutInAnyContestIsNotTrusted) {
  RunResult timed_out = Timed(50.0);
  timed_out.status = RunStatus::kTimedOut;
  const RunResult typical = MedianContest({Timed(1.0), timed_out, Timed(1.1)});
  EXPECT_EQ(typical.status, RunStatus::kTimedOut);
  EXPECT_THROW(MedianContest({}), std::invalid_argument);
}

// The leader round's neighbours are brought to the final round's times by the winner's time in
// both, and one that beats the winner by more than kLeaderWinMargin joins the finalists.
TEST(LeaderRound, ANeighbourThatBeatsTheWinnerBesideItBecomesAFinalist) {
  // The winner ran 10 ms in the final round and 12 ms beside its neighbours: they are scaled by
  // 10/12.
  const std::vector<RunResult> typical{Timed(12.0), Timed(11.0), Timed(11.95), Timed(13.0)};
  const LeaderRoundVerdict verdict = JudgeLeaderRound(Timed(10.0), typical, 0);
  ASSERT_EQ(verdict.neighbours.size(), 3u);
  ASSERT_EQ(verdict.finalist.size(), 3u);
  EXPECT_NEAR(verdict.neighbours[0].time.median_ms, 11.0 * 10 / 12, 1e-9);
  EXPECT_NEAR(verdict.neighbours[2].time.median_ms, 13.0 * 10 / 12, 1e-9);
  EXPECT_TRUE(verdict.finalist[0]);
  EXPECT_FALSE(verdict.finalist[1]) << "within the margin: 11.95 against 12";
  EXPECT_FALSE(verdict.finalist[2]);

  // Judged by the cost of a run's calls: a neighbour that renumbers pays for it.
  std::vector<RunResult> ordered = typical;
  ordered[1].ordering_ms = 50;
  const LeaderRoundVerdict few_calls = JudgeLeaderRound(Timed(10.0), ordered, 20);
  EXPECT_FALSE(few_calls.finalist[0]);
  EXPECT_TRUE(JudgeLeaderRound(Timed(10.0), ordered, 1000).finalist[0]);

  // A winner within kDriftTolerance of its final-round time: no correction, as everywhere.
  const LeaderRoundVerdict steady = JudgeLeaderRound(Timed(10.0), {Timed(10.2), Timed(9.8)}, 0);
  EXPECT_NEAR(steady.neighbours[0].time.median_ms, 9.8, 1e-12);
  EXPECT_DOUBLE_EQ(steady.neighbours[0].time.drift_scale, 1.0);
  EXPECT_TRUE(steady.finalist[0]);
}

TEST(LeaderRound, NoNeighbourWinsAgainstAWinnerThatDidNotRunBesideIt) {
  RunResult failed = Timed(12.0);
  failed.status = RunStatus::kTimedOut;
  const LeaderRoundVerdict verdict = JudgeLeaderRound(Timed(10.0), {failed, Timed(1.0)}, 0);
  ASSERT_EQ(verdict.finalist.size(), 1u);
  EXPECT_FALSE(verdict.finalist[0]);
  EXPECT_NEAR(verdict.neighbours[0].time.median_ms, 1.0, 1e-12);  // unscaled
  RunResult wrong = Timed(1.0);
  wrong.status = RunStatus::kWrongResult;
  EXPECT_FALSE(JudgeLeaderRound(Timed(10.0), {Timed(10.0), wrong}, 0).finalist[0]);
  EXPECT_TRUE(JudgeLeaderRound(Timed(10.0), {}, 0).neighbours.empty());
}

}  // namespace
}  // namespace sparsetune
