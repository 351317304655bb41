#include "measure/timing.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace sparsetune {

namespace {
double Elapsed(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}
}  // namespace

TimingResult TimeRepeated(const std::function<void()>& run, const TimingOptions& options) {
  TimingResult result;
  const auto warm_start = std::chrono::steady_clock::now();
  for (int w = 0; w < 10; ++w) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double ms = Elapsed(t0);
    if (options.max_ms_per_run > 0 && ms > options.max_ms_per_run) {
      result.timed_out = true;
      result.median_ms = result.min_ms = result.max_ms = ms;
      result.reps = 1;
      return result;
    }
    if (w + 1 >= options.warmup_runs && Elapsed(warm_start) >= options.warmup_ms) break;
  }
  std::vector<double> samples;
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int>(samples.size()) < options.max_reps) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    samples.push_back(Elapsed(t0));
    if (static_cast<int>(samples.size()) >= options.min_reps &&
        Elapsed(start) >= options.min_total_ms)
      break;
  }
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  result.reps = static_cast<int>(n);
  result.min_ms = samples.front();
  result.max_ms = samples.back();
  result.median_ms = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return result;
}

double ParallelRegionMicros(int threads) {
  using Clock = std::chrono::steady_clock;
#pragma omp parallel num_threads(threads)
  { asm volatile("" ::: "memory"); }
  const auto start = Clock::now();
  int regions = 0;
  while (regions < 200 && Clock::now() - start < std::chrono::milliseconds(50)) {
#pragma omp parallel num_threads(threads)
    { asm volatile("" ::: "memory"); }
    ++regions;
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / regions;
}

}  // namespace sparsetune
