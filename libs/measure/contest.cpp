#include "measure/contest.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>

#include "measure/operands.hpp"

namespace sparsetune {

double DriftScale(double reference_ms, double anchor_ms) {
  if (!(reference_ms > 0) || !(anchor_ms > 0)) return 1;
  const bool drifted =
      std::max(reference_ms, anchor_ms) > (1 + kDriftTolerance) * std::min(reference_ms, anchor_ms);
  return drifted ? reference_ms / anchor_ms : 1;
}

double DriftScale(const RunResult& reference, const RunResult& anchor) {
  return reference.ok() && anchor.ok() ? DriftScale(reference.time.median_ms, anchor.time.median_ms)
                                       : 1;
}

void ScaleForDrift(RunResult& result, double scale) {
  if (!result.ok()) return;
  result.time.median_ms *= scale;
  result.time.min_ms *= scale;
  result.time.max_ms *= scale;
  result.time.near_ms *= scale;
  result.time.far_ms *= scale;
  result.time.drift_scale *= scale;
}

void CorrectDrift(size_t anchor, const std::vector<TimingResult>& anchor_times,
                  const std::vector<size_t>& group_of, std::vector<RunResult>& results) {
  if (anchor_times.empty()) return;
  std::vector<size_t> counted;
  for (size_t g = 0; g < anchor_times.size(); ++g) {
    if (!anchor_times[g].disturbed) counted.push_back(g);
  }
  if (counted.empty()) {
    for (size_t g = 0; g < anchor_times.size(); ++g) counted.push_back(g);
  }
  std::vector<double> counted_medians;
  for (size_t g : counted) counted_medians.push_back(anchor_times[g].median_ms);
  const size_t typical = counted[MedianContestIndex(counted_medians)];
  std::vector<double> medians;
  for (const TimingResult& t : anchor_times) medians.push_back(t.median_ms);
  const double reference = medians[typical];
  results[anchor].time = anchor_times[typical];
  for (const TimingResult& t : anchor_times) {
    if (!t.timed_out) continue;
    results[anchor].status = RunStatus::kTimedOut;
    results[anchor].message = "a run took " + std::to_string(t.max_ms) + " ms, over the limit";
  }
  for (size_t s = 0; s < results.size(); ++s) {
    if (s == anchor || group_of[s] == SIZE_MAX) continue;
    ScaleForDrift(results[s], DriftScale(reference, medians[group_of[s]]));
  }
}

double LargestDriftCorrection(const std::vector<RunResult>& results) {
  double largest = 0;
  for (const RunResult& r : results) {
    const double scale = r.time.drift_scale;
    if (r.ok() && scale > 0) largest = std::max(largest, std::max(scale, 1 / scale) - 1);
  }
  return largest;
}

std::vector<RunResult> MeasureTogether(KernelRunner& runner, const std::vector<Schedule>& schedules,
                                       Jit& jit, const ContestOptions& options,
                                       const ContestObserver& observer) {
  const size_t n = schedules.size();
  std::vector<RunResult> results(n);
  // Work units: each verification, then each group timed.
  size_t done = 0;
  auto report = [&](size_t total) {
    if (observer.after_step) observer.after_step(done, total);
  };

  // Compile the distinct kernels up front, several at once: compiling dominates cold runs.
  std::vector<std::string> sources;
  std::map<std::string, size_t> seen;
  for (size_t s = 0; s < n; ++s) {
    std::string error;
    std::string source = runner.Source(schedules[s], options.run, &error);
    if (source.empty()) continue;  // Prepare reports the reason below
    if (seen.emplace(source, sources.size()).second) sources.push_back(std::move(source));
  }
  jit.CompileAll(sources, options.compile_jobs);

  RunOptions verify = options.run;
  verify.verify = true;
  const double limit = options.run.timing.max_ms_per_run;
  const size_t group = static_cast<size_t>(std::max(1, options.group_size));
  const int64_t budget =
      options.memory_budget_bytes > 0 ? options.memory_budget_bytes : AvailableMemoryBytes() / 2;
  size_t groups = 0;
  size_t grouped = n;  // the schedules timed in groups (all but a drift anchor)
  // Verifications plus groups, the groups still to come counted at full size.
  auto total_after = [&](size_t next) { return n + groups + (grouped - next + group - 1) / group; };

  // Groups drawn in a seeded shuffle, so no schedule is always timed beside the same ones.
  // A group is prepared, verified and timed, then released: only one group's packed operands
  // and outputs are held at a time. It closes early when one more kernel the size of its
  // largest would pass the memory budget.
  std::vector<size_t> order(n);
  for (size_t s = 0; s < n; ++s) order[s] = s;
  std::mt19937_64 rng(options.seed);
  std::shuffle(order.begin(), order.end(), rng);
  PinOpenMpThreads();

  // The drift anchor, when the schedules need several groups: prepared once, timed in each.
  PreparedKernel anchor;
  bool anchored = false;
  std::vector<TimingResult> anchor_times;     // per group
  std::vector<size_t> group_of(n, SIZE_MAX);  // the group each timed schedule was timed in
  if (options.drift_anchor && *options.drift_anchor < n && n > group) {
    const size_t a = *options.drift_anchor;
    order.erase(std::find(order.begin(), order.end(), a));
    grouped = order.size();
    if (observer.before_verify) observer.before_verify(a);
    try {
      anchor = runner.Prepare(schedules[a], verify);
      results[a] = anchor.result();
      anchored = anchor.ok() && !(limit > 0 && anchor.result().verify_run_ms > limit);
    } catch (const std::exception& e) {
      results[a].status = RunStatus::kInvalidSchedule;
      results[a].message = e.what();
    }
    if (results[a].ok() && !anchored) {
      results[a].status = RunStatus::kTimedOut;
      results[a].message = "the verifying run took " +
                           std::to_string(anchor.result().verify_run_ms) +
                           " ms, over the limit of " + std::to_string(limit) + " ms";
    }
    ++done;
  }

  for (size_t next = 0; next < order.size();) {
    std::vector<PreparedKernel> prepared;
    std::vector<size_t> owner;  // prepared[k] measures schedules[owner[k]]
    const int64_t anchor_bytes = anchored ? anchor.bytes() : 0;
    int64_t held = anchor_bytes, largest = anchor_bytes;
    ++groups;
    for (size_t members = 0; next < order.size() && members < group; ++members) {
      if (!prepared.empty() && held + largest > budget) break;
      const size_t s = order[next++];
      PreparedKernel p;
      if (observer.before_verify) observer.before_verify(s);
      try {
        p = runner.Prepare(schedules[s], verify);
      } catch (const std::exception& e) {
        results[s].status = RunStatus::kInvalidSchedule;
        results[s].message = e.what();
        ++done;
        report(total_after(next));
        continue;
      }
      results[s] = p.result();
      if (p.ok() && limit > 0 && p.result().verify_run_ms > limit) {
        results[s].status = RunStatus::kTimedOut;
        results[s].message = "the verifying run took " + std::to_string(p.result().verify_run_ms) +
                             " ms, over the limit of " + std::to_string(limit) + " ms";
      } else if (p.ok()) {
        held += p.bytes();
        largest = std::max(largest, p.bytes());
        prepared.push_back(std::move(p));
        owner.push_back(s);
      }
      ++done;
      report(total_after(next));
    }
    if (observer.before_group && !owner.empty()) observer.before_group(owner);
    // The group's kernels alternate in shuffled rounds (TimeInterleaved).
    std::vector<std::function<void()>> runs;
    for (const PreparedKernel& p : prepared) runs.push_back([&p] { p.Call(); });
    std::vector<bool> in_full(owner.size());
    for (size_t k = 0; k < owner.size(); ++k)
      in_full[k] = std::count(options.timed_in_full.begin(), options.timed_in_full.end(), owner[k]);
    if (anchored && !prepared.empty()) {
      runs.push_back([&anchor] { anchor.Call(); });
      in_full.push_back(true);
    }
    const std::vector<TimingResult> times =
        TimeInterleaved(runs, options.run.timing, rng(), in_full);
    if (anchored && !prepared.empty()) anchor_times.push_back(times.back());
    for (size_t k = 0; k < prepared.size(); ++k) {
      RunResult& r = results[owner[k]];
      r.time = times[k];
      if (anchored) group_of[owner[k]] = anchor_times.size() - 1;
      if (r.time.timed_out) {
        r.status = RunStatus::kTimedOut;
        r.message = "a run took " + std::to_string(r.time.max_ms) + " ms, over the limit of " +
                    std::to_string(limit) + " ms";
      }
    }
    ++done;
    report(total_after(next));
  }
  // No group had a kernel to time: the anchor is timed alone.
  if (anchored && anchor_times.empty())
    anchor_times =
        TimeInterleaved({[&anchor] { anchor.Call(); }}, options.run.timing, rng(), {true});
  if (anchored) CorrectDrift(*options.drift_anchor, anchor_times, group_of, results);
  return results;
}

}  // namespace sparsetune
