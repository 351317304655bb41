// A busy machine is noticed: with threads of this test spinning beside the timing (more than
// there are CPUs), the timing is judged disturbed, made again up to its retries and reported
// as disturbed, with the reason. Only the verdict under heavy deliberate load is checked, never
// a time, and never that an unloaded run is quiet (other work may share the machine).
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <thread>
#include <vector>

#include "base/threads.hpp"
#include "measure/timing.hpp"
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
// Runs whose median is far above their fastest, with no thread waiting for a CPU (they sleep):
// where the kernel reports waits that is the kernel's own spread and the timing stands; where it
// does not, the spread is all there is to go by, and it is disturbed.
TEST(TimingDisturbance, AMedianFarAboveTheFastestRunCountsOnlyWithWaitsOrWhereNoneAreKnown) {
  int call = 0;
  auto uneven = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(++call % 4 == 0 ? 1 : 5));
  };
  TimingOptions o = Short();
  o.disturbance_retries = 2;
  const TimingResult r = TimeRepeated(uneven, o);
  if (r.waited_share >= 0) {
    EXPECT_FALSE(r.disturbed) << r.disturbance;
    EXPECT_EQ(r.attempts, 1);
  } else {
    EXPECT_TRUE(r.disturbed);
    EXPECT_EQ(r.attempts, 3);
    EXPECT_NE(r.disturbance.find("median run"), std::string::npos) << r.disturbance;
  }
}

}  // namespace
}  // namespace sparsetune
