// The timing protocol: how many warm-up and timed runs it makes, what it reports, and that a
// run over the limit stops the timing. Runs are counted, never judged by their length: the
// only durations compared are each run's own, measured inside it, against the protocol's.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>
#include <stdexcept>
#include <thread>

#include "base/threads.hpp"
#include "measure/timing.hpp"

namespace sparsetune {
namespace {

using Clock = std::chrono::steady_clock;

// A run far over the limit that the slow runs below are measured against: long enough that
// a descheduled fast run does not pass it.
constexpr double kLimitMs = 250;
void SleepPastTheLimit() {
  std::this_thread::sleep_for(std::chrono::milliseconds(int(2 * kLimitMs)));
}

TimingOptions Counts(int warmup, int min_reps, int max_reps) {
  TimingOptions o;
  o.warmup_runs = warmup;
  o.warmup_ms = 0;
  o.min_reps = min_reps;
  o.max_reps = max_reps;
  o.min_total_ms = 0;
  // Counted runs: a disturbed timing made again would add runs (TimingDisturbance covers it),
  // and so would settling each turn (covered below).
  o.disturbance_retries = 0;
  o.settle_ms = 0;
  return o;
}

TEST(MedianContestIndex, TheMiddleTimeCountsAndTheSlowerMiddleOfAnEvenCount) {
  EXPECT_EQ(MedianContestIndex({5.0}), 0u);
  EXPECT_EQ(MedianContestIndex({3.0, 1.0, 2.0}), 2u);
  EXPECT_EQ(MedianContestIndex({1.0, 9.0, 4.0, 2.0}), 2u);  // 4, not 2: an unlucky one counts
  EXPECT_THROW(MedianContestIndex({}), std::invalid_argument);
}

TEST(TimeRepeated, MakesTheWarmUpAndTimedRunsAskedFor) {
  int calls = 0;
  const TimingResult r = TimeRepeated([&] { ++calls; }, Counts(3, 7, 50));
  EXPECT_EQ(calls, 3 + 7);
  EXPECT_EQ(r.reps, 7);
  EXPECT_FALSE(r.timed_out);
  // More warm-up runs than the time-based cap of 10 are still made.
  calls = 0;
  EXPECT_EQ(TimeRepeated([&] { ++calls; }, Counts(12, 2, 2)).reps, 2);
  EXPECT_EQ(calls, 12 + 2);
}

TEST(TimeRepeated, WarmUpWaitsForItsTimeUpToTenRuns) {
  int calls = 0;
  TimingOptions o = Counts(1, 2, 2);
  o.warmup_ms = 1e9;
  TimeRepeated([&] { ++calls; }, o);
  EXPECT_EQ(calls, 10 + 2);
}

TEST(TimeRepeated, RepeatsUntilTheMinimumTimeOrTheMaximumCount) {
  int calls = 0;
  TimingOptions o = Counts(1, 3, 6);
  o.min_total_ms = 1e9;
  EXPECT_EQ(TimeRepeated([&] { ++calls; }, o).reps, 6);
  EXPECT_EQ(calls, 1 + 6);
}

TEST(TimeRepeated, MedianMinAndMaxAgreeWithTheRuns) {
  // Runs of uneven length; each measures itself from the inside, which its timed sample
  // includes, so every order statistic of the samples is at least that of the inner times.
  const int warmup = 2, reps = 9;
  std::vector<double> inner;
  int calls = 0;
  const TimingResult r = TimeRepeated(
      [&] {
        const auto start = Clock::now();
        std::this_thread::sleep_for(std::chrono::microseconds(100 * (1 + (calls * 7) % 5)));
        if (++calls > warmup)
          inner.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      },
      Counts(warmup, reps, reps));
  ASSERT_EQ(r.reps, reps);
  ASSERT_EQ(inner.size(), size_t(reps));
  std::sort(inner.begin(), inner.end());
  EXPECT_LE(r.min_ms, r.median_ms);
  EXPECT_LE(r.median_ms, r.max_ms);
  EXPECT_GE(r.min_ms, inner.front());
  EXPECT_GE(r.median_ms, inner[reps / 2]);
  EXPECT_GE(r.max_ms, inner.back());
  EXPECT_GT(r.min_ms, 0);
}

TEST(TimeRepeated, AWarmUpRunOverTheLimitStopsTheTiming) {
  int calls = 0;
  TimingOptions o = Counts(3, 5, 5);
  o.max_ms_per_run = kLimitMs;
  const TimingResult r = TimeRepeated(
      [&] {
        ++calls;
        SleepPastTheLimit();
      },
      o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.reps, 1);
  EXPECT_GT(r.max_ms, kLimitMs);  // the run that passed it
}

TEST(TimeRepeated, ATimedRunOverTheLimitStopsTheTiming) {
  // Fast in warm-up and the first timed runs, then over the limit.
  int calls = 0;
  TimingOptions o = Counts(2, 20, 20);
  o.max_ms_per_run = kLimitMs;
  const TimingResult r = TimeRepeated(
      [&] {
        if (++calls > 4) SleepPastTheLimit();
      },
      o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LE(calls, 5);  // no run after the first one over the limit
  EXPECT_GT(r.max_ms, kLimitMs);
}

// Which contender each call ran, in order.
struct CallLog {
  std::vector<int> order;
  std::vector<std::function<void()>> Contenders(int n, int slow = -1) {
    std::vector<std::function<void()>> runs;
    for (int c = 0; c < n; ++c) {
      runs.push_back([this, c, slow] {
        order.push_back(c);
        if (c == slow) SleepPastTheLimit();
      });
    }
    return runs;
  }
  int Calls(int c) const { return static_cast<int>(std::count(order.begin(), order.end(), c)); }
};

TEST(TimeInterleaved, OneResultPerContenderInInputOrder) {
  CallLog log;
  TimingOptions o = Counts(2, 5, 5);
  o.max_ms_per_run = kLimitMs;
  const std::vector<TimingResult> r = TimeInterleaved(log.Contenders(4, /*slow=*/2), o, 7);
  ASSERT_EQ(r.size(), 4u);
  for (int c : {0, 1, 3}) {
    EXPECT_FALSE(r[c].timed_out) << c;
    EXPECT_EQ(r[c].reps, 5) << c;
    EXPECT_EQ(log.Calls(c), 2 + 5) << c;
    EXPECT_LE(r[c].min_ms, r[c].median_ms);
    EXPECT_LE(r[c].median_ms, r[c].max_ms);
  }
  // The slow one is reported at its own place, and leaves after its first run.
  EXPECT_TRUE(r[2].timed_out);
  EXPECT_EQ(r[2].reps, 1);
  EXPECT_EQ(log.Calls(2), 1);
  EXPECT_GT(r[2].max_ms, kLimitMs);
}

TEST(TimeInterleaved, EveryRoundRunsEachContenderOnceInAShuffledOrder) {
  const int n = 4, warmup = 2, rounds = 6;
  auto run = [&](uint64_t seed) {
    CallLog log;
    const auto r = TimeInterleaved(log.Contenders(n), Counts(warmup, rounds, rounds), seed);
    for (const auto& t : r) EXPECT_EQ(t.reps, rounds);
    return log.order;
  };
  const std::vector<int> order = run(3);
  ASSERT_EQ(order.size(), size_t(n * (warmup + rounds)));
  // Warm-up: each contender's runs together, in input order.
  for (int k = 0; k < n * warmup; ++k) EXPECT_EQ(order[k], k / warmup);
  // Then rounds: each a permutation of the contenders, not always the same one.
  std::set<std::vector<int>> permutations;
  for (int round = 0; round < rounds; ++round) {
    std::vector<int> r(order.begin() + n * warmup + n * round,
                       order.begin() + n * warmup + n * (round + 1));
    permutations.insert(r);
    std::sort(r.begin(), r.end());
    EXPECT_EQ(r, (std::vector<int>{0, 1, 2, 3})) << "round " << round;
  }
  EXPECT_GT(permutations.size(), 1u);
  // The seed fixes the order.
  EXPECT_EQ(run(3), order);
  EXPECT_NE(run(4), order);
}

TEST(TimeInterleaved, RoundsContinueUntilTheMinimumTimeOrTheMaximumCount) {
  CallLog log;
  TimingOptions o = Counts(1, 2, 5);
  o.min_total_ms = 1e9;
  for (const auto& t : TimeInterleaved(log.Contenders(3), o)) EXPECT_EQ(t.reps, 5);
  EXPECT_EQ(log.order.size(), size_t(3 * (1 + 5)));
  // More warm-up runs than the time-based cap of 10 are still made.
  CallLog many;
  for (const auto& t : TimeInterleaved(many.Contenders(2), Counts(12, 1, 1))) EXPECT_EQ(t.reps, 1);
  EXPECT_EQ(many.Calls(0), 12 + 1);
  EXPECT_EQ(many.Calls(1), 12 + 1);
}

// A kernel whose first call after the others ran is slow (its operands were evicted) is timed
// at the speed a loop calling it sees, because each turn settles it first; with settling off,
// its first calls are what is timed.
TEST(TimeInterleaved, EachTurnTimesTheContenderAfterItSettles) {
  int last = -1;
  std::vector<std::function<void()>> runs;
  for (int c = 0; c < 3; ++c) {
    runs.push_back([&last, c] {
      // Cold right after another contender: 3 ms; warm: 0.2 ms.
      std::this_thread::sleep_for(std::chrono::microseconds(last == c ? 200 : 3000));
      last = c;
    });
  }
  TimingOptions o = Counts(1, 4, 4);
  o.settle_ms = 2;
  for (const TimingResult& t : TimeInterleaved(runs, o, 5)) {
    EXPECT_LT(t.median_ms, 1.5);
    EXPECT_GE(t.reps, 4);
  }
  o.settle_ms = 0;
  for (const TimingResult& t : TimeInterleaved(runs, o, 5)) EXPECT_GE(t.median_ms, 2.5);
}

// A contender far behind the fastest leaves after its first (warm-up) run, with that run as
// its result; the others run the full count. Without the option everyone does.
TEST(TimeInterleaved, DropsContendersFarBehindTheFastest) {
  // Sleeps, not empty calls: the rule compares run times, which must be steady enough that
  // only the slow contender is 3x behind (30x here).
  std::vector<int> calls(3, 0);
  std::vector<std::function<void()>> runs;
  for (int c = 0; c < 3; ++c) {
    runs.push_back([&calls, c] {
      ++calls[c];
      std::this_thread::sleep_for(std::chrono::milliseconds(c == 1 ? 300 : 10));
    });
  }
  TimingOptions o = Counts(1, 6, 6);
  o.drop_slower_than = 3;
  const std::vector<TimingResult> r = TimeInterleaved(runs, o, 3);
  EXPECT_EQ(calls[1], 1);
  EXPECT_EQ(r[1].reps, 1);
  EXPECT_GE(r[1].median_ms, 300);
  EXPECT_FALSE(r[1].timed_out);
  EXPECT_EQ(r[0].reps, 6);
  EXPECT_EQ(r[2].reps, 6);
  calls.assign(3, 0);
  o = Counts(1, 2, 2);
  EXPECT_EQ(TimeInterleaved(runs, o, 3)[1].reps, 2);
  EXPECT_EQ(calls[1], 1 + 2);
}

// A baseline marked to be timed in full stays in every round however far behind it is: its
// median is reported and compared with its twin's.
TEST(TimeInterleaved, ContendersMarkedToBeTimedInFullAreNeverDropped) {
  std::vector<int> calls(3, 0);
  std::vector<std::function<void()>> runs;
  for (int c = 0; c < 3; ++c) {
    runs.push_back([&calls, c] {
      ++calls[c];
      std::this_thread::sleep_for(std::chrono::milliseconds(c == 1 ? 100 : 3));
    });
  }
  TimingOptions o = Counts(1, 6, 6);
  o.drop_slower_than = 3;
  const std::vector<TimingResult> r = TimeInterleaved(runs, o, 3, {false, true, false});
  EXPECT_EQ(calls[1], calls[0]);
  EXPECT_EQ(r[1].reps, 6);
  EXPECT_GE(r[1].median_ms, 100);
}

// A short kernel whose first (cold) call is far behind the fastest, but whose steady calls are
// not, is timed in full: only calls too long to settle are judged by their first run.
TEST(TimeInterleaved, ShortContendersAreNotDroppedForASlowFirstCall) {
  bool first = true;
  std::vector<std::function<void()>> runs = {
      [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); },
      [&first] {
        std::this_thread::sleep_for(std::chrono::milliseconds(first ? 6 : 1));
        first = false;
      }};
  TimingOptions o = Counts(1, 6, 6);
  o.drop_slower_than = 3;
  o.settle_ms = 2;  // calls over 4 * 2 ms are too long to settle
  const std::vector<TimingResult> r = TimeInterleaved(runs, o, 3);
  EXPECT_GE(r[1].reps, 6);
  EXPECT_LT(r[1].median_ms, 3);
}

// Pinning the timing threads narrows the main thread to one CPU; the machine row and every
// thread count after it must still see all the CPUs the process may use, and each thread must
// land on one of those.
TEST(PinOpenMpThreads, KeepsTheThreadCountAndStaysOnTheAllowedCpus) {
  const int before = HardwareThreads();
  const std::set<int> allowed(AllowedCpus().begin(), AllowedCpus().end());
  PinOpenMpThreads();
  EXPECT_EQ(HardwareThreads(), before);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) {
      EXPECT_TRUE(allowed.count(cpu)) << "pinned to CPU " << cpu;
    }
  }
}

}  // namespace
}  // namespace sparsetune
