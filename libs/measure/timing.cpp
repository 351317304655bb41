#include "measure/timing.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <omp.h>

#include "base/elapsed.hpp"
#include "base/threads.hpp"

namespace sparsetune {

static TimingResult Summarize(std::vector<double> samples) {
  TimingResult result;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  if (n == 0) return result;
  result.reps = static_cast<int>(n);
  result.min_ms = samples.front();
  result.max_ms = samples.back();
  result.median_ms = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return result;
}

// Warm-up runs: at least warmup_runs; waiting for warmup_ms adds runs only up to 10.
static int MaxWarmupRuns(const TimingOptions& options) {
  return std::max(10, options.warmup_runs);
}

namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string Format(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char text[400];
  std::snprintf(text, sizeof text, format, a, b, c, d);
  return text;
}

bool IsFar(double ns, double nearest_ns) {
  return ns > kFarRoundTripFactor * nearest_ns && ns - nearest_ns > kFarRoundTripExcessNs;
}

std::mutex placement_mutex;
PlacementTally placement_tally;

// Adds a timing's rounds to the process's tally (after its round trips have lowered the
// nearest one, when they do) and returns their placements.
std::vector<Placement> TallyPlacements(const ProbeLog& log) {
  std::lock_guard<std::mutex> lock(placement_mutex);
  for (double ns : log.trips_around_rounds) {
    if (ns > 0 && (placement_tally.nearest_ns <= 0 || ns < placement_tally.nearest_ns))
      placement_tally.nearest_ns = ns;
  }
  std::vector<Placement> placements =
      RoundPlacements(log.trips_around_rounds, placement_tally.nearest_ns);
  for (Placement p : placements) {
    if (p == Placement::kNear) ++placement_tally.near_rounds;
    if (p == Placement::kFar) ++placement_tally.far_rounds;
  }
  return placements;
}

// Nanoseconds the calling thread has spent runnable but waiting for a CPU (the second field of
// /proc/thread-self/schedstat), or -1 where the kernel does not report it.
int64_t RunDelayNs() {
  const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[128];
  const ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return -1;
  text[got] = '\0';
  unsigned long long running = 0, waiting = 0;
  if (std::sscanf(text, "%llu %llu", &running, &waiting) != 2) return -1;
  return static_cast<int64_t>(waiting);
}

// What the probe saw over an attempt's timed rounds.
// Between rounds, every OpenMP thread reads how long it has waited for a CPU (another process
// holding the cores shows there directly, whatever the kernel's own run times), in a parallel
// region that is timed as well.
class RoundProbe {
 public:
  static constexpr double kSkewProbeEveryMs = 10;
  explicit RoundProbe(ProbeLog& log)
      : log_(log), threads_(std::max(1, omp_get_max_threads())), start_(Clock::now()) {
    Sample(nullptr);
    if (team_ > 1) log_.trips_around_rounds.push_back(ThreadRoundTripNs(threads_));
  }
  void Round() {
    double us = 0;
    const double waited = Sample(&us);
    log_.region_us.push_back(us);
    if (team_ > 1) {
      const double trip = ThreadRoundTripNs(threads_);
      if (trip > 0) log_.round_trip_ns.push_back(trip);
      log_.trips_around_rounds.push_back(trip);
      // The speed probe passes 64 KiB a thread through L2 in about 100 us: where rounds are
      // single short calls (TimeRepeated), once every kSkewProbeEveryMs keeps it off most calls.
      if (log_.thread_skew.empty() || MsSince(last_skew_) >= kSkewProbeEveryMs) {
        const double skew = ThreadSpeedSkew(threads_);
        if (skew > 0) log_.thread_skew.push_back(skew);
        last_skew_ = Clock::now();
      }
    }
    if (waited >= 0) {
      log_.waited_ms += waited;
      log_.delay_known = true;
    }
    log_.thread_ms = MsSince(start_) * team_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  // Milliseconds all threads waited since the last sample, or -1 when unknown.
  double Sample(double* region_us) {
    std::vector<int64_t> now(threads_, -1);
    int team = 1;
    const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads_)
    {
      now[omp_get_thread_num()] = RunDelayNs();
      if (omp_get_thread_num() == 0) team = omp_get_num_threads();
    }
    if (region_us)
      *region_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    // The team may be smaller than asked for (OMP_THREAD_LIMIT, a region inside another): the
    // threads that exist are the ones that can wait. Counting the missing ones as unknown would
    // judge by the region's time instead, and that includes reading the counters (50 us on
    // some virtual machines).
    team_ = team;
    double waited = 0;
    bool known = true;
    for (int k = 0; k < team; ++k) {
      if (now[k] < 0) known = false;
      if (now[k] >= 0 && k < int(last_.size()) && last_[k] >= 0)
        waited += double(std::max<int64_t>(0, now[k] - last_[k])) / 1e6;
    }
    last_ = now;
    return known ? waited : -1;
  }

  ProbeLog& log_;
  int threads_;
  int team_ = 1;  // the last sample's team
  Clock::time_point start_;
  Clock::time_point last_skew_;
  std::vector<int64_t> last_;
};

// A thread slower than another in the median round (at least three rounds) of cores alike by
// design: why that disturbs the timing, or "".
std::string SlowThread(const std::vector<double>& thread_skew) {
  if (thread_skew.size() < 3 || CoresDifferByDesign()) return "";
  const double skew = Median(thread_skew);
  if (skew <= kSlowThreadSkew) return "";
  return Format(
      "one timing thread ran the same work %.2fx slower than another (median of %.0f rounds): "
      "its CPU is shared with work this machine does not see (on a virtual machine, the "
      "host's), and kernels that split their work evenly wait for it",
      skew, double(thread_skew.size()));
}

// Why an attempt's times cannot be trusted, or "": the timing threads waiting for a CPU over
// kBusyWaitShare of their time, or a contender whose median run is far above its fastest while
// they waited at all (over kSpreadWaitShare). Where the kernel reports no waits, the spread
// alone decides, and the probe's region slow in over a quarter of the rounds. A spread with no
// waiting is the kernel's own (DRAM-bound runs on a quiet machine vary that much), not
// another process's.
std::string Disturbance(const std::vector<std::vector<double>>& samples, const ProbeLog& probe,
                        const TimingOptions& options) {
  const double share =
      probe.delay_known && probe.thread_ms > 0 ? probe.waited_ms / probe.thread_ms : 0;
  if (probe.delay_known && share > kBusyWaitShare)
    return Format(
        "other processes held the cores: the timing threads waited for a CPU %.0f%% of the time "
        "(%.0f ms)",
        100 * share, probe.waited_ms);
  if (!probe.delay_known || share > kSpreadWaitShare) {
    for (const auto& runs : samples) {
      if (runs.size() < 5) continue;
      const double fastest = *std::min_element(runs.begin(), runs.end());
      const double median = Median(runs);
      if (median > options.disturbed_spread * fastest &&
          median - fastest > options.disturbed_excess_ms)
        return Format("a contender's median run (%.4g ms) was %.1fx its fastest (%.4g ms)", median,
                      median / fastest, fastest);
    }
  }
  if (std::string slow = SlowThread(probe.thread_skew); !slow.empty()) return slow;
  if (probe.delay_known) return "";
  const auto& regions = probe.region_us;
  const auto busy = std::count_if(regions.begin(), regions.end(),
                                  [](double us) { return us > kBusyParallelRegionMicros; });
  if (!regions.empty() && busy * 4 > static_cast<int64_t>(regions.size()))
    return Format(
        "other processes held the cores: an empty parallel region took over %.0f us in %.0f of "
        "%.0f rounds (a few us on a quiet machine)",
        kBusyParallelRegionMicros, double(busy), double(regions.size()));
  return "";
}

// Makes attempts until one is not disturbed or the retries are spent; `once` times everyone
// once, filling each contender's timed runs and the probe's log.
std::vector<TimingResult> WithRetries(
    const std::function<std::vector<TimingResult>(std::vector<std::vector<double>>&, ProbeLog&)>&
        once,
    const TimingOptions& options) {
  for (int attempt = 1;; ++attempt) {
    std::vector<std::vector<double>> samples;
    ProbeLog probe;
    std::vector<TimingResult> results = once(samples, probe);
    const std::string reason = Disturbance(samples, probe, options);
    if (reason.empty() || attempt > options.disturbance_retries) {
      for (TimingResult& r : results) {
        r.disturbed = !reason.empty();
        r.disturbance = reason;
        r.attempts = attempt;
        r.probe_us = Median(probe.region_us);
        r.waited_share =
            probe.delay_known && probe.thread_ms > 0 ? probe.waited_ms / probe.thread_ms : -1;
        r.round_trip_ns = Median(probe.round_trip_ns);
        r.thread_skew = Median(probe.thread_skew);
      }
      return results;
    }
    // Give a passing disturbance (a build, a cron job) a moment before timing again.
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
  }
}

TimingResult TimeRepeatedOnce(const std::function<void()>& run, const TimingOptions& options,
                              std::vector<double>& kept, ProbeLog& log) {
  TimingResult result;
  // Runs once; true (and the result says so) when the run passed max_ms_per_run.
  auto timed = [&](double* ms) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    *ms = MsSince(t0);
    if (options.max_ms_per_run <= 0 || *ms <= options.max_ms_per_run) return false;
    result.timed_out = true;
    result.median_ms = result.min_ms = result.max_ms = *ms;
    result.reps = 1;
    return true;
  };
  const auto warm_start = std::chrono::steady_clock::now();
  double ms = 0;
  for (int w = 0; w < MaxWarmupRuns(options); ++w) {
    if (timed(&ms)) return result;
    if (w + 1 >= options.warmup_runs && MsSince(warm_start) >= options.warmup_ms) break;
  }
  std::vector<double> samples;
  RoundProbe probe(log);
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int>(samples.size()) < options.max_reps) {
    if (timed(&ms)) return result;
    samples.push_back(ms);
    probe.Round();
    if (static_cast<int>(samples.size()) >= options.min_reps &&
        MsSince(start) >= options.min_total_ms)
      break;
  }
  kept = samples;
  std::vector<int> run_round(samples.size());
  for (size_t k = 0; k < run_round.size(); ++k) run_round[k] = static_cast<int>(k);
  const std::vector<Placement> placements = TallyPlacements(log);
  return SummarizeRuns(std::move(samples), run_round, placements, ObservedPlacements().FarShare());
}

std::vector<TimingResult> TimeInterleavedOnce(const std::vector<std::function<void()>>& runs,
                                              const TimingOptions& options, uint64_t seed,
                                              const std::vector<bool>& timed_in_full,
                                              std::vector<std::vector<double>>& kept,
                                              ProbeLog& log) {
  const size_t n = runs.size();
  std::vector<TimingResult> results(n);
  std::vector<std::vector<double>> samples(n);
  std::vector<std::vector<int>> sample_round(n);  // the round of each sample
  std::vector<bool> active(n, true);
  std::vector<double> fastest(n, std::numeric_limits<double>::infinity());
  auto timed = [&](size_t c) {
    const auto t0 = std::chrono::steady_clock::now();
    runs[c]();
    const double ms = MsSince(t0);
    fastest[c] = std::min(fastest[c], ms);
    if (options.max_ms_per_run > 0 && ms > options.max_ms_per_run) {
      active[c] = false;
      results[c].timed_out = true;
      results[c].median_ms = results[c].min_ms = results[c].max_ms = ms;
      results[c].reps = 1;
    }
    return ms;
  };
  // With drop_slower_than: a contender whose fastest run is that far behind the fastest of
  // all leaves the rounds, its median from the runs it made; it cannot win, and a kernel that
  // takes seconds where the best takes milliseconds would otherwise spend most of a tune.
  auto drop_far_behind = [&] {
    if (options.drop_slower_than <= 0) return;
    double best = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < n; ++c) {
      if (!results[c].timed_out) best = std::min(best, fastest[c]);
    }
    for (size_t c = 0; c < n; ++c) {
      if (!active[c] || fastest[c] <= options.drop_slower_than * best ||
          fastest[c] <= kLongCallFactor * options.settle_ms ||
          (c < timed_in_full.size() && timed_in_full[c]))
        continue;
      active[c] = false;
      if (samples[c].empty()) samples[c].push_back(fastest[c]);
    }
  };
  // Warm-up: the same count for everyone, enough for the slowest-starting contender. When
  // contenders may be dropped, everyone's first run comes first, so the far-behind ones stop
  // after it (first runs are all cold, so they compare fairly with each other).
  std::vector<int> warm_runs(n, 0);
  std::vector<double> warm_ms(n, 0);
  if (options.drop_slower_than > 0) {
    for (size_t c = 0; c < n; ++c) {
      const auto t0 = std::chrono::steady_clock::now();
      timed(c);
      warm_ms[c] = MsSince(t0);
      warm_runs[c] = 1;
    }
    drop_far_behind();
  }
  for (size_t c = 0; c < n; ++c) {
    const auto warm_start = std::chrono::steady_clock::now();
    for (int w = warm_runs[c]; w < MaxWarmupRuns(options) && active[c]; ++w) {
      timed(c);
      if (w + 1 >= options.warmup_runs && warm_ms[c] + MsSince(warm_start) >= options.warmup_ms)
        break;
    }
  }
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(n);
  for (size_t c = 0; c < n; ++c) order[c] = c;
  RoundProbe probe(log);
  const auto start = std::chrono::steady_clock::now();
  // One turn: untimed calls to settle, then timed ones for about as long.
  int round = 0;
  auto turn = [&](size_t c) {
    const bool settle = options.settle_ms > 0 && fastest[c] < kLongCallFactor * options.settle_ms;
    if (settle) {
      double settled_ms = 0;
      for (int k = 0; k < kMaxTurnCalls && settled_ms < options.settle_ms && active[c]; ++k)
        settled_ms += timed(c);
    }
    double timed_ms = 0;
    for (int k = 0; k < kMaxTurnCalls && active[c]; ++k) {
      const double ms = timed(c);
      if (!active[c]) break;
      samples[c].push_back(ms);
      sample_round[c].push_back(round);
      timed_ms += ms;
      if (!settle || timed_ms >= options.settle_ms) break;
    }
  };
  for (; round < options.max_reps; ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t c : order) {
      if (active[c]) turn(c);
    }
    probe.Round();
    drop_far_behind();
    const auto remaining = std::count(active.begin(), active.end(), true);
    if (remaining == 0) break;
    if (round + 1 >= options.min_reps &&
        MsSince(start) >= options.min_total_ms * static_cast<double>(remaining))
      break;
  }
  kept.assign(n, {});
  const std::vector<Placement> placements = TallyPlacements(log);
  const double far_share = ObservedPlacements().FarShare();
  for (size_t c = 0; c < n; ++c) {
    if (results[c].timed_out) continue;
    kept[c] = samples[c];
    results[c] = SummarizeRuns(std::move(samples[c]), sample_round[c], placements, far_share);
  }
  return results;
}

}  // namespace

std::vector<Placement> RoundPlacements(const std::vector<double>& trips, double nearest_ns) {
  if (trips.size() < 2) return {};
  std::vector<Placement> placements(trips.size() - 1, Placement::kUnknown);
  if (nearest_ns <= 0) return placements;
  for (size_t r = 0; r + 1 < trips.size(); ++r) {
    const double before = trips[r], after = trips[r + 1];
    if (before <= 0 || after <= 0 || IsFar(before, nearest_ns) != IsFar(after, nearest_ns))
      continue;
    placements[r] = IsFar(before, nearest_ns) ? Placement::kFar : Placement::kNear;
  }
  return placements;
}

double PlacementTally::FarShare() const {
  return double(far_rounds + 1) / double(near_rounds + far_rounds + 2);
}

PlacementTally ObservedPlacements() {
  std::lock_guard<std::mutex> lock(placement_mutex);
  return placement_tally;
}

TimingResult SummarizeRuns(std::vector<double> runs, const std::vector<int>& run_round,
                           const std::vector<Placement>& placements, double far_share) {
  std::vector<double> near, far;
  std::set<int> near_rounds, far_rounds;
  for (size_t k = 0; k < runs.size() && k < run_round.size(); ++k) {
    const int r = run_round[k];
    if (r < 0 || r >= static_cast<int>(placements.size())) continue;
    if (placements[r] == Placement::kNear) {
      near.push_back(runs[k]);
      near_rounds.insert(r);
    } else if (placements[r] == Placement::kFar) {
      far.push_back(runs[k]);
      far_rounds.insert(r);
    }
  }
  TimingResult result = Summarize(std::move(runs));
  result.near_rounds = static_cast<int>(near_rounds.size());
  result.far_rounds = static_cast<int>(far_rounds.size());
  result.near_ms = Median(near);
  result.far_ms = Median(far);
  if (result.near_rounds >= kMinPlacementRounds && result.far_rounds >= kMinPlacementRounds) {
    result.far_weight = far_share;
    result.median_ms = (1 - far_share) * result.near_ms + far_share * result.far_ms;
  }
  return result;
}

std::string TimingDisturbance(const std::vector<std::vector<double>>& samples,
                              const ProbeLog& probe, const TimingOptions& options) {
  return Disturbance(samples, probe, options);
}

size_t MedianContestIndex(const std::vector<double>& contest_ms) {
  if (contest_ms.empty()) throw std::invalid_argument("MedianContestIndex: no contests");
  std::vector<size_t> order(contest_ms.size());
  for (size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return contest_ms[a] < contest_ms[b]; });
  return order[order.size() / 2];
}

TimingResult CombineContests(const std::vector<TimingResult>& contests, double far_share) {
  std::vector<double> times, near, far;
  int near_rounds = 0, far_rounds = 0;
  for (const TimingResult& t : contests) {
    times.push_back(t.median_ms);
    if (t.near_rounds > 0) near.push_back(t.near_ms);
    if (t.far_rounds > 0) far.push_back(t.far_ms);
    near_rounds += t.near_rounds;
    far_rounds += t.far_rounds;
  }
  TimingResult out = contests[MedianContestIndex(times)];
  if (near_rounds < kMinPlacementRounds || far_rounds < kMinPlacementRounds) return out;
  out.near_ms = Median(near);
  out.far_ms = Median(far);
  out.near_rounds = near_rounds;
  out.far_rounds = far_rounds;
  out.far_weight = far_share;
  out.median_ms = (1 - far_share) * out.near_ms + far_share * out.far_ms;
  return out;
}

TimingResult TimeRepeated(const std::function<void()>& run, const TimingOptions& options) {
  return WithRetries(
             [&](std::vector<std::vector<double>>& samples, ProbeLog& log) {
               samples.assign(1, {});
               return std::vector<TimingResult>{TimeRepeatedOnce(run, options, samples[0], log)};
             },
             options)
      .front();
}

std::vector<TimingResult> TimeInterleaved(const std::vector<std::function<void()>>& runs,
                                          const TimingOptions& options, uint64_t seed,
                                          const std::vector<bool>& timed_in_full) {
  return WithRetries(
      [&](std::vector<std::vector<double>>& samples, ProbeLog& log) {
        return TimeInterleavedOnce(runs, options, seed, timed_in_full, samples, log);
      },
      options);
}

void PinOpenMpThreads() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Thread k onto the k-th CPU the process may use, not CPU k: a task bound to cores 4-5
    // must stay on them.
    const std::vector<int>& cpus = AllowedCpus();
    if (cpus.empty()) return;
    const int cores = static_cast<int>(cpus.size());
#pragma omp parallel num_threads(cores)
    {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[omp_get_thread_num() % cores], &set);
      sched_setaffinity(0, sizeof(set), &set);
    }
  });
}

double ThreadRoundTripNs(int threads) {
  if (threads < 2) return 0;
  using Clock = std::chrono::steady_clock;
  // The ball: thread 0 serves odd counts, thread 1 returns each as the next even one. A batch
  // that outlasts kBatchLimit (one of them waiting for a CPU) is called off: thread 0 swaps
  // the ball it served for that batch's mark (-1 - batch) unless thread 1 returned it first. A
  // mark per batch, so that a batch called off earlier does not end the next one at its start.
  // Each batch starts once thread 1 says it is there (its ready mark): the clock is for round
  // trips, not for waking a thread that sleeps at the barrier (OMP_WAIT_POLICY=passive).
  struct alignas(64) Line {
    std::atomic<int64_t> count{0};
  } ball;
  constexpr int kBatches = 4, kTrips = 64;
  constexpr auto kBatchLimit = std::chrono::microseconds(500);
  double best = 0;
#pragma omp parallel num_threads(threads)
  {
    // A team of one (OMP_THREAD_LIMIT, or called inside another parallel region) has nobody
    // to return the ball, and its thread 0 would wait for a ready mark forever.
    const int me = omp_get_num_threads() < 2 ? -1 : omp_get_thread_num();
    for (int batch = 0; me >= 0 && batch < kBatches; ++batch) {
#pragma omp barrier
      const int64_t first = 2 * int64_t(batch) * kTrips, called_off = -1 - int64_t(batch);
      const int64_t ready = -1 - int64_t(kBatches) - int64_t(batch);
      if (me == 0) {
        while (ball.count.load(std::memory_order_acquire) != ready) {
        }
        const auto t0 = Clock::now();
        bool whole = true;
        for (int64_t k = first; whole && k < first + 2 * kTrips; k += 2) {
          ball.count.store(k + 1, std::memory_order_release);
          for (int spins = 1; ball.count.load(std::memory_order_acquire) != k + 2; ++spins) {
            if (spins % 64 != 0 || Clock::now() - t0 < kBatchLimit) continue;
            int64_t served = k + 1;
            if (ball.count.compare_exchange_strong(served, called_off)) whole = false;
            break;
          }
        }
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        if (whole) best = best > 0 ? std::min(best, ns / kTrips) : ns / kTrips;
      } else if (me == 1) {
        ball.count.store(ready, std::memory_order_release);
        for (int64_t k = first; k < first + 2 * kTrips; k += 2) {
          int64_t seen;
          while ((seen = ball.count.load(std::memory_order_acquire)) != k + 1 &&
                 seen != called_off) {
          }
          if (seen == called_off || !ball.count.compare_exchange_strong(seen, k + 2)) break;
        }
      }
    }
  }
  return best;
}

bool CoresDifferByDesign() {
  static const bool differ = [] {
    auto read = [](const std::string& path) {
      std::ifstream in(path);
      std::string text;
      std::getline(in, text);
      return text;  // empty where the kernel does not say
    };
    std::set<std::string> capacities, frequencies;
    for (int cpu : AllowedCpus()) {
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
      capacities.insert(read(dir + "/cpu_capacity"));
      frequencies.insert(read(dir + "/cpufreq/cpuinfo_max_freq"));
    }
    return capacities.size() > 1 || frequencies.size() > 1;
  }();
  return differ;
}

double ThreadSpeedSkew(int threads) {
  if (threads < 2) return 0;
  using Clock = std::chrono::steady_clock;
  // The work: sums over 64 KiB (in L2, past L1), as a sparse kernel's loads are, so a twin
  // hyperthread that competes for the core's caches and ports shows.
  constexpr int kFloats = 16384, kLanes = 16, kSweeps = 32, kTries = 3;
  // Each thread's median try: a twin hyperthread busy most of the time slows most tries, and
  // the best of them would catch the moments it idles.
  std::vector<std::array<double, kTries>> tries(threads);
  int team = 1;  // at most `threads`
#pragma omp parallel num_threads(threads)
  {
    thread_local std::vector<float> data(kFloats, 1.0f);
    const int me = omp_get_thread_num();
    if (me == 0) team = omp_get_num_threads();
    for (int attempt = 0; attempt < kTries; ++attempt) {
#pragma omp barrier
      const auto t0 = Clock::now();
      float sums[kLanes] = {};
      for (int sweep = 0; sweep < kSweeps; ++sweep) {
        // The data may have changed, for all the compiler knows: every sweep loads it again.
        asm volatile("" ::: "memory");
        for (int k = 0; k < kFloats; k += kLanes)
          for (int lane = 0; lane < kLanes; ++lane) sums[lane] += data[k + lane];
      }
      float total = 0;
      for (float s : sums) total += s;
      asm volatile("" : : "r"(total));
      const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      tries[me][attempt] = ns;
    }
  }
  if (team < 2) return 0;
  std::vector<double> typical(team);
  for (int t = 0; t < team; ++t) {
    std::sort(tries[t].begin(), tries[t].end());
    typical[t] = tries[t][kTries / 2];
  }
  const auto [fastest, slowest] = std::minmax_element(typical.begin(), typical.end());
  return *fastest > 0 ? *slowest / *fastest : 0;
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
