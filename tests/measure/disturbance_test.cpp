// A busy machine is noticed: with threads of this test spinning beside the timing (more than
// there are CPUs), the timing is judged disturbed, made again up to its retries and reported
// as disturbed, with the reason. Only the verdict under heavy deliberate load is checked, never
// a time, and never that an unloaded run is quiet (other work may share the machine).
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/elapsed.hpp"
#include "base/threads.hpp"
#include "measure/timing.hpp"
#include "support/omp_teams.hpp"
#include "support/spinners.hpp"

namespace sparsetune {
namespace {

using testing::Spinners;

// A fixed amount of work on every OpenMP thread, about 5 ms on an idle core: longer than a
// scheduler's time slice, so sharing the cores with the spinners shows in its runs (a run much
// shorter than a slice mostly runs undisturbed, and its median is right).
void ParallelWork() {
#pragma omp parallel
  {
    volatile double x = 1;
    for (int k = 0; k < 8000000; ++k) x = x * 1.0000001 + 1e-9;
  }
}

TimingOptions Short() {
  TimingOptions o;
  o.warmup_runs = 1;
  o.warmup_ms = 0;
  o.min_reps = 8;
  o.max_reps = 8;
  o.min_total_ms = 0;
  o.disturbance_retries = 1;
  o.settle_ms = 0;  // one call per turn: the counts below are rounds
  return o;
}

TEST(TimingDisturbance, SpinningThreadsBesideATimingAreNoticedAndReported) {
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "the probe needs two threads";
  Spinners busy(3 * HardwareThreads());
  const std::vector<TimingResult> r = TimeInterleaved({ParallelWork, ParallelWork}, Short(), 5);
  ASSERT_EQ(r.size(), 2u);
  for (const TimingResult& t : r) {
    EXPECT_TRUE(t.disturbed);
    EXPECT_EQ(t.attempts, 2);  // measured again once, still disturbed
    EXPECT_FALSE(t.disturbance.empty());
    EXPECT_EQ(t.reps, 8);
  }
  const TimingResult alone = TimeRepeated(ParallelWork, Short());
  EXPECT_TRUE(alone.disturbed) << alone.disturbance;
  EXPECT_EQ(alone.attempts, 2);
}

// Without retries the verdict is the same and only one attempt is made.
TEST(TimingDisturbance, RetriesAreBounded) {
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "the probe needs two threads";
  Spinners busy(3 * HardwareThreads());
  TimingOptions o = Short();
  o.disturbance_retries = 0;
  int calls = 0;
  const TimingResult r = TimeRepeated(
      [&] {
        ++calls;
        ParallelWork();
      },
      o);
  EXPECT_TRUE(r.disturbed);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(calls, 1 + 8);
}

// The spread rule alone: a contender whose runs are mostly far slower than its fastest.
// Runs whose median is far above their fastest: where the kernel reports waits, that counts
// only while the timing threads waited (DRAM-bound runs on a quiet machine spread that much on
// their own); where it does not, the spread is all there is to go by.
TEST(TimingDisturbance, AMedianFarAboveTheFastestRunCountsOnlyWithWaitsOrWhereNoneAreKnown) {
  const std::vector<std::vector<double>> spread = {{1, 5, 5, 5, 5, 1, 5}};
  const std::vector<std::vector<double>> steady = {{1, 1.01, 1.02, 1, 1.01, 1, 1}};
  TimingOptions o;
  ProbeLog quiet;
  quiet.delay_known = true;
  quiet.thread_ms = 1000;
  quiet.waited_ms = 1;
  EXPECT_EQ(TimingDisturbance(spread, quiet, o), "");
  ProbeLog waiting = quiet;
  waiting.waited_ms = 50;  // 5%: over kSpreadWaitShare, under kBusyWaitShare
  EXPECT_NE(TimingDisturbance(spread, waiting, o).find("median run"), std::string::npos);
  EXPECT_EQ(TimingDisturbance(steady, waiting, o), "");
  ProbeLog busy = quiet;
  busy.waited_ms = 300;
  EXPECT_NE(TimingDisturbance(steady, busy, o).find("waited for a CPU"), std::string::npos);
  ProbeLog unknown;
  EXPECT_NE(TimingDisturbance(spread, unknown, o).find("median run"), std::string::npos);
  EXPECT_EQ(TimingDisturbance(steady, unknown, o), "");
}

// Rounds whose threads sat on cores sharing a last-level cache and rounds whose threads did
// not (a virtual machine's cores moved) do not make a timing untrustworthy: the machine is
// quiet, and a caller's calls see both placements too.
TEST(TimingDisturbance, ThreadsMovingBetweenNearAndFarCoresAreNotADisturbance) {
  const std::vector<std::vector<double>> steady = {{1, 1.01, 1.02, 1, 1.01, 1, 1}};
  TimingOptions o;
  ProbeLog probe;
  probe.delay_known = true;
  probe.thread_ms = 1000;
  probe.round_trip_ns = {55, 56, 58, 330, 320, 341};
  EXPECT_EQ(TimingDisturbance(steady, probe, o), "");
}

// A round is near or far when the round trips probed before and after it agree; a move during
// the round, or a probe that missed, leaves it unknown.
TEST(TimingPlacement, ARoundTakesThePlacementTheProbesAroundItAgreeOn) {
  using P = Placement;
  const std::vector<Placement> got = RoundPlacements({55, 56, 330, 340, 0, 60, 58}, 55);
  EXPECT_EQ(got, (std::vector<Placement>{P::kNear, P::kUnknown, P::kFar, P::kUnknown, P::kUnknown,
                                         P::kNear}));
  // Far is relative to the nearest round trip: all far-looking trips with no near one to
  // compare are one placement.
  EXPECT_EQ(RoundPlacements({320, 335, 330}, 320), (std::vector<Placement>{P::kNear, P::kNear}));
  EXPECT_TRUE(RoundPlacements({}, 55).empty());
}

// A kernel that hands out chunks: 1 ms in near rounds, 1.4 ms in far ones. Its time is the two
// placements' medians weighted by how often the threads run far, whichever placement the
// timing's rounds happened to see more of; with too few rounds of one placement it is a plain
// median.
TEST(TimingPlacement, RunsInBothPlacementsAreWeightedByHowOftenTheThreadsRunFar) {
  using P = Placement;
  const std::vector<Placement> rounds = {P::kNear, P::kNear, P::kNear, P::kNear,   P::kNear,
                                         P::kFar,  P::kFar,  P::kFar,  P::kUnknown};
  const std::vector<double> runs = {1.0, 1.01, 0.99, 1.0, 1.02, 1.4, 1.41, 1.42, 5.0};
  const std::vector<int> run_round = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  const TimingResult weighted = SummarizeRuns(runs, run_round, rounds, 0.25);
  EXPECT_EQ(weighted.near_rounds, 5);
  EXPECT_EQ(weighted.far_rounds, 3);
  EXPECT_DOUBLE_EQ(weighted.near_ms, 1.0);
  EXPECT_DOUBLE_EQ(weighted.far_ms, 1.41);
  EXPECT_DOUBLE_EQ(weighted.far_weight, 0.25);
  EXPECT_NEAR(weighted.median_ms, 0.75 * 1.0 + 0.25 * 1.41, 1e-12);
  EXPECT_DOUBLE_EQ(weighted.min_ms, 0.99);
  EXPECT_DOUBLE_EQ(weighted.max_ms, 5.0);
  EXPECT_EQ(weighted.reps, 9);
  // Several runs a round (a turn's settled calls) count as one round: two far rounds are too
  // few to weigh.
  const TimingResult two_far_rounds =
      SummarizeRuns(runs, {0, 1, 2, 3, 4, 5, 5, 7, 8}, rounds, 0.25);
  EXPECT_EQ(two_far_rounds.far_rounds, 2);
  EXPECT_DOUBLE_EQ(two_far_rounds.far_weight, 0);
  EXPECT_DOUBLE_EQ(two_far_rounds.median_ms, 1.02);  // the plain median of the nine runs
}

// Contests of one contender that each saw mostly one placement: their near medians and their
// far medians are pooled and weighted, where the median contest alone would be a near time.
TEST(TimingPlacement, ContestsArePooledByPlacement) {
  auto contest = [](double median, double near, int near_rounds, double far, int far_rounds) {
    TimingResult t;
    t.median_ms = median;
    t.near_ms = near;
    t.near_rounds = near_rounds;
    t.far_ms = far;
    t.far_rounds = far_rounds;
    return t;
  };
  const std::vector<TimingResult> contests = {contest(0.233, 0.233, 12, 0, 0),
                                              contest(0.236, 0.234, 10, 0.31, 1),
                                              contest(0.30, 0.23, 1, 0.30, 11)};
  const TimingResult pooled = CombineContests(contests, 0.4);
  EXPECT_DOUBLE_EQ(pooled.near_ms, 0.233);  // the median of 0.233, 0.234 and 0.23
  EXPECT_DOUBLE_EQ(pooled.far_ms, 0.305);   // of 0.31 and 0.30
  EXPECT_EQ(pooled.near_rounds, 23);
  EXPECT_EQ(pooled.far_rounds, 12);
  EXPECT_NEAR(pooled.median_ms, 0.6 * 0.233 + 0.4 * 0.305, 1e-12);
  // One placement only: the median contest.
  const std::vector<TimingResult> near_only = {contest(0.233, 0.233, 12, 0, 0),
                                               contest(0.240, 0.240, 10, 0, 0),
                                               contest(0.236, 0.236, 9, 0, 0)};
  EXPECT_DOUBLE_EQ(CombineContests(near_only, 0.4).median_ms, 0.236);
  EXPECT_DOUBLE_EQ(CombineContests(near_only, 0.4).far_weight, 0);
}

// The process's tally of placements: its far share starts at a half and follows the rounds.
TEST(TimingPlacement, TheFarShareFollowsTheRoundsSeen) {
  PlacementTally tally;
  EXPECT_DOUBLE_EQ(tally.FarShare(), 0.5);
  tally.near_rounds = 68;
  tally.far_rounds = 30;
  EXPECT_DOUBLE_EQ(tally.FarShare(), 31.0 / 100);
}

// A thread that ran the same work slower than the other in most rounds (its core shared with
// work the guest does not see): kernels that split work evenly wait for it, so the timing is
// disturbed. A few slow rounds among quick ones are not.
TEST(TimingDisturbance, AThreadSlowerThanTheOtherInMostRoundsIsReported) {
  if (CoresDifferByDesign()) GTEST_SKIP() << "this machine's cores differ by design";
  const std::vector<std::vector<double>> steady = {{1, 1.01, 1.02, 1, 1.01, 1, 1}};
  TimingOptions o;
  ProbeLog probe;
  probe.delay_known = true;
  probe.thread_ms = 1000;
  probe.thread_skew = {1.35, 1.4, 1.02, 1.38, 1.33};
  const std::string reason = TimingDisturbance(steady, probe, o);
  EXPECT_NE(reason.find("1.35x slower"), std::string::npos) << reason;
  EXPECT_NE(reason.find("5 rounds"), std::string::npos) << reason;
  probe.thread_skew = {1.02, 1.6, 1.01, 1.03, 1.9};
  EXPECT_EQ(TimingDisturbance(steady, probe, o), "");
  probe.thread_skew = {1.5, 1.5};  // too few rounds to judge
  EXPECT_EQ(TimingDisturbance(steady, probe, o), "");
}

TEST(TimingDisturbance, TheSpeedProbeComparesTheThreads) {
  EXPECT_EQ(ThreadSpeedSkew(1), 0);
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "the probe needs two threads";
  const double skew = ThreadSpeedSkew(2);
  EXPECT_GE(skew, 1);  // the slowest over the fastest
}

TEST(TimingDisturbance, TheRoundTripProbeMeasuresTwoThreadsAndGivesUpOnABusyMachine) {
  EXPECT_EQ(ThreadRoundTripNs(1), 0);
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "the probe needs two threads";
  double ns = 0;  // 0 while other processes hold the cores (other tests may run beside this)
  for (int attempt = 0; attempt < 50 && ns == 0; ++attempt) ns = ThreadRoundTripNs(2);
  EXPECT_GT(ns, 0);
  EXPECT_LT(ns, 1e5);
  Spinners busy(3 * HardwareThreads());
  const auto start = std::chrono::steady_clock::now();
  ns = ThreadRoundTripNs(2);
  const double ms = MsSince(start);
  // Batches are called off, not finished at a scheduler's time slice per round trip.
  EXPECT_LT(ms, 250) << ns;
}

// A team smaller than asked for (OMP_THREAD_LIMIT=1, or timing inside another parallel region)
// still reports how long its threads waited for a CPU: the threads that are not there are not
// unknowns. Counted as unknown, the verdict fell to the probe region's time, which includes
// reading the counters, and every timing on such a machine was judged disturbed.
TEST(TimingDisturbance, ASmallerTeamThanAskedForStillKnowsItsWaits) {
  if (TimeRepeated([] {}, Short()).waited_share < 0)
    GTEST_SKIP() << "this kernel does not report run delays";
  std::vector<TimingResult> r;
  testing::WithTeamsCappedAtOne([&] {
    r = TimeInterleaved({ParallelWork, ParallelWork}, Short(), 5);
  });
  ASSERT_EQ(r.size(), 2u);
  for (const TimingResult& t : r) EXPECT_GE(t.waited_share, 0);
}

}  // namespace
}  // namespace sparsetune
