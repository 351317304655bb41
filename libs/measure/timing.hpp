#pragma once

#include <functional>

namespace sparsetune {

// The timing protocol: warm-up runs, then repeats until both a minimum count and a minimum
// total time are reached (or a maximum count), reporting the median.
struct TimingOptions {
  int warmup_runs = 2;    // at least this many warm-up runs...
  double warmup_ms = 50;  // ...and until this much time has passed (capped at 10 runs)
  int min_reps = 5;
  int max_reps = 100;
  double min_total_ms = 300;
  double max_ms_per_run = 0;  // > 0: stop after the first run that exceeds it
};

struct TimingResult {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int reps = 0;
  bool timed_out = false;  // a run exceeded max_ms_per_run
};

TimingResult TimeRepeated(const std::function<void()>& run, const TimingOptions& options);

// Microseconds per empty parallel region of `threads` threads: about one on an idle machine.
// When other processes hold the cores, a region's barrier waits for the scheduler to run every
// thread (milliseconds), and the times of small kernels measure that wait, not the schedule.
double ParallelRegionMicros(int threads);
constexpr double kBusyParallelRegionMicros = 20;

}  // namespace sparsetune
