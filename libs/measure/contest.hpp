#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ir/schedule.hpp"
#include "measure/runner.hpp"

namespace sparsetune {

struct ContestOptions {
  RunOptions run;  // run.timing is the protocol; run.timing.max_ms_per_run limits every run
  int compile_jobs = 2;
  // Contenders timed together; more keeps more packed operands and outputs in memory at once.
  int group_size = 16;
  // A group also closes early when its packed operands and outputs would pass this many bytes
  // (0: half the memory available when the contest starts), so large tensors are timed in
  // smaller groups instead of exhausting memory.
  int64_t memory_budget_bytes = 0;
  uint64_t seed = 1;  // which contenders share a group, and the order of their rounds
  // Schedules timed in full whatever run.timing.drop_slower_than says (TimeInterleaved).
  std::vector<size_t> timed_in_full;
  // A schedule timed in every group when there are several (then kept prepared throughout).
  // Groups are timed one after another, and a virtual machine's speed drifts between them
  // (every contender 10-35% slower a minute later, memory-bound kernels alike), which
  // interleaving within a group cannot cancel. Each group's times are scaled by DriftScale of the
  // anchor's median over the groups (over the undisturbed ones, when any is) and its median in
  // that group.
  std::optional<size_t> drift_anchor;
};

// A group whose anchor ran within this share of its typical time is left alone: the anchor's
// own noise.
constexpr double kDriftTolerance = 0.03;

// The factor that brings times measured beside an anchor that ran `anchor_ms` to where the
// anchor ran `reference_ms`: their ratio, or 1 when they are within kDriftTolerance.
double DriftScale(double reference_ms, double anchor_ms);
// The same for the anchor's result then (`reference`) and now, measured later: 1 unless both ran.
double DriftScale(const RunResult& reference, const RunResult& anchor);

// A verified time scaled for drift (its median, fastest and slowest run; drift_scale says by
// how much in all).
void ScaleForDrift(RunResult& result, double scale);

// Scales the times of each group's members (group_of[s], SIZE_MAX for none) by DriftScale of
// the drift anchor's median over the groups and its median in that group (anchor_times[g]);
// the anchor's result becomes its timing in the group of median speed. Groups whose timing was
// disturbed count only when all were: a caller measures those again beside the anchor and
// scales them to its undisturbed time.
void CorrectDrift(size_t anchor, const std::vector<TimingResult>& anchor_times,
                  const std::vector<size_t>& group_of, std::vector<RunResult>& results);

// How far the largest drift correction among verified results moved a time, as a share of it
// (a scale of 0.8 or of 1.25 both count as 0.25): 0 when none was scaled.
double LargestDriftCorrection(const std::vector<RunResult>& results);

// Measures schedules of one operand side by side, fairly: every schedule is lowered, packed
// and generated, the distinct kernels are compiled `compile_jobs` at a time, each is verified
// against the reference (a verifying call slower than max_ms_per_run times out there), and the
// verified ones are timed together with TimeInterleaved, in groups of group_size drawn in a
// seeded shuffle (smaller when the memory budget says so), with the drift anchor, if any, in
// each. Result i belongs to schedules[i]: a verified time (corrected for drift), or the status
// and the reason it has none.
//
// The observer hears of each step: before_verify(s) before the first call of schedules[s]'s
// kernel (a kernel that never returns hangs there), before_group(members) before a group is
// timed, and after_step(done, total) after each verification and each group.
struct ContestObserver {
  std::function<void(size_t schedule)> before_verify;
  std::function<void(const std::vector<size_t>& schedules)> before_group;
  std::function<void(size_t done, size_t total)> after_step;
};

std::vector<RunResult> MeasureTogether(KernelRunner& runner, const std::vector<Schedule>& schedules,
                                       Jit& jit, const ContestOptions& options,
                                       const ContestObserver& observer = {});

}  // namespace sparsetune
