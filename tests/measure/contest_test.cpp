// Measuring schedules side by side (MeasureTogether) and alone (KernelRunner::Run,
// VerifyThenTime): one result per schedule in input order, whatever the shuffled groups, with
// the reason when there is no time; runs over the limit are reported as timed out.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cli/cli_support.hpp"
#include "ir/kernels.hpp"
#include "measure/contest.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

TimingOptions Quick() {
  TimingOptions t;
  t.warmup_runs = 1;
  t.warmup_ms = 0;
  t.min_reps = 3;
  t.max_reps = 3;
  t.min_total_ms = 0;
  return t;
}

// The steps a contest reports: the last done and total counts, each done within its total.
struct StepCounts {
  size_t done = 0, total = 0;
  void Watch(ContestObserver& observer) {
    observer.after_step = [this](size_t d, size_t t) {
      EXPECT_LE(d, t);
      done = d;
      total = t;
    };
  }
};

class Contest : public ::testing::Test {
 protected:
  Contest() : runner_(e_, matrix_, ResolveIndexSizes(e_, matrix_.dims, {}), DType::kF32, jit_) {}

  // FixedCSR, an invalid schedule, a balanced partition, partial sums, and FixedCSR with
  // another chunk (the same compiled kernel).
  std::vector<Schedule> Schedules() const {
    std::vector<Schedule> s(5, FixedCsrSchedule(e_));
    s[1] = Schedule::FromJson({{"loop_order", {"i"}}, {"format", {"i:U", "k:C"}}}, "invalid");
    s[2].partition = Partition::kBalanced;
    s[3].unroll = 4;
    s[4].chunk = 7;
    return s;
  }

  testing::TempDir dir_;
  Jit jit_{dir_.path() + "/jit"};
  Expression e_ = KernelExpression("spmv");
  CooTensor matrix_ = testing::RandomSparse({90, 70}, 900, 41);
  KernelRunner runner_;
};

TEST_F(Contest, OneResultPerScheduleInInputOrder) {
  const std::vector<Schedule> schedules = Schedules();
  ContestOptions options;
  options.run.timing = Quick();
  options.group_size = 2;  // three groups, drawn in a shuffle
  std::vector<size_t> verified_order;
  std::set<size_t> grouped;
  size_t last_total = 0, steps = 0;
  ContestObserver observer;
  observer.before_verify = [&](size_t s) { verified_order.push_back(s); };
  observer.before_group = [&](const std::vector<size_t>& members) {
    for (size_t s : members) EXPECT_TRUE(grouped.insert(s).second) << s << " timed twice";
  };
  observer.after_step = [&](size_t done, size_t total) {
    EXPECT_EQ(done, ++steps);
    last_total = total;
  };
  const std::vector<RunResult> results =
      MeasureTogether(runner_, schedules, jit_, options, observer);

  ASSERT_EQ(results.size(), schedules.size());
  for (size_t s = 0; s < schedules.size(); ++s) {
    EXPECT_EQ(results[s].schedule_json, schedules[s].CanonicalJson()) << s;
    if (s == 1) continue;
    EXPECT_TRUE(results[s].ok()) << s << ": " << results[s].message;
    EXPECT_TRUE(results[s].verified) << s;
    // Three rounds, each turn timing one call or more once the kernel settled.
    EXPECT_GE(results[s].time.reps, 3) << s;
    EXPECT_LE(results[s].time.reps, 3 * kMaxTurnCalls) << s;
    EXPECT_FALSE(results[s].time.timed_out) << s;
    EXPECT_LE(results[s].time.min_ms, results[s].time.median_ms) << s;
    EXPECT_LE(results[s].time.median_ms, results[s].time.max_ms) << s;
  }
  EXPECT_EQ(results[1].status, RunStatus::kInvalidSchedule);
  EXPECT_NE(results[1].message.find("uses index k but no loop k encloses it"), std::string::npos)
      << results[1].message;
  EXPECT_EQ(results[1].time.reps, 0);
  // Every schedule verified once, the valid ones timed once, and the steps counted: five
  // verifications and three groups.
  EXPECT_EQ(std::set<size_t>(verified_order.begin(), verified_order.end()).size(), 5u);
  EXPECT_EQ(verified_order.size(), 5u);
  EXPECT_EQ(grouped, (std::set<size_t>{0, 2, 3, 4}));
  EXPECT_EQ(steps, 8u);
  EXPECT_EQ(last_total, 8u);
  // The same source is compiled once: FixedCSR with chunk 7 reuses the kernel of chunk 128.
  EXPECT_EQ(results[4].source_path, results[0].source_path);
}

// Groups are timed one after another on a machine whose speed drifts: the drift anchor is
// timed beside every group (not as a member of one), and each group's times are scaled alike.
TEST_F(Contest, TheDriftAnchorIsTimedInEveryGroup) {
  const std::vector<Schedule> schedules = Schedules();
  ContestOptions options;
  options.run.timing = Quick();
  options.group_size = 2;  // {2, 3, 4} in two groups
  options.drift_anchor = 0;
  std::vector<std::vector<size_t>> groups;
  ContestObserver observer;
  observer.before_group = [&](const std::vector<size_t>& members) { groups.push_back(members); };
  StepCounts steps;
  steps.Watch(observer);
  const std::vector<RunResult> results =
      MeasureTogether(runner_, schedules, jit_, options, observer);
  ASSERT_EQ(results.size(), schedules.size());
  EXPECT_EQ(results[1].status, RunStatus::kInvalidSchedule);
  for (size_t s : {0, 2, 3, 4}) {
    EXPECT_TRUE(results[s].ok()) << s << ": " << results[s].message;
    EXPECT_TRUE(results[s].verified) << s;
    EXPECT_GE(results[s].time.reps, 3) << s;
    EXPECT_GT(results[s].time.drift_scale, 0) << s;
  }
  EXPECT_EQ(results[0].time.drift_scale, 1);
  ASSERT_EQ(groups.size(), 2u);
  std::set<size_t> members;
  for (const auto& group : groups) {
    for (size_t s : group) {
      EXPECT_NE(s, 0u) << "the anchor is no group's member";
      members.insert(s);
      EXPECT_EQ(results[s].time.drift_scale, results[group.front()].time.drift_scale) << s;
    }
  }
  EXPECT_EQ(members, (std::set<size_t>{2, 3, 4}));
  // Five verifications (the anchor's first) and two groups.
  EXPECT_EQ(steps.done, 7u);
  EXPECT_EQ(steps.total, 7u);
  // What the report shows: the largest scale of a verified time, either way from 1.
  double largest = 0;
  for (size_t s : {2, 3, 4}) {
    const double scale = results[s].time.drift_scale;
    largest = std::max(largest, std::max(scale, 1 / scale) - 1);
  }
  EXPECT_DOUBLE_EQ(LargestDriftCorrection(results), largest);
}

// The anchor's time in a disturbed group is no reference: the members of the steady groups are
// scaled to the anchor's median among those alone, and the anchor reports one of their timings.
TEST(DriftCorrection, TheReferenceComesFromTheUndisturbedGroups) {
  std::vector<TimingResult> anchor_times(3);
  anchor_times[0].median_ms = 10;
  anchor_times[1].median_ms = 30;  // a disturbed group, the anchor three times slower there
  anchor_times[1].disturbed = true;
  anchor_times[2].median_ms = 12;
  std::vector<RunResult> results(4);
  for (RunResult& r : results) r.time.median_ms = 5;
  const std::vector<size_t> group_of{SIZE_MAX, 0, 1, 2};
  CorrectDrift(0, anchor_times, group_of, results);
  // Of the steady 10 and 12, the slower middle: 12 ms is the reference.
  EXPECT_DOUBLE_EQ(results[0].time.median_ms, 12);
  EXPECT_DOUBLE_EQ(results[1].time.median_ms, 5 * 12.0 / 10);
  EXPECT_DOUBLE_EQ(results[2].time.median_ms, 5 * 12.0 / 30);
  EXPECT_DOUBLE_EQ(results[3].time.median_ms, 5);
  EXPECT_FALSE(results[0].time.disturbed);

  // All disturbed: the median over all of them, and the anchor reports a disturbed timing.
  for (TimingResult& t : anchor_times) t.disturbed = true;
  std::vector<RunResult> all(4);
  for (RunResult& r : all) r.time.median_ms = 5;
  CorrectDrift(0, anchor_times, group_of, all);
  EXPECT_DOUBLE_EQ(all[0].time.median_ms, 12);
  EXPECT_TRUE(all[0].time.disturbed);
}

TEST(DriftCorrection, CountsAScaleEitherWayFromOneAndIgnoresFailedRuns) {
  std::vector<RunResult> results(3);
  for (RunResult& r : results) r.status = RunStatus::kOk;
  EXPECT_EQ(LargestDriftCorrection(results), 0);
  results[0].time.drift_scale = 0.8;
  results[1].time.drift_scale = 1.1;
  EXPECT_DOUBLE_EQ(LargestDriftCorrection(results), 0.25);
  results[2].status = RunStatus::kTimedOut;
  results[2].time.drift_scale = 3;
  EXPECT_DOUBLE_EQ(LargestDriftCorrection(results), 0.25);
  EXPECT_EQ(DriftScale(10, 10.2), 1);  // within the anchor's own noise
  EXPECT_DOUBLE_EQ(DriftScale(10, 12.5), 0.8);
  results[0].time.median_ms = 10;
  results[1].time.median_ms = 12.5;
  results[2].time.median_ms = 20;
  EXPECT_DOUBLE_EQ(DriftScale(results[0], results[1]), 0.8);
  EXPECT_EQ(DriftScale(results[0], results[2]), 1);  // a run that failed is no reference
}

// Operands too large to hold a full group are timed in smaller groups, not all at once.
TEST_F(Contest, AMemoryBudgetClosesGroupsEarly) {
  const std::vector<Schedule> schedules = Schedules();
  ContestOptions options;
  options.run.timing = Quick();
  options.group_size = 16;
  options.memory_budget_bytes = 1;  // less than any packed operand: one kernel per group
  std::vector<size_t> group_sizes;
  ContestObserver observer;
  observer.before_group = [&](const std::vector<size_t>& members) {
    group_sizes.push_back(members.size());
  };
  StepCounts steps;
  steps.Watch(observer);
  const std::vector<RunResult> results =
      MeasureTogether(runner_, schedules, jit_, options, observer);
  for (size_t s : {0, 2, 3, 4}) {
    EXPECT_TRUE(results[s].ok()) << s << ": " << results[s].message;
    // Three rounds, each turn timing one call or more once the kernel settled.
    EXPECT_GE(results[s].time.reps, 3) << s;
    EXPECT_LE(results[s].time.reps, 3 * kMaxTurnCalls) << s;
  }
  EXPECT_EQ(group_sizes, (std::vector<size_t>{1, 1, 1, 1}));
  EXPECT_EQ(steps.done, steps.total);

  // With room for all of them, one group.
  options.memory_budget_bytes = int64_t(1) << 40;
  group_sizes.clear();
  MeasureTogether(runner_, schedules, jit_, options, observer);
  EXPECT_EQ(group_sizes, (std::vector<size_t>{4}));
  EXPECT_EQ(steps.done, steps.total);
}

TEST_F(Contest, RunsOverTheLimitAreReportedAsTimedOut) {
  // No call of any kernel takes less than a picosecond.
  const double limit = 1e-9;
  const std::vector<Schedule> schedules = Schedules();
  ContestOptions options;
  options.run.timing = Quick();
  options.run.timing.max_ms_per_run = limit;
  const std::vector<RunResult> results = MeasureTogether(runner_, schedules, jit_, options);
  ASSERT_EQ(results.size(), schedules.size());
  for (size_t s : {0, 2, 3, 4}) {
    EXPECT_EQ(results[s].status, RunStatus::kTimedOut) << s << ": " << results[s].message;
    EXPECT_TRUE(results[s].verified) << s;  // correct, only too slow
    EXPECT_NE(results[s].message.find("the verifying run took"), std::string::npos);
  }
  EXPECT_EQ(results[1].status, RunStatus::kInvalidSchedule);

  // Alone: the first timed run passes the limit.
  RunOptions run;
  run.timing = options.run.timing;
  const RunResult alone = runner_.Run(schedules[0], run);
  EXPECT_EQ(alone.status, RunStatus::kTimedOut);
  EXPECT_TRUE(alone.time.timed_out);
  EXPECT_EQ(alone.time.reps, 1);
  EXPECT_NE(alone.message.find("over the limit"), std::string::npos) << alone.message;
  // Verify-then-time stops at the verifying run. (A fresh runner: it subtracts the pack time,
  // which must be this run's own.)
  KernelRunner fresh(e_, matrix_, runner_.sizes(), DType::kF32, jit_);
  const RunResult checked = VerifyThenTime(fresh, schedules[0], run);
  EXPECT_EQ(checked.status, RunStatus::kTimedOut);
  EXPECT_NE(checked.message.find("the verifying run took"), std::string::npos) << checked.message;
  EXPECT_EQ(checked.time.reps, 0);
}

TEST_F(Contest, RunAloneVerifiesAndTimes) {
  RunOptions run;
  run.timing = Quick();
  const RunResult r = runner_.Run(FixedCsrSchedule(e_), run);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(r.time.reps, 3);
  EXPECT_FALSE(r.nest.empty());
  // Not verifying leaves verified false but still times.
  run.verify = false;
  const RunResult unchecked = runner_.Run(FixedCsrSchedule(e_), run);
  EXPECT_TRUE(unchecked.ok());
  EXPECT_FALSE(unchecked.verified);
  EXPECT_EQ(unchecked.time.reps, 3);
  // A format the padding cap refuses: a dense level over a mostly empty dimension.
  RunOptions capped = run;
  capped.padding_cap = 1.0;
  const RunResult refused = runner_.Run(
      Schedule::FromJson({{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:U"}}}, "dense"),
      capped);
  EXPECT_EQ(refused.status, RunStatus::kFormatRefused) << refused.message;
  EXPECT_FALSE(refused.message.empty());
}

}  // namespace
}  // namespace sparsetune
