#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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
  // > 0, interleaved timing only: after the first warm-up run of everyone and after each
  // round, a contender whose fastest run is over this many times the fastest run of all
  // leaves, its median from the runs it made (its first run when it leaves in warm-up). Only
  // contenders too long to be settled (below) leave: their first run is about as fast as
  // their steady ones, while a short kernel's cold first run can be twice its steady time.
  double drop_slower_than = 0;
  // Interleaved timing only: each contender's turn in a round starts with untimed calls lasting
  // at least settle_ms (at most kMaxTurnCalls), then times calls for about as long (at least
  // one). A call right after other contenders ran finds its operands evicted, and a kernel
  // whose working set is near the cache sizes takes 5-20 calls to reach the speed a loop
  // calling it sees; timing that first call ranks kernels by how they start, not how they
  // run. A contender whose calls take over kLongCallFactor * settle_ms streams more than the
  // caches hold on every call and is not settled. 0: one timed call per turn.
  double settle_ms = 2;
  // A busy machine (another process holding the cores) makes times meaningless. A timing is
  // disturbed when the timing threads, probed between rounds, waited for a CPU over
  // kBusyWaitShare of their time, or when a contender's median run is over disturbed_spread
  // times its fastest and slower by more than disturbed_excess_ms while they waited over
  // kSpreadWaitShare (where the kernel does not report waits: the spread alone, or an empty
  // parallel region of every thread over kBusyParallelRegionMicros in more than a quarter of
  // the rounds). A disturbed timing is made again from the start (warm-up
  // included) up to disturbance_retries more times; the result says whether the last one was
  // still disturbed.
  int disturbance_retries = 2;
  double disturbed_spread = 1.5;
  double disturbed_excess_ms = 0.02;
};

constexpr int kMaxTurnCalls = 32;
constexpr double kLongCallFactor = 4;

struct TimingResult {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int reps = 0;
  bool timed_out = false;  // a run exceeded max_ms_per_run
  // The timing's disturbance check (TimingOptions), shared by every contender timed together:
  // whether the last attempt was still disturbed and why, how many attempts were made, the
  // probe's parallel region (median microseconds over the last attempt's rounds) and the share
  // of the timing threads' time spent waiting for a CPU (-1: not reported by the kernel).
  bool disturbed = false;
  std::string disturbance;
  int attempts = 1;
  double probe_us = 0;
  double waited_share = -1;
  // Median nanoseconds of a cache line's round trip between the first two timing threads
  // over the last attempt's rounds (0: one thread). See ThreadRoundTripNs.
  double round_trip_ns = 0;
  // Median over the last attempt's rounds of how much slower the slowest timing thread ran a
  // fixed piece of work than the fastest (0: one thread). See ThreadSpeedSkew.
  double thread_skew = 0;
  // What MeasureTogether's drift correction multiplied the times by (1: none).
  double drift_scale = 1;
  // Where the rounds saw the threads both near and far (Placement; a virtual machine's cores
  // move between the two every second or so on some hosts), kMinPlacementRounds rounds each:
  // the median of the runs in each placement, the rounds counted, and the weight far_ms got in
  // median_ms, which is then the mean time a caller's many calls can expect (far_weight: the
  // share of far rounds this process has seen, PlacementTally). A kernel whose threads share
  // written data (chunks handed out) ran 40% slower far than near where one that splits its
  // rows evenly did not, so a plain median ranks them by whichever placement the timing saw
  // more. far_weight is 0 when median_ms is a plain median.
  double near_ms = 0;
  double far_ms = 0;
  int near_rounds = 0;
  int far_rounds = 0;
  double far_weight = 0;
};

TimingResult TimeRepeated(const std::function<void()>& run, const TimingOptions& options);

// Which of several contests of one contender counts: the index of the median time, the slower
// middle of an even count (an unlucky packing or thread placement then counts over a lucky
// one). Throws std::invalid_argument when there are none.
size_t MedianContestIndex(const std::vector<double>& contest_ms);

// Several contests of one contender as one time: its median contest's (MedianContestIndex),
// or, where its contests together saw kMinPlacementRounds rounds of each placement, that
// contest with median_ms the median over contests of their near medians and of their far
// medians, weighted by far_share. A contest is often all near or all far (the threads move
// every second or so), so the median contest alone is one placement's time, whichever the
// contests happened to see more of: a kernel handing out chunks that ran 0.233 ms near and
// 0.303 far beat, by its median contest, one splitting its rows evenly at 0.234 and 0.239.
// Throws std::invalid_argument when there are none.
TimingResult CombineContests(const std::vector<TimingResult>& contests, double far_share);

// Times several contenders fairly: each is warmed up the same way, then the timed runs go in
// rounds, every round giving each remaining contender one turn in a fresh shuffled order, so a
// contender never profits from running after another (a faster clock, a quieter moment) more
// often than its rivals do. A turn settles the contender before timing it (settle_ms), so
// each is timed in the steady state of a loop that calls it. Rounds continue until there were
// min_reps of them and they took min_total_ms per contender (or max_reps rounds). A contender whose
// run exceeds max_ms_per_run, in warm-up or in a round, is marked timed_out and leaves the rounds.
// `seed` fixes the order. Contenders marked in `timed_in_full` never leave under
// drop_slower_than: a baseline whose time is reported, or compared with its twin, needs a
// steady median, not one cold run.
std::vector<TimingResult> TimeInterleaved(const std::vector<std::function<void()>>& runs,
                                          const TimingOptions& options, uint64_t seed = 1,
                                          const std::vector<bool>& timed_in_full = {});

// Binds each OpenMP worker thread to its own core, once per process (later calls do nothing).
// The pool's threads persist across parallel regions, including those of kernels loaded with
// dlopen, so every measured kernel runs with the same placement.
void PinOpenMpThreads();

// Microseconds per empty parallel region of `threads` threads: about one on an idle machine.
// When other processes hold the cores, a region's barrier waits for the scheduler to run every
// thread (milliseconds), and the times of small kernels measure that wait, not the schedule.
double ParallelRegionMicros(int threads);
constexpr double kBusyParallelRegionMicros = 20;
// The timing threads waiting for a CPU over this share of their time: other processes hold
// the cores (on a quiet machine it is well under 1%).
constexpr double kBusyWaitShare = 0.1;
// A wide spread of a contender's runs counts as disturbance only with this share of waiting
// (where the kernel reports waits).
constexpr double kSpreadWaitShare = 0.02;

// Nanoseconds for a cache line to go from the first of `threads` OpenMP threads to the second
// and back (best of a few batches, so one preempted batch does not count); 0 for one thread,
// and when every batch was called off because a thread waited for a CPU (a busy machine).
// Tens of nanoseconds when their cores share a last-level cache, hundreds when they do not
// (other dies, other sockets). A virtual machine's cores move between the two placements
// while it runs, and kernels whose threads read data other threads wrote run up to twice as
// slow in the far one, so a timing whose rounds saw both weighs the two (TimingResult::far_weight).
double ThreadRoundTripNs(int threads);
// A round's round trip over this many times the fastest this process has seen (and
// kFarRoundTripExcessNs more) puts its threads in the far placement.
constexpr double kFarRoundTripFactor = 2.5;
constexpr double kFarRoundTripExcessNs = 50;

// Where a timing round's threads ran: on cores that share a last-level cache (near), on cores
// that do not (far), or not known (the probe missed, or the threads moved during the round).
enum class Placement { kUnknown, kNear, kFar };

// The placement of each of a timing's rounds from the round trips probed around them: trips[r]
// before round r and trips[r + 1] after it (0: not known), so trips.size() - 1 rounds. A round
// is near or far when both probes around it agree, judged against `nearest_ns`, the fastest
// round trip seen (the near placement's).
std::vector<Placement> RoundPlacements(const std::vector<double>& trips, double nearest_ns);

// What this process's timings have seen of the threads' placements (every classified round).
struct PlacementTally {
  double nearest_ns = 0;  // the fastest round trip: the near placement's (0: none yet)
  int64_t near_rounds = 0;
  int64_t far_rounds = 0;
  // The share of the time a kernel can expect its threads to run far: the far rounds' share,
  // pulled towards a half while there are few ((far + 1) / (near + far + 2)).
  double FarShare() const;
};
PlacementTally ObservedPlacements();

// A timing weighs a contender's two placements only with this many rounds in each (fewer
// make a placement's median one or two runs' luck).
constexpr int kMinPlacementRounds = 3;

// One contender's runs summarized: the median, fastest and slowest run. run_round[k] is the
// round of runs[k] and placements[r] where round r ran; when the contender's runs fall in
// kMinPlacementRounds near rounds and as many far ones, median_ms is the mean of the two
// placements' medians weighted by far_share (the fields near_ms...far_weight say so).
TimingResult SummarizeRuns(std::vector<double> runs, const std::vector<int>& run_round,
                           const std::vector<Placement>& placements, double far_share);

// How many times longer the slowest of `threads` OpenMP threads takes than the fastest for the
// same fixed work (each thread's median of three tries, about 30 us each); 0 for one thread.
// About 1 on a quiet machine. A virtual machine's CPU whose physical core also runs another
// guest (its hyperthread twin), or that the host takes away now and then, runs slower for
// minutes, unseen by the guest's scheduler: a kernel that splits its work evenly waits for
// that thread, while one that hands out chunks does not, so the timing ranks them wrongly.
double ThreadSpeedSkew(int threads);
// A timing whose median round had a thread this much slower than another is disturbed, unless
// the cores differ by design.
constexpr double kSlowThreadSkew = 1.15;
// Whether the CPUs this process may use differ by design (big and little cores, or cores of
// different top frequencies, as the kernel describes them): a thread slower than another is
// then the machine itself, which kernels that hand out work in chunks are right to win on.
bool CoresDifferByDesign();

// What the probe between timing rounds saw.
struct ProbeLog {
  std::vector<double> region_us;      // per round: an empty parallel region of every thread
  std::vector<double> round_trip_ns;  // per round: ThreadRoundTripNs, where known
  // ThreadRoundTripNs before the first round and after each (0: not known): RoundPlacements.
  std::vector<double> trips_around_rounds;
  std::vector<double> thread_skew;  // per round: ThreadSpeedSkew, where known
  double waited_ms = 0;             // the threads' time runnable but waiting for a CPU
  double thread_ms = 0;             // the rounds' wall time times the threads
  bool delay_known = false;         // the kernel reports waits (schedstat)
};

// Why a timing's runs (samples: each contender's run times) cannot be trusted given what the
// probe saw, or "" (see TimingOptions: disturbed_spread, kBusyWaitShare, kSpreadWaitShare).
std::string TimingDisturbance(const std::vector<std::vector<double>>& samples,
                              const ProbeLog& probe, const TimingOptions& options);

}  // namespace sparsetune
