// A tune's measuring: every candidate packed, compiled, verified and timed side by side (with
// FixedCSR twice, whose two timings show the run's noise), measured again while the machine
// looked busy, then the best schedules timed again beside the best unordered ones renumbered
// by each ordering of rows and columns.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "jit/jit.hpp"
#include "measure/runner.hpp"
#include "tensor/permutation.hpp"
#include "tune/candidates.hpp"

namespace sparsetune {

// What tune does about a busy machine (other processes holding the cores): measure again and,
// when the measurements stay disturbed, fail and store nothing (kFail, the default) or store
// the winner with the report saying it was disturbed (kStore); or measure once and store
// whatever the machine did, saying so (kIgnore: for test suites and machines shared on
// purpose). $SPARSETUNE_ON_BUSY ("fail", "store" or "ignore") sets the default; anything else
// there is an InputError.
enum class BusyPolicy { kFail, kStore, kIgnore };
BusyPolicy BusyPolicyFromEnvironment();
BusyPolicy ParseBusyPolicy(const std::string& text, const std::string& what);

// Thrown when the measurements stayed disturbed under BusyPolicy::kFail; nothing was stored.
// The command ends with exit code 3 (its environment failed it).
class MachineBusyError : public std::runtime_error {
 public:
  // `cause`: why the times stayed disturbed and after how many measurements, without the
  // advice of `message`, which is tune's (batch gives its own).
  MachineBusyError(const std::string& message, std::string cause)
      : std::runtime_error(message), cause_(std::move(cause)) {}
  const std::string& cause() const { return cause_; }

 private:
  std::string cause_;
};

// What a long tune tells its caller while it runs.
struct TuneProgress {
  std::function<void(const std::string& stage)> stage;
  std::function<void(size_t done, size_t total)> step;
};

// Orderings beyond this many nonzeros are not computed by default for the partition ordering.
constexpr int64_t kPartitionOrderingMaxNnz = 4000000;

// Orderings tried on the best schedules of the first round, in the final round timed with
// them: degree (symmetric and rows only) and RCM, and METIS partitions up to
// kPartitionOrderingMaxNnz nonzeros (Louvain communities take minutes on large graphs: only when
// asked).
std::vector<OrderingKind> DefaultOrderings();

// How many of the first round's schedules the final round times again. One contest's medians
// move by 3% between processes at the median and by 10% at p90 (a suite bench's three contests
// of 254 contenders), so the schedules within that of the first round's best are all candidates
// for the winner: in a pool of a hundred or more, the true best often times a few percent high
// once and ranks fourth or fifth, and the third best by chance is taken instead.
struct FinalRoundSize {
  size_t least = 3;       // the fastest this many, whatever their times
  size_t most = 6;        // and up to this many in all whose times are within `within`
  double within = 0.10;   // of the fastest, as a share of its time
  size_t renumbered = 2;  // the best unordered ones, renumbered by every ordering
  // Called in the tuned order, a renumbering costs nothing a call and can lift schedules from
  // further down the first round (on an R-MAT graph the degree order took the unordered 2-D
  // blocks from 7.97 to 6.87 ms), so more are renumbered; on the two graphs measured the
  // winner still came from the best two.
  size_t renumbered_in_tuned_order = 4;
  // And the fastest library rule (source "heuristic") when none is among them and its time is
  // within this share of the fastest: the first round times each schedule in one packing and
  // one group, scaled for the drift between groups by FixedCSR's times, and a rule's time
  // there can be far off. A rule that splits its rows evenly timed 0.295 ms on a band where
  // three later contests gave it 0.227-0.231 and the stored winner 0.258-0.271; on a host whose
  // threads moved between near and far cores, an SDDMM rule timed 1.44x the model's pick
  // there and 0.84x in seven contests of a bench.
  double rule_within = 1.0;
};

// The final round: the first round's verified schedules that FinalRoundSize admits as they are,
// and its best `size.renumbered` unordered ones renumbered by every ordering in `orderings`
// that applies to `tensor` (a matrix), to be timed together; "best" and "within" by ChoiceCost
// for `calls`. The first round's best time is the luckiest of several close ones (a winner
// measured 6.5 ms there ran 5.1 ms in bench, where the one stored instead ran 5.7 ms), so the
// winner is chosen from times taken again, side by side.
std::vector<TuneCandidate> FinalRound(const std::vector<TuneCandidate>& candidates,
                                      const std::vector<RunResult>& results,
                                      const CooTensor& tensor,
                                      const std::vector<OrderingKind>& orderings,
                                      const FinalRoundSize& size, int64_t calls = 0);

// What a tune minimizes: the time of a call (calls 0: the operand is prepared once and called
// more often than anyone counts), or the preparation (ordering and packing) plus `calls` calls.
double ChoiceCost(const RunResult& result, int64_t calls);

struct MeasuringOptions {
  std::string path;      // the operand's file, for messages
  double max_ms = 1000;  // a run slower than this (and than 20 times FixedCSR's first) stops
  uint64_t seed = 1;
  BusyPolicy on_busy = BusyPolicy::kFail;
  std::vector<OrderingKind> orderings = DefaultOrderings();
  // Schedules to measure in a second round before the final one, none of them among the first
  // round's candidates, given those candidates and their results (tune's
  // RefinementCandidates); unset or none: no second round.
  std::function<std::vector<TuneCandidate>(const std::vector<TuneCandidate>&,
                                           const std::vector<RunResult>&)>
      second_round;
  int second_round_steps = 1;  // each step's schedules drawn from the results of all before it
  // Schedules to time beside the final round's winner in a last round, given the candidates
  // and the winner's index (tune's LeaderNeighbours); unset or none: no leader round.
  std::function<std::vector<TuneCandidate>(const std::vector<TuneCandidate>&, size_t)> leader_round;
  // Contests of the final round, each packing afresh; a finalist's median one counts.
  int final_contests = 3;
  // Then the finalists within `runoff_within` of the fastest (RunoffFinalists) are timed in
  // this many more, and the median of all their contests counts.
  int runoff_contests = 4;
  double runoff_within = 0.05;
  // 0: the winner is the fastest a call; N: the least preparation plus N calls (ChoiceCost),
  // with the preparation of the candidates that could be finalists (twice FinalRoundSize's
  // most, by cost) timed again on fresh memory, as a caller's would run, before the final
  // round is drawn.
  int64_t calls = 0;
  // Every candidate called in its tuned order (RunOptions::tuned_order), as an iterative method
  // that converts its operands once calls it; the final round then renumbers more of the first
  // round's best (FinalRoundSize::renumbered_in_tuned_order), for every ordering asked for.
  bool tuned_order = false;
};

// A schedule's result over several contests: the one with the median time (the slower middle
// of an even count), its time weighing the contests' two thread placements where they saw
// both (CombineContests), or the first that did not run (a schedule that timed out once is not
// trusted to run).
RunResult MedianContest(const std::vector<RunResult>& contests);

// The finalists (indices into `typical`, their median contests) whose call times are within
// `within` of the fastest's, the fastest first, or none when fewer than two are. Three contests
// do not separate them: on a pruned layer, two tile shapes whose medians of nine contests are 7%
// apart came out of three contests 1.2% apart the other way, and the slower was stored.
std::vector<size_t> RunoffFinalists(const std::vector<RunResult>& typical, double within);

// Whether a finalist's contests together saw fewer than kMinPlacementRounds rounds of a thread
// placement that the process has seen that many of (`seen`) and in at least
// kMinMissedPlacementShare of its rounds (FarShare), so that its time is one placement's alone
// while its rivals' may weigh both, and the other would weigh enough to matter.
bool MissesAPlacement(const std::vector<RunResult>& contests, const PlacementTally& seen);
constexpr double kMinMissedPlacementShare = 0.15;

// At most this many more contests of the run-off, while one of its finalists MissesAPlacement.
constexpr int kMaxPlacementContests = 6;

// A neighbour of the final round's winner becomes a finalist when it beat the winner by this
// much in the leader round's contests: within the noise of three medians it teaches nothing.
constexpr double kLeaderWinMargin = 0.01;

// The leader round's verdict on the winner's neighbours. `typical` holds the median contests of
// that round, the winner's first; `leader_final` is the winner's final-round result. Each
// neighbour's result is brought to the final round's times (scaled by the winner's time there
// over its time here, so that the finalists compare as they ran beside it; as every drift
// correction, not within kDriftTolerance), and it becomes a finalist when its ChoiceCost for
// `calls` beat the winner's by kLeaderWinMargin.
struct LeaderRoundVerdict {
  std::vector<RunResult> neighbours;  // typical[1...], scaled
  std::vector<bool> finalist;
};
LeaderRoundVerdict JudgeLeaderRound(const RunResult& leader_final,
                                    const std::vector<RunResult>& typical, int64_t calls);

// How much slower (above 1) or faster than in the first round the final round ran: the median,
// over the finalists timed in both, of the final round's time over the first's (`first_round[o]`
// and `final_round[o]` are one schedule's), or 1 when it is within kDriftTolerance or none ran in
// both. The first round's other times are scaled by it. Finalists were the first round's fastest,
// luck included, so the median leans a little above 1; the tolerance absorbs that.
double FinalRoundDrift(const std::vector<RunResult>& first_round,
                       const std::vector<RunResult>& final_round);

// Two timings of identical code (FixedCSR measured twice in one contest) that differ by more
// than `relative_limit` of the faster one and by `excess_ms` say the machine was busy, whatever
// the probe saw: why, or "" when they agree (or either did not run).
std::string TwinDisagreement(const RunResult& first, const RunResult& second, double relative_limit,
                             double excess_ms);

// After a contest whose times stayed disturbed, the schedules to measure again, `anchor` (the
// drift anchor) first: every schedule of a group whose timing stayed disturbed, and both FixedCSR
// twins (the first and the last) when they disagree; every schedule, in order, when the anchor's
// own time was disturbed or did not run, since the others' times are scaled to it. A machine
// that moves its threads between near and far cores disturbs a group now and then, and measuring
// every group again cost a tune of a hundred candidates 20 minutes a time.
std::vector<size_t> SchedulesToMeasureAgain(const std::vector<RunResult>& results, size_t anchor);

// One candidate's line of a tune report.
struct TuneCandidateResult {
  std::string schedule_json;
  std::string source;
  std::string status;  // "ok" or a RunStatusName
  std::string message;
  double time_ms = 0;
  double pack_ms = 0;      // ordering and packing
  double ordering_ms = 0;  // of which ordering
  bool finalist = false;   // timed again in the final round
  // The rounds of its time whose threads shared a last-level cache and whose did not, and its
  // median in each (TimingResult): which placements the time weighs.
  int near_rounds = 0;
  int far_rounds = 0;
  double near_ms = 0;
  double far_ms = 0;
};

struct Measured {
  // The candidates (FixedCSR first), the second round's after them, then the ordered variants
  // of the final round.
  std::vector<TuneCandidate> candidates;
  // One per candidate, then FixedCSR's repeat.
  std::vector<RunResult> results;
  std::vector<TuneCandidateResult> lines;  // one per candidate, as the report shows them
  int attempts = 1;                        // how many times the first round was measured
  std::string disturbance;                 // why the times stayed disturbed ("" when they did not)
  // "measure", "second" for the second round, "final" for the final round and "runoff" for
  // the part of it that RunoffFinalists asked for
  std::map<std::string, double> stage_ms;
  // The candidates the final round timed again (empty when it had fewer than two): the winner
  // is one of them, judged only against times taken beside it.
  std::vector<size_t> finalists;
  int64_t calls = 0;  // MeasuringOptions::calls: what the winner is chosen for
};

// The winner: the verified finalist of least ChoiceCost, or, without a final round, the
// verified candidate of least; -1 when none verified.
int WinningCandidate(const Measured& m);

// Measures `candidates` (FixedCSR first) on `tensor`. Throws MachineBusyError when the times
// stay disturbed under BusyPolicy::kFail.
Measured MeasureCandidates(const Expression& expression, const CooTensor& tensor,
                           const IndexSizes& sizes, DType dtype, Jit& jit,
                           std::vector<TuneCandidate> candidates, const MeasuringOptions& options,
                           const TuneProgress& progress);

}  // namespace sparsetune
