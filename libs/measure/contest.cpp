#include "measure/contest.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <string>

#include "measure/operands.hpp"

namespace sparsetune {

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
  // Verifications plus groups, the groups still to come counted at full size.
  auto total_after = [&](size_t next) { return n + groups + (n - next + group - 1) / group; };

  // Groups drawn in a seeded shuffle, so no schedule is always timed beside the same ones.
  // A group is prepared, verified and timed, then released: only one group's packed operands
  // and outputs are held at a time. It closes early when one more kernel the size of its
  // largest would pass the memory budget.
  std::vector<size_t> order(n);
  for (size_t s = 0; s < n; ++s) order[s] = s;
  std::mt19937_64 rng(options.seed);
  std::shuffle(order.begin(), order.end(), rng);
  PinOpenMpThreads();
  for (size_t next = 0; next < n;) {
    std::vector<PreparedKernel> prepared;
    std::vector<size_t> owner;  // prepared[k] measures schedules[owner[k]]
    int64_t held = 0, largest = 0;
    ++groups;
    for (size_t members = 0; next < n && members < group; ++members) {
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
    const std::vector<TimingResult> times =
        TimeInterleaved(runs, options.run.timing, rng(), in_full);
    for (size_t k = 0; k < prepared.size(); ++k) {
      RunResult& r = results[owner[k]];
      r.time = times[k];
      if (r.time.timed_out) {
        r.status = RunStatus::kTimedOut;
        r.message = "a run took " + std::to_string(r.time.max_ms) + " ms, over the limit of " +
                    std::to_string(limit) + " ms";
      }
    }
    ++done;
    report(total_after(next));
  }
  return results;
}

}  // namespace sparsetune
