#include "tune/measuring.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "measure/contest.hpp"
#include "ordering/ordering.hpp"

namespace sparsetune {

namespace {

// Tune's FixedCSR twins farther apart than this share (TwinDisagreement) say the machine was
// busy, whatever the probe saw: tune only needs the winner to stand out of the noise.
constexpr double kTuneTwinLimit = 0.5;
constexpr double kTuneTwinExcessMs = 0.02;
// Whole measurements made before a disturbance counts as a busy machine. Settled kernels of a
// few tens of microseconds on a virtual machine's cores still meet a slow spell now and then
// (a 39 us FixedCSR SpMV at 80 us for seconds, on an idle guest); a third attempt passes it.
constexpr int kMeasureAttempts = 3;

// Why a contest's times cannot pick a winner, or "": a group's timing still disturbed, or the
// FixedCSR twins (the first and the last schedule) far apart.
std::string DisturbanceOf(const std::vector<RunResult>& results) {
  for (const RunResult& r : results) {
    if (r.ok() && r.time.disturbed) return r.time.disturbance;
  }
  if (results.size() > 1)
    return TwinDisagreement(results.front(), results.back(), kTuneTwinLimit, kTuneTwinExcessMs);
  return "";
}

// Tune's timing protocol: a longer warm-up and more repeats than a collection's.
ContestOptions TuneContest(KernelRunner& runner, const TuneCandidate& fixed_csr,
                           const MeasuringOptions& options) {
  ContestOptions contest;
  contest.run.timing.warmup_runs = 2;
  contest.run.timing.warmup_ms = 20;
  contest.run.timing.min_reps = 10;
  contest.run.timing.min_total_ms = 100;
  // Candidates 3x behind the best (SDDMM samples run seconds where the best runs 20 ms) are
  // not timed to the full count: their medians are rough, and they were never going to win.
  contest.run.timing.drop_slower_than = 3;
  {
    // FixedCSR's first run scales the limit: large operands are allowed longer runs.
    RunOptions probe;
    const PreparedKernel fixed = runner.Prepare(fixed_csr.schedule, probe);
    contest.run.timing.max_ms_per_run = std::max(options.max_ms, 20 * fixed.result().verify_run_ms);
  }
  contest.run.tuned_order = options.tuned_order;
  contest.seed = options.seed;
  contest.drift_anchor = 0;  // FixedCSR, first
  if (options.on_busy == BusyPolicy::kIgnore) contest.run.timing.disturbance_retries = 0;
  return contest;
}

// Values a renumbered kernel permutes on every call: the dense operands (and a dense output)
// indexed by the sparse operand's indices.
int64_t PermutedValuesPerCall(const KernelRunner& runner) {
  const Expression& e = runner.expression();
  const auto& sparse = e.sparse_input().indices;
  int64_t values = 0;
  for (size_t t = 0; t < e.tensors.size(); ++t) {
    if (static_cast<int>(t) == e.sparse || (t == 0 && e.sparse_output_prefix > 0)) continue;
    const auto& indices = e.tensors[t].indices;
    if (std::none_of(indices.begin(), indices.end(), [&](const std::string& index) {
          return std::find(sparse.begin(), sparse.end(), index) != sparse.end();
        }))
      continue;
    int64_t size = 1;
    for (const auto& index : indices) size *= runner.sizes().at(index);
    values += size;
  }
  return values;
}

// The orderings the final round tries: those asked for, and of the defaults (--orderings
// auto) only those that can pay here.
std::vector<OrderingKind> OrderingsToTry(const KernelRunner& runner,
                                         const std::vector<OrderingKind>& asked, bool tuned_order) {
  if (asked != DefaultOrderings()) return asked;
  // A renumbered kernel permutes its dense operands on every call (unless called in the tuned
  // order). Where they hold more values than the matrix has nonzeros (SpMM's and SDDMM's rows
  // of 256), the ordered variants lost on all 22 SpMM and SDDMM matrices of a suite run (1.05x
  // to 3x behind the best unordered schedule; 11.7 s of a 33 s tune on one).
  if (!tuned_order && PermutedValuesPerCall(runner) > runner.sparse().nnz()) return {};
  std::vector<OrderingKind> out;
  for (OrderingKind kind : asked) {
    // METIS takes minutes on large graphs.
    if (kind == OrderingKind::kPartition && runner.sparse().nnz() > kPartitionOrderingMaxNnz)
      continue;
    out.push_back(kind);
  }
  return out;
}

// Measures schedules[again] (again[0] the drift anchor) side by side once more and puts their
// times in `results`, scaled to the frame of the anchor's earlier time, which is kept.
void MeasureAgain(KernelRunner& runner, const std::vector<Schedule>& schedules,
                  const std::vector<size_t>& again, Jit& jit, const ContestOptions& contest,
                  const ContestObserver& observer, std::vector<RunResult>& results) {
  std::vector<Schedule> subset;
  ContestOptions round = contest;
  round.timed_in_full.clear();
  for (size_t k = 0; k < again.size(); ++k) {
    subset.push_back(schedules[again[k]]);
    if (std::count(contest.timed_in_full.begin(), contest.timed_in_full.end(), again[k]))
      round.timed_in_full.push_back(k);
  }
  round.drift_anchor = 0;
  const std::vector<RunResult> remeasured = MeasureTogether(runner, subset, jit, round, observer);
  const double scale = DriftScale(results[again[0]], remeasured[0]);
  for (size_t k = 1; k < again.size(); ++k) {
    results[again[k]] = remeasured[k];
    ScaleForDrift(results[again[k]], scale);
  }
}

// Measures `schedules` side by side, again while the times look disturbed (up to
// kMeasureAttempts in all); the attempts made and why the times stayed disturbed ("" if not).
std::vector<RunResult> MeasureUndisturbed(
    KernelRunner& runner, const std::vector<Schedule>& schedules, Jit& jit,
    const ContestOptions& contest, const ContestObserver& observer, const MeasuringOptions& options,
    const TuneProgress& progress, int* attempts, std::string* disturbance) {
  std::vector<RunResult> results = MeasureTogether(runner, schedules, jit, contest, observer);
  *attempts = 1;
  *disturbance = DisturbanceOf(results);
  while (!disturbance->empty() && options.on_busy != BusyPolicy::kIgnore &&
         *attempts < kMeasureAttempts) {
    const size_t anchor = contest.drift_anchor.value_or(0);
    const std::vector<size_t> again = SchedulesToMeasureAgain(results, anchor);
    const bool everything = again.size() == schedules.size();
    std::string what = "again";
    if (!everything)
      what = std::to_string(again.size()) + " of " + std::to_string(schedules.size()) + " again";
    if (progress.stage) progress.stage("measuring " + what + " (" + *disturbance + ")");
    if (everything) {
      results = MeasureTogether(runner, schedules, jit, contest, observer);
    } else {
      MeasureAgain(runner, schedules, again, jit, contest, observer, results);
    }
    ++*attempts;
    *disturbance = DisturbanceOf(results);
  }
  if (!disturbance->empty() && options.on_busy == BusyPolicy::kFail) {
    const std::string cause = "the times were disturbed while measuring " + options.path + " (" +
                              *disturbance + ", after measuring " + std::to_string(*attempts) +
                              " times)";
    throw MachineBusyError(cause +
                               ": nothing was stored; tune again on a quiet machine, or store it "
                               "anyway with --on-busy store",
                           cause);
  }
  return results;
}

// A step of the second round (MeasuringOptions::second_round): its schedules measured side by
// side with FixedCSR twice, as the first round's, and appended to the candidates; false when
// there was nothing left to measure.
bool MeasureSecondRound(KernelRunner& runner, Jit& jit, const ContestOptions& contest,
                        const ContestObserver& observer, const MeasuringOptions& options,
                        const TuneProgress& progress, int step, Measured& m) {
  std::vector<TuneCandidate> more = options.second_round(m.candidates, m.results);
  if (more.empty()) return false;
  if (progress.stage)
    progress.stage(options.second_round_steps > 1
                       ? "second round, step " + std::to_string(step + 1) + " of " +
                             std::to_string(options.second_round_steps)
                       : std::string("second round"));
  const auto start = std::chrono::steady_clock::now();
  std::vector<Schedule> schedules{m.candidates[0].schedule};
  for (const auto& c : more) schedules.push_back(c.schedule);
  schedules.push_back(m.candidates[0].schedule);
  ContestOptions round = contest;
  round.timed_in_full = {0, schedules.size() - 1};
  int attempts = 1;
  std::string disturbance;
  const std::vector<RunResult> results = MeasureUndisturbed(
      runner, schedules, jit, round, observer, options, progress, &attempts, &disturbance);
  if (m.disturbance.empty()) m.disturbance = disturbance;
  m.attempts = std::max(m.attempts, attempts);
  // Measured a minute after the first round, on a machine whose speed drifts: scaled by
  // FixedCSR's time then over its time now, as the first round's groups are (MeasureTogether).
  const double scale = DriftScale(m.results[0], results[0]);
  for (size_t o = 0; o < more.size(); ++o) {
    RunResult result = results[o + 1];
    ScaleForDrift(result, scale);
    m.candidates.push_back(std::move(more[o]));
    m.results.insert(m.results.end() - 1, result);  // the FixedCSR repeat stays last
  }
  m.stage_ms["second"] += MsSince(start);
  return true;
}

// A candidate's renumbering and packing timed again on fresh memory, as a caller's would run:
// the packs before it in this process left it memory that is already mapped.
void RetimePreparation(KernelRunner& runner, const TuneCandidate& candidate, RunResult& result) {
  double ordering_ms = 0, pack_ms = 0;
  if (result.ok() &&
      runner.TimePreparationOnFreshMemory(candidate.schedule, &ordering_ms, &pack_ms)) {
    result.ordering_ms = ordering_ms;
    result.pack_ms = pack_ms;
  }
}

// Chosen for a call count, the first round's `count` cheapest candidates have their
// preparation timed again on fresh memory before the final round is drawn from them. The first
// round packs on memory that earlier packs mapped, which hides a layout's page faults (a 2-D
// tile packed in 242 ms there took 453 ms fresh), so by its times a layout that prepares slowly
// could take a finalist's place from one that prepares fast. Returns the fresh times by schedule.
std::map<std::string, std::pair<double, double>> RetimeLeadersPreparation(KernelRunner& runner,
                                                                          Measured& m,
                                                                          size_t count) {
  std::vector<size_t> ranked;
  for (size_t c = 0; c < m.candidates.size(); ++c) {
    if (m.results[c].ok()) ranked.push_back(c);
  }
  std::sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    return ChoiceCost(m.results[a], m.calls) < ChoiceCost(m.results[b], m.calls);
  });
  if (ranked.size() > count) ranked.resize(count);
  std::map<std::string, std::pair<double, double>> fresh;
  for (size_t c : ranked) {
    RetimePreparation(runner, m.candidates[c], m.results[c]);
    fresh[m.candidates[c].json] = {m.results[c].ordering_ms, m.results[c].pack_ms};
  }
  return fresh;
}

// One contest of a round after the first (the `k`-th of the final round, or beyond), its
// schedules packed afresh in an order of its own.
std::vector<RunResult> LateContest(KernelRunner& runner, Jit& jit, const ContestOptions& contest,
                                   const ContestObserver& observer,
                                   const std::vector<Schedule>& schedules, uint64_t k) {
  ContestOptions round = contest;
  round.timed_in_full.clear();  // its indices were the first round's
  round.seed = contest.seed + 1 + k;
  return MeasureTogether(runner, schedules, jit, round, observer);
}

// The final round (FinalRound), timed in options.final_contests contests, each packing its
// schedules afresh in another order. Each finalist's median contest replaces its first-round
// time, so the winner is chosen among times taken side by side, and a schedule that is fast in
// one packing and slow in the next (bimodal on stencils: 6.8 or 9.4 ms) is judged by its
// typical time, not its luckiest.
void MeasureFinalRound(KernelRunner& runner, Jit& jit, const ContestOptions& contest,
                       const ContestObserver& observer, const MeasuringOptions& options,
                       const TuneProgress& progress, Measured& m) {
  FinalRoundSize size;
  if (options.tuned_order) size.renumbered = size.renumbered_in_tuned_order;
  std::map<std::string, std::pair<double, double>> fresh;
  if (options.calls > 0) fresh = RetimeLeadersPreparation(runner, m, 2 * size.most);
  const std::vector<TuneCandidate> final_round = FinalRound(
      m.candidates, m.results, runner.sparse(),
      OrderingsToTry(runner, options.orderings, options.tuned_order), size, options.calls);
  if (final_round.size() <= 1) return;
  const auto start = std::chrono::steady_clock::now();
  const int contests = std::max(1, options.final_contests);
  std::vector<std::vector<RunResult>> per_finalist(final_round.size());
  // One contest of the finalists `who`, the final round's `k`-th, packed afresh in its own order.
  auto contest_of = [&](const std::vector<size_t>& who, int k, const std::string& stage) {
    if (progress.stage) progress.stage(stage);
    std::vector<Schedule> timed;
    for (size_t o : who) timed.push_back(final_round[o].schedule);
    const std::vector<RunResult> again =
        LateContest(runner, jit, contest, observer, timed, static_cast<uint64_t>(k));
    for (size_t i = 0; i < who.size(); ++i) per_finalist[who[i]].push_back(again[i]);
  };
  std::vector<size_t> everyone(final_round.size());
  for (size_t o = 0; o < everyone.size(); ++o) everyone[o] = o;
  for (int k = 0; k < contests; ++k) {
    contest_of(everyone, k,
               contests > 1 ? "final round, contest " + std::to_string(k + 1) + " of " +
                                  std::to_string(contests)
                            : std::string("final round"));
  }
  std::vector<RunResult> typical(final_round.size());
  for (size_t o = 0; o < final_round.size(); ++o) typical[o] = MedianContest(per_finalist[o]);
  const std::vector<size_t> close = RunoffFinalists(typical, options.runoff_within);
  if (!close.empty() && options.runoff_contests > 0) {
    const auto runoff_start = std::chrono::steady_clock::now();
    for (int k = 0; k < options.runoff_contests; ++k) {
      contest_of(close, contests + k,
                 "final round, run-off of " + std::to_string(close.size()) + ", contest " +
                     std::to_string(k + 1) + " of " + std::to_string(options.runoff_contests));
    }
    // Static chunks run fast while the threads sit on cores that share a cache and slow while
    // they do not: a run-off of short contests that all fell in one placement judged them by it
    // (SpMV on diagonals: 0.213 ms in its tune, 0.212-0.268 in a bench's three contests).
    for (int k = 0; k < kMaxPlacementContests; ++k) {
      const PlacementTally seen = ObservedPlacements();
      if (std::none_of(close.begin(), close.end(),
                       [&](size_t o) { return MissesAPlacement(per_finalist[o], seen); }))
        break;
      contest_of(
          close, contests + options.runoff_contests + k,
          "final round, run-off for both thread placements, contest " + std::to_string(k + 1));
    }
    for (size_t o : close) typical[o] = MedianContest(per_finalist[o]);
    m.stage_ms["runoff"] = MsSince(runoff_start);
  }
  std::vector<RunResult> before, after;  // the finalists the first round timed, then and now
  for (size_t o = 0; o < final_round.size(); ++o) {
    auto same = std::find_if(m.candidates.begin(), m.candidates.end(),
                             [&](const TuneCandidate& c) { return c.json == final_round[o].json; });
    if (same != m.candidates.end()) {
      before.push_back(m.results[same - m.candidates.begin()]);
      after.push_back(typical[o]);
      m.results[same - m.candidates.begin()] = typical[o];
      m.finalists.push_back(same - m.candidates.begin());
    } else {
      m.finalists.push_back(m.candidates.size());
      m.candidates.push_back(final_round[o]);
      m.results.insert(m.results.end() - 1, typical[o]);  // the FixedCSR repeat stays last
    }
  }
  // The rest keep their first-round times, taken minutes earlier on a host whose speed drifts:
  // brought to the final round's, so the report (and the speedup over FixedCSR) compares times
  // of one moment. The winner, chosen among the finalists alone, does not change.
  const double drift = FinalRoundDrift(before, after);
  for (size_t r = 0; r < m.results.size(); ++r) {
    if (std::find(m.finalists.begin(), m.finalists.end(), r) == m.finalists.end())
      ScaleForDrift(m.results[r], drift);
  }
  // Chosen by preparation too: each finalist's timed as a caller's first one would be (the
  // contests packed on reused memory again), once.
  if (options.calls > 0) {
    for (size_t c : m.finalists) {
      const auto known = fresh.find(m.candidates[c].json);
      if (known == fresh.end()) {
        RetimePreparation(runner, m.candidates[c], m.results[c]);
      } else {
        std::tie(m.results[c].ordering_ms, m.results[c].pack_ms) = known->second;
      }
    }
  }
  m.stage_ms["final"] = MsSince(start);
}

// The leader round: the final round's winner beside schedules one move from it
// (options.leader_round), in options.final_contests contests of their own. The second round
// judged the neighbourhood of the first round's best by one contest's times each, taken minutes
// apart on a host whose speed drifts (one SDDMM rule timed 30.3 ms in one tune's first round
// and 22.3 ms in another's), so the winner's own neighbours, told apart from it only side by
// side, are timed so; one that beats it becomes a finalist (JudgeLeaderRound).
void MeasureLeaderRound(KernelRunner& runner, Jit& jit, const ContestOptions& contest,
                        const ContestObserver& observer, const MeasuringOptions& options,
                        const TuneProgress& progress, Measured& m) {
  if (!options.leader_round || m.finalists.empty()) return;
  const int leader = WinningCandidate(m);
  if (leader < 0) return;
  std::vector<TuneCandidate> near = options.leader_round(m.candidates, static_cast<size_t>(leader));
  if (near.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  std::vector<Schedule> timed{m.candidates[leader].schedule};
  for (const auto& c : near) timed.push_back(c.schedule);
  const int contests = std::max(1, options.final_contests);
  std::vector<std::vector<RunResult>> per_schedule(timed.size());
  for (int k = 0; k < contests; ++k) {
    if (progress.stage)
      progress.stage("leader round, contest " + std::to_string(k + 1) + " of " +
                     std::to_string(contests));
    // Seeds apart from the final round's and its run-off's.
    const std::vector<RunResult> again =
        LateContest(runner, jit, contest, observer, timed, 100 + static_cast<uint64_t>(k));
    for (size_t i = 0; i < timed.size(); ++i) per_schedule[i].push_back(again[i]);
  }
  std::vector<RunResult> typical(timed.size());
  for (size_t i = 0; i < timed.size(); ++i) typical[i] = MedianContest(per_schedule[i]);
  if (options.calls > 0) {
    for (size_t o = 0; o < near.size(); ++o) RetimePreparation(runner, near[o], typical[o + 1]);
  }
  const LeaderRoundVerdict verdict = JudgeLeaderRound(m.results[leader], typical, options.calls);
  for (size_t o = 0; o < near.size(); ++o) {
    if (verdict.finalist[o]) m.finalists.push_back(m.candidates.size());
    m.candidates.push_back(std::move(near[o]));
    m.results.insert(m.results.end() - 1, verdict.neighbours[o]);  // the FixedCSR repeat stays last
  }
  m.stage_ms["leader"] = MsSince(start);
}

// The winner's renumbering and packing timed again on fresh memory: the report's preparation
// time and break-even count are a caller's.
void RetimeWinnersPreparation(KernelRunner& runner, Measured& m) {
  const int best = WinningCandidate(m);
  if (best < 0) return;
  // Chosen for a call count, the finalists' were timed so already.
  if (m.calls > 0 && !m.finalists.empty()) return;
  RetimePreparation(runner, m.candidates[best], m.results[best]);
}

TuneCandidateResult LineOf(const TuneCandidate& candidate, const RunResult& r) {
  TuneCandidateResult line;
  line.schedule_json = candidate.json;
  line.source = candidate.source;
  line.status = RunStatusName(r.status);
  line.message = r.message;
  if (r.ok()) {
    line.time_ms = r.time.median_ms;
    line.pack_ms = r.pack_ms + r.ordering_ms;
    line.ordering_ms = r.ordering_ms;
    line.near_rounds = r.time.near_rounds;
    line.far_rounds = r.time.far_rounds;
    line.near_ms = r.time.near_ms;
    line.far_ms = r.time.far_ms;
  }
  return line;
}

}  // namespace

std::vector<TuneCandidate> FinalRound(const std::vector<TuneCandidate>& candidates,
                                      const std::vector<RunResult>& results,
                                      const CooTensor& tensor,
                                      const std::vector<OrderingKind>& orderings,
                                      const FinalRoundSize& size, int64_t calls) {
  std::vector<OrderingKind> apply;
  if (tensor.order() == 2) {
    for (OrderingKind kind : orderings) {
      if (OrderingRefusal(tensor, kind).empty()) apply.push_back(kind);
    }
  }
  std::vector<size_t> ranked;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (results[c].ok()) ranked.push_back(c);
  }
  std::sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    return ChoiceCost(results[a], calls) < ChoiceCost(results[b], calls);
  });
  const double fastest = ranked.empty() ? 0 : ChoiceCost(results[ranked[0]], calls);
  std::vector<TuneCandidate> out;
  size_t unordered = 0;
  for (size_t rank = 0; rank < ranked.size(); ++rank) {
    const TuneCandidate& candidate = candidates[ranked[rank]];
    const bool renumber =
        candidate.schedule.ordering == OrderingKind::kNone && unordered < size.renumbered;
    const bool close =
        rank < size.most && ChoiceCost(results[ranked[rank]], calls) <= (1 + size.within) * fastest;
    if (rank >= size.least && !close && !renumber) continue;
    AddDistinct(out, candidate);
    if (!renumber) continue;
    ++unordered;
    for (OrderingKind kind : apply) {
      TuneCandidate variant = candidate;
      variant.schedule.ordering = kind;
      variant.source += std::string("+") + OrderingName(kind);
      AddDistinct(out, std::move(variant));
    }
  }
  const auto is_rule = [](const TuneCandidate& c) { return c.source == "heuristic"; };
  if (size.rule_within > 0 && std::none_of(out.begin(), out.end(), is_rule)) {
    for (size_t c : ranked) {
      if (!is_rule(candidates[c])) continue;
      if (ChoiceCost(results[c], calls) <= (1 + size.rule_within) * fastest)
        AddDistinct(out, candidates[c]);
      break;
    }
  }
  return out;
}

std::vector<size_t> RunoffFinalists(const std::vector<RunResult>& typical, double within) {
  std::vector<size_t> ran;
  for (size_t o = 0; o < typical.size(); ++o) {
    if (typical[o].ok()) ran.push_back(o);
  }
  std::stable_sort(ran.begin(), ran.end(), [&](size_t a, size_t b) {
    return typical[a].time.median_ms < typical[b].time.median_ms;
  });
  std::vector<size_t> close;
  for (size_t o : ran) {
    if (typical[o].time.median_ms <= (1 + within) * typical[ran[0]].time.median_ms)
      close.push_back(o);
  }
  if (close.size() < 2) close.clear();
  return close;
}

bool MissesAPlacement(const std::vector<RunResult>& contests, const PlacementTally& seen) {
  if (seen.near_rounds < kMinPlacementRounds || seen.far_rounds < kMinPlacementRounds) return false;
  int near = 0, far = 0;
  for (const RunResult& r : contests) {
    if (!r.ok()) return false;  // it does not run: more contests will not change that
    near += r.time.near_rounds;
    far += r.time.far_rounds;
  }
  const double far_share = seen.FarShare();
  return (near < kMinPlacementRounds && 1 - far_share >= kMinMissedPlacementShare) ||
         (far < kMinPlacementRounds && far_share >= kMinMissedPlacementShare);
}

double FinalRoundDrift(const std::vector<RunResult>& first_round,
                       const std::vector<RunResult>& final_round) {
  std::vector<double> ratios;
  for (size_t o = 0; o < first_round.size() && o < final_round.size(); ++o) {
    if (first_round[o].ok() && final_round[o].ok() && first_round[o].time.median_ms > 0)
      ratios.push_back(final_round[o].time.median_ms / first_round[o].time.median_ms);
  }
  if (ratios.empty()) return 1;
  return DriftScale(ratios[MedianContestIndex(ratios)], 1.0);
}

RunResult MedianContest(const std::vector<RunResult>& contests) {
  if (contests.empty()) throw std::invalid_argument("MedianContest: no contests");
  std::vector<double> times;
  std::vector<TimingResult> timings;
  for (const RunResult& r : contests) {
    if (!r.ok()) return r;
    times.push_back(r.time.median_ms);
    timings.push_back(r.time);
  }
  RunResult out = contests[MedianContestIndex(times)];
  out.time = CombineContests(timings, ObservedPlacements().FarShare());
  return out;
}

LeaderRoundVerdict JudgeLeaderRound(const RunResult& leader_final,
                                    const std::vector<RunResult>& typical, int64_t calls) {
  LeaderRoundVerdict verdict;
  if (typical.empty()) return verdict;
  const RunResult& leader_here = typical[0];
  const bool comparable = leader_final.ok() && leader_here.ok() && leader_here.time.median_ms > 0;
  const double scale = comparable ? DriftScale(leader_final, leader_here) : 1;
  for (size_t o = 1; o < typical.size(); ++o) {
    RunResult result = typical[o];
    ScaleForDrift(result, scale);
    verdict.finalist.push_back(comparable && result.ok() &&
                               ChoiceCost(result, calls) <
                                   (1 - kLeaderWinMargin) * ChoiceCost(leader_final, calls));
    verdict.neighbours.push_back(std::move(result));
  }
  return verdict;
}

double ChoiceCost(const RunResult& result, int64_t calls) {
  if (calls <= 0) return result.time.median_ms;
  return result.ordering_ms + result.pack_ms + static_cast<double>(calls) * result.time.median_ms;
}

int WinningCandidate(const Measured& m) {
  auto fastest_of = [&](auto&& indices) {
    int best = -1;
    for (size_t c : indices) {
      if (m.results[c].ok() &&
          (best < 0 || ChoiceCost(m.results[c], m.calls) < ChoiceCost(m.results[best], m.calls)))
        best = static_cast<int>(c);
    }
    return best;
  };
  const int finalist = fastest_of(m.finalists);
  if (finalist >= 0) return finalist;
  std::vector<size_t> all(m.candidates.size());
  for (size_t c = 0; c < all.size(); ++c) all[c] = c;
  return fastest_of(all);
}

std::string TwinDisagreement(const RunResult& first, const RunResult& second, double relative_limit,
                             double excess_ms) {
  if (!first.ok() || !second.ok()) return "";
  const double a = first.time.median_ms, b = second.time.median_ms;
  if (std::fabs(a - b) <= excess_ms || std::fabs(a - b) <= relative_limit * std::min(a, b))
    return "";
  char text[160];
  std::snprintf(text, sizeof text,
                "two timings of the same FixedCSR kernel differ: %.4g and %.4g ms", a, b);
  return text;
}

std::vector<OrderingKind> DefaultOrderings() {
  return {OrderingKind::kDegree, OrderingKind::kRowDegree, OrderingKind::kRcm,
          OrderingKind::kPartition};
}

BusyPolicy ParseBusyPolicy(const std::string& text, const std::string& what) {
  if (text == "fail") return BusyPolicy::kFail;
  if (text == "store") return BusyPolicy::kStore;
  if (text == "ignore") return BusyPolicy::kIgnore;
  throw InputError(what + ": expected \"fail\", \"store\" or \"ignore\", not \"" +
                   text.substr(0, 40) + "\"");
}

std::vector<size_t> SchedulesToMeasureAgain(const std::vector<RunResult>& results, size_t anchor) {
  std::vector<size_t> everyone(results.size());
  for (size_t s = 0; s < results.size(); ++s) everyone[s] = s;
  if (anchor >= results.size() || !results[anchor].ok() || results[anchor].time.disturbed)
    return everyone;
  std::vector<size_t> again{anchor};
  const bool twins_disagree =
      results.size() > 1 &&
      !TwinDisagreement(results.front(), results.back(), kTuneTwinLimit, kTuneTwinExcessMs).empty();
  for (size_t s = 0; s < results.size(); ++s) {
    if (s == anchor) continue;
    const bool twin = s == 0 || s == results.size() - 1;
    if ((results[s].ok() && results[s].time.disturbed) || (twins_disagree && twin))
      again.push_back(s);
  }
  return again.size() == results.size() ? everyone : again;
}

BusyPolicy BusyPolicyFromEnvironment() {
  const char* value = std::getenv("SPARSETUNE_ON_BUSY");
  if (!value || !*value) return BusyPolicy::kFail;
  return ParseBusyPolicy(value, "SPARSETUNE_ON_BUSY");
}

Measured MeasureCandidates(const Expression& expression, const CooTensor& tensor,
                           const IndexSizes& sizes, DType dtype, Jit& jit,
                           std::vector<TuneCandidate> candidates, const MeasuringOptions& options,
                           const TuneProgress& progress) {
  Measured m;
  m.candidates = std::move(candidates);
  m.calls = options.calls;
  // FixedCSR twice: two timings of identical code show the run's noise.
  std::vector<Schedule> schedules;
  for (const auto& c : m.candidates) schedules.push_back(c.schedule);
  schedules.push_back(m.candidates[0].schedule);

  if (progress.stage) progress.stage("measuring");
  const auto start = std::chrono::steady_clock::now();
  KernelRunner runner(expression, tensor, sizes, dtype, jit);
  ContestOptions contest = TuneContest(runner, m.candidates[0], options);
  // FixedCSR and its repeat give the reported speedup and the twins' noise check: both need
  // steady medians, never a cold first run.
  contest.timed_in_full = {0, schedules.size() - 1};
  ContestObserver observer;
  observer.after_step = progress.step;
  // A winner from disturbed measurements is no winner: each group was already timed again
  // while it looked disturbed (TimingOptions::disturbance_retries); if the times still were,
  // or the two timings of identical FixedCSR code disagree, everything is measured again.
  m.results = MeasureUndisturbed(runner, schedules, jit, contest, observer, options, progress,
                                 &m.attempts, &m.disturbance);
  m.stage_ms["measure"] = MsSince(start);
  if (options.second_round) {
    for (int step = 0; step < options.second_round_steps; ++step) {
      if (!MeasureSecondRound(runner, jit, contest, observer, options, progress, step, m)) break;
    }
  }
  MeasureFinalRound(runner, jit, contest, observer, options, progress, m);
  MeasureLeaderRound(runner, jit, contest, observer, options, progress, m);
  RetimeWinnersPreparation(runner, m);
  for (size_t c = 0; c < m.candidates.size(); ++c)
    m.lines.push_back(LineOf(m.candidates[c], m.results[c]));
  for (size_t c : m.finalists) m.lines[c].finalist = true;
  return m;
}

}  // namespace sparsetune
