#include "collect/collection.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "base/errors.hpp"
#include "base/threads.hpp"
#include "codegen/codegen.hpp"
#include "collect/restart_watchdog.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "io/inputs.hpp"
#include "io/read.hpp"
#include "jit/jit.hpp"
#include "measure/contest.hpp"
#include "measure/runner.hpp"
#include "measure/timing.hpp"
#include "superschedule/waco_template.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/stats.hpp"
#include "tune/candidate_sources.hpp"
#include "tune/refinement.hpp"
#include "tune/storing.hpp"

namespace sparsetune {

int64_t CollectTally::failed_total() const {
  int64_t n = 0;
  for (const auto& [reason, count] : failed) n += count;
  return n;
}

namespace {

// The `q` quantile (0 to 1) of `values`, nearest rank; 0 when there are none.
double NearestRankQuantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(q * static_cast<double>(values.size()));
  return values[std::clamp<size_t>(static_cast<size_t>(rank), 1, values.size()) - 1];
}

}  // namespace

double CollectTally::TwinSpread(double q) const {
  return NearestRankQuantile(twin_spreads, q);
}

double CollectTally::DriftCorrection(double q) const {
  return NearestRankQuantile(drift_corrections, q);
}

nlohmann::json CollectTally::ToJson() const {
  return {{"measured", measured},
          {"skipped", skipped},
          {"failed", failed},
          {"restarts", restarts},
          {"busy_matrices", busy_matrices},
          {"disturbed", disturbed},
          {"twins_retimed", twins_retimed},
          {"twin_spreads", twin_spreads},
          {"drift_corrections", drift_corrections},
          {"elapsed_before", elapsed_before},
          {"recounted", measured + failed_total() + skipped}};
}

CollectTally CollectTally::FromJson(const nlohmann::json& json) {
  CollectTally t;
  t.measured = json.value("measured", int64_t(0));
  t.skipped = json.value("skipped", int64_t(0));
  t.failed = json.value("failed", std::map<std::string, int64_t>());
  t.recounted = json.value("recounted", int64_t(0));
  t.restarts = json.value("restarts", int64_t(0));
  t.busy_matrices = json.value("busy_matrices", int64_t(0));
  t.disturbed = json.value("disturbed", int64_t(0));
  t.twins_retimed = json.value("twins_retimed", int64_t(0));
  t.twin_spreads = json.value("twin_spreads", std::vector<double>());
  t.drift_corrections = json.value("drift_corrections", std::vector<double>());
  t.elapsed_before = json.value("elapsed_before", 0.0);
  return t;
}

CollectTally TakeCarriedTally() {
  CollectTally tally;
  if (const char* state = std::getenv(kCollectStateVariable)) {
    try {
      tally = CollectTally::FromJson(nlohmann::json::parse(state));
    } catch (const std::exception&) {
    }
    unsetenv(kCollectStateVariable);
  }
  return tally;
}

double CollectReport::schedules_per_minute() const {
  const int64_t work = tally.measured + tally.failed_total();
  return elapsed_s > 0 ? work * 60.0 / elapsed_s : 0;
}

nlohmann::json CollectReport::ToJson() const {
  nlohmann::json out;
  out["kernel"] = kernel;
  out["database"] = database;
  out["files"] = files;
  out["measured"] = tally.measured;
  out["failed"] = tally.failed_total();
  out["failed_by_reason"] = tally.failed;
  out["skipped"] = tally.skipped;
  out["unreadable"] = tally.unreadable;
  out["restarts"] = tally.restarts;
  out["busy_matrices"] = tally.busy_matrices;
  out["disturbed"] = tally.disturbed;
  out["twins_retimed"] = tally.twins_retimed;
  out["twin_pairs"] = tally.twin_spreads.size();
  out["twin_spread_median"] = tally.TwinSpread(0.5);
  out["twin_spread_p90"] = tally.TwinSpread(0.9);
  out["drift_correction_median"] = tally.DriftCorrection(0.5);
  out["drift_correction_max"] = tally.DriftCorrection(1);
  out["elapsed_s"] = elapsed_s;
  out["schedules_per_minute"] = schedules_per_minute();
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

// Training data is held to a tighter bar than a tune's winner: FixedCSR's twins more than 10%
// apart (and 2 us, a timer's grain under a median of many runs) are measured again, and if they
// still disagree the matrix's times are not stored as clean.
constexpr double kCollectTwinLimit = 0.10;
constexpr double kCollectTwinExcessMs = 0.002;

class Collection {
 public:
  Collection(const CollectRequest& request, const CollectObserver& observer,
             std::vector<InputFile> files)
      : request_(request),
        observer_(observer),
        files_(std::move(files)),
        tally_(request.carried),
        db_(Database::Open(request.db_path, OpenMode::kReadWrite)),
        machine_id_(db_->UpsertMachine(DetectMachine(jit_.compiler(), Jit::Flags()))),
        // Past this a kernel is presumed stuck: pack, one verification and one timed run fit
        // well within it.
        hard_limit_s_(request.hard_limit_s > 0 ? request.hard_limit_s
                                               : 5 * request.max_ms / 1000 + 20),
        start_(Clock::now()) {
    progress_.total = int64_t(files_.size()) * (request.samples + 1 + request.neighbours);
    progress_.matrix_count = files_.size();
    if (!request.restart_command.empty()) {
      watchdog_ = std::make_unique<RestartWatchdog>(request.db_path, request.restart_command,
                                                    kCollectStateVariable);
    }
  }

  CollectReport Run() {
    for (size_t m = 0; m < files_.size(); ++m) CollectMatrix(m);
    CollectReport report;
    report.kernel = request_.kernel;
    report.database = request_.db_path;
    report.files = int64_t(files_.size());
    report.tally = tally_;
    report.elapsed_s = Elapsed();
    return report;
  }

 private:
  double Elapsed() const {
    return tally_.elapsed_before + std::chrono::duration<double>(Clock::now() - start_).count();
  }

  const CollectProgress& Snapshot() {
    progress_.measured = tally_.measured;
    progress_.failed = tally_.failed_total();
    progress_.skipped = tally_.skipped;
    progress_.elapsed_s = Elapsed();
    return progress_;
  }
  void Status(const std::string& status) {
    progress_.status = status;
    if (observer_.status) observer_.status(Snapshot());
  }
  void Progressed() {
    if (observer_.progress) observer_.progress(Snapshot());
  }
  // The file is left out; `unmeasured` schedules of it are no longer expected.
  void SkipFile(const std::string& cause, int64_t unmeasured) {
    if (observer_.file_skipped) observer_.file_skipped(cause);
    ++tally_.unreadable;
    progress_.total -= unmeasured;
  }

  void CollectMatrix(size_t m) {
    const std::string& path = files_[m].path;
    progress_.matrix_index = m;
    progress_.matrix_name = MatrixNameOf(path);
    Status("reading");
    CooTensor tensor;
    IndexSizes sizes;
    try {
      std::vector<std::string> warnings;
      tensor = ReadTensorFile(path, &warnings);
      sizes = ResolveIndexSizes(request_.expression, tensor.dims, request_.dense);
    } catch (const InputError& e) {
      SkipFile(e.what(), request_.samples + 1 + request_.neighbours);
      return;
    }
    const std::string fingerprint = PatternFingerprint(tensor);
    const PatternStats stats = ComputePatternStats(tensor);
    db_->UpsertMatrix(
        MatrixRecordOf(fingerprint, progress_.matrix_name, tensor, stats, files_[m].origin));
    const TuningKey key{fingerprint, request_.kernel, machine_id_,
                        DenseOnlySizes(request_.expression, sizes), request_.dtype};

    Status("sampling");
    const std::vector<TuneCandidate> candidates = Candidates(tensor, sizes, stats, fingerprint);
    progress_.total -= request_.samples + 1 - int64_t(candidates.size());
    std::unique_ptr<KernelRunner> runner;
    if (!MeasurePending(candidates, candidates.front(), key, tensor, sizes, path, runner)) {
      progress_.total -= request_.neighbours;
      return;
    }
    if (request_.neighbours > 0) {
      Status("drawing neighbours");
      const std::vector<TuneCandidate> neighbours = NeighbourCandidates(key, sizes);
      progress_.total -= request_.neighbours - int64_t(neighbours.size());
      if (!MeasurePending(neighbours, candidates.front(), key, tensor, sizes, path, runner)) return;
    }
    ++tally_.matrices_done;
    Progressed();
  }

  // Measures and stores the candidates not yet in the database, beside FixedCSR twice (the
  // first and last of the contest): two timings of identical code that disagree say the machine
  // was not quiet, whatever each group's own spread said. FixedCSR's time is stored only when it
  // is itself one of the pending candidates; a FixedCSR that failed here before (it ran away,
  // say) is not run again. The runner is made on first need. False when the file was left out.
  bool MeasurePending(const std::vector<TuneCandidate>& candidates, const TuneCandidate& fixed_csr,
                      const TuningKey& key, const CooTensor& tensor, const IndexSizes& sizes,
                      const std::string& path, std::unique_ptr<KernelRunner>& runner) {
    const std::set<std::string> stored = db_->MeasuredScheduleHashes(key, true);
    std::vector<const TuneCandidate*> pending;
    for (const auto& c : candidates) {
      if (!stored.count(ScheduleHash(c.json))) {
        pending.push_back(&c);
      } else if (tally_.recounted > 0) {
        --tally_.recounted;
      } else {
        ++tally_.skipped;
      }
    }
    if (pending.empty()) return true;

    try {
      if (!runner) {
        runner = std::make_unique<KernelRunner>(request_.expression, tensor, sizes, request_.dtype,
                                                jit_);
        Status("reference");
        runner->reference();
      }
    } catch (const InputError& e) {
      SkipFile(path + ": " + e.what(), int64_t(pending.size()));
      return false;
    }
    std::vector<const TuneCandidate*> measured = pending;
    size_t offset = 0;
    const bool fixed_pending = measured.front()->json == fixed_csr.json;
    if (fixed_pending || db_->HasMeasurement(key, ScheduleHash(fixed_csr.json))) {
      offset = fixed_pending ? 0 : 1;
      if (offset) measured.insert(measured.begin(), &fixed_csr);
      measured.push_back(&fixed_csr);
    }
    const bool twinned = measured.size() > 1 && measured.front() == measured.back();
    // FixedCSR, first, is timed beside every group, so that the groups' times are scaled to one
    // another for the machine's drift between them (ContestOptions::drift_anchor).
    const std::optional<size_t> anchor = twinned ? std::optional<size_t>(0) : std::nullopt;
    WaitForIdleCores();
    Status("measuring");
    std::vector<RunResult> results;
    std::string twins;
    try {
      results = Measure(*runner, key, measured, anchor);
      twins = twinned ? Twins(results) : "";
      if (!twins.empty() && request_.on_busy != BusyPolicy::kIgnore) {
        ++tally_.twins_retimed;
        WaitForIdleCores();
        Status("measuring again (" + twins + ")");
        results = Measure(*runner, key, measured, anchor);
        twins = twinned ? Twins(results) : "";
      }
      MeasureDisturbedAgain(*runner, key, measured, anchor, results);
    } catch (const InputError& e) {
      if (watchdog_) watchdog_->Disarm();
      SkipFile(path + ": " + e.what(), int64_t(pending.size()));
      return false;
    }
    if (watchdog_) watchdog_->Disarm();
    if (twinned && results.front().ok() && results.back().ok()) {
      const double a = results.front().time.median_ms, b = results.back().time.median_ms;
      if (std::min(a, b) > 0) tally_.twin_spreads.push_back(std::fabs(a - b) / std::min(a, b));
    }
    if (twinned) tally_.drift_corrections.push_back(LargestDriftCorrection(results));
    for (size_t s = 0; s < pending.size(); ++s) {
      const RunResult& r = results[s + offset];
      if (r.ok() && (r.time.disturbed || !twins.empty()) && request_.on_busy == BusyPolicy::kFail) {
        // Never stored as a clean time; the next run measures it again.
        ++tally_.disturbed;
        --progress_.total;
        Progressed();
        continue;
      }
      StoreResult(*db_, key, request_.expression.text, *pending[s], r);
      if (r.ok()) {
        ++tally_.measured;
      } else {
        ++tally_.failed[RunStatusName(r.status)];
      }
      Progressed();
    }
    return true;
  }

  // Up to request_.neighbours schedules one move from the fastest stored times of the matrix
  // (its neighbours' own times left out), none of them among those times: the same draw on a
  // rerun, so that a finished matrix is skipped. Empty when the kernel has no template.
  std::vector<TuneCandidate> NeighbourCandidates(const TuningKey& key,
                                                 const IndexSizes& sizes) const {
    const auto waco = WacoTemplate::ForKernel(request_.kernel);
    if (!waco) return {};
    std::vector<TuneCandidate> measured;
    std::vector<RunResult> results;
    for (const MeasurementRow& row : db_->TopK(key, std::numeric_limits<int>::max())) {
      if (IsNeighbourSource(row.source)) continue;
      TuneCandidate candidate{ParseScheduleText(row.schedule.canonical_json, "a stored schedule"),
                              row.schedule.canonical_json, row.source};
      RunResult result;
      result.status = RunStatus::kOk;
      result.time.median_ms = row.median_ms;
      measured.push_back(std::move(candidate));
      results.push_back(result);
    }
    RefinementOptions options;
    options.count = request_.neighbours;
    options.seed = request_.seed;
    return RefinementCandidates(*waco, sizes, measured, results, options, key.fingerprint);
  }

  // Why the FixedCSR twins (the first and the last result) disagree, or "".
  static std::string Twins(const std::vector<RunResult>& results) {
    return TwinDisagreement(results.front(), results.back(), kCollectTwinLimit,
                            kCollectTwinExcessMs);
  }

  // Schedules whose group was still disturbed after the timing's own retries are measured
  // once more, together, after the cores were idle again; their new results replace the old.
  // With a drift anchor they are timed beside it again and scaled by its time in the first
  // contest over its time now, as tune's second round is.
  void MeasureDisturbedAgain(KernelRunner& runner, const TuningKey& key,
                             const std::vector<const TuneCandidate*>& pending,
                             std::optional<size_t> anchor, std::vector<RunResult>& results) {
    if (request_.on_busy == BusyPolicy::kIgnore) return;
    // A disturbed anchor is no reference: then it is measured again with the others, unscaled.
    const bool anchored = anchor && results[*anchor].ok() && !results[*anchor].time.disturbed;
    std::vector<const TuneCandidate*> again;
    std::vector<size_t> where;
    if (anchored) again.push_back(pending[*anchor]);
    for (size_t s = 0; s < pending.size(); ++s) {
      if (results[s].ok() && results[s].time.disturbed && !(anchored && s == *anchor)) {
        again.push_back(pending[s]);
        where.push_back(s);
      }
    }
    if (where.empty()) return;
    WaitForIdleCores();
    Status("measuring again (disturbed)");
    const size_t first = anchored ? 1 : 0;
    std::vector<RunResult> retimed =
        Measure(runner, key, again, anchored ? std::optional<size_t>(0) : std::nullopt);
    const double scale = anchored ? DriftScale(results[*anchor], retimed[0]) : 1;
    for (size_t a = 0; a < where.size(); ++a) {
      ScaleForDrift(retimed[first + a], scale);
      results[where[a]] = retimed[first + a];
    }
  }

  // Other processes on the cores distort the times of small parallel kernels.
  void WaitForIdleCores() {
    double region_us = ParallelRegionMicros(HardwareThreads());
    for (const auto wait_start = Clock::now();
         region_us > kBusyParallelRegionMicros &&
         std::chrono::duration<double>(Clock::now() - wait_start).count() < request_.wait_idle_s;
         region_us = ParallelRegionMicros(HardwareThreads())) {
      Status("waiting for the cores to be idle");
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (region_us > kBusyParallelRegionMicros && tally_.busy_matrices++ == 0 &&
        observer_.cores_busy) {
      observer_.cores_busy(region_us);
    }
  }

  // FixedCSR, the rule candidates the kernel's template expresses (the model cannot learn the
  // others), then distinct sampled schedules, deterministic in the seed, the kernel and the
  // pattern, so that a rerun finds the same ones.
  std::vector<TuneCandidate> Candidates(const CooTensor& tensor, const IndexSizes& sizes,
                                        const PatternStats& stats,
                                        const std::string& fingerprint) const {
    CandidateContext context;
    context.kernel = request_.kernel;
    context.kernel_key = request_.kernel;
    context.expression = &request_.expression;
    context.sizes = sizes;
    context.tensor = &tensor;
    context.fingerprint = fingerprint;
    context.prefix_nnz = stats.prefix_nnz;
    context.value_bytes = DTypeSize(request_.dtype);
    SampleOptions sampling;
    sampling.samples = request_.samples;
    sampling.seed = request_.seed;
    sampling.uniform = request_.uniform;
    const auto fixed_csr = FixedCsrSource();
    const auto scorch = ScorchSource();
    const auto rules = LibraryRuleSource();
    const auto sampled = SampledSource(sampling);
    std::vector<CandidateSource*> sources = {fixed_csr.get()};
    const auto waco = WacoTemplate::ForKernel(request_.kernel);
    if (request_.rules && waco) sources.insert(sources.end(), {scorch.get(), rules.get()});
    sources.push_back(sampled.get());
    std::vector<TuneCandidate> candidates = GatherCandidates(sources, context).candidates;
    if (waco) {
      // FixedCSR stays (the baseline of every matrix), whether or not the template has it.
      candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                      [&](const TuneCandidate& c) {
                                        return c.source != "fixed_csr" && c.source != "sampled" &&
                                               !waco->FromSchedule(c.schedule, nullptr);
                                      }),
                       candidates.end());
    }
    return candidates;
  }

  // Every pending schedule of the matrix is verified, then timed beside the others in shuffled
  // rounds (MeasureTogether): none gains from always running first or last. The watchdog is
  // armed before each step that runs a kernel, with the tally to carry should it fire.
  std::vector<RunResult> Measure(KernelRunner& runner, const TuningKey& key,
                                 const std::vector<const TuneCandidate*>& pending,
                                 std::optional<size_t> drift_anchor) {
    std::vector<Schedule> schedules;
    for (const TuneCandidate* candidate : pending) schedules.push_back(candidate->schedule);
    char limit_text[32];
    std::snprintf(limit_text, sizeof limit_text, "%g", hard_limit_s_);
    auto arm = [&](size_t s, double seconds) {
      if (!watchdog_) return;
      CollectTally if_fired = tally_;
      ++if_fired.failed["timed_out"];
      if_fired.restarts += 1;
      if_fired.elapsed_before = Elapsed() + seconds;
      watchdog_->Arm(seconds,
                     FailureOf(key, request_.expression.text, pending[s]->json,
                               std::string("timed_out: still running after ") + limit_text +
                                   " s; the collection was restarted"),
                     if_fired.ToJson().dump());
    };
    ContestObserver observer;
    observer.before_verify = [&](size_t s) { arm(s, hard_limit_s_); };
    // A verified kernel returns; a group's rounds are bounded by the timing protocol.
    observer.before_group = [&](const std::vector<size_t>& members) {
      arm(members.front(), hard_limit_s_ * double(members.size()));
    };
    ContestOptions contest;
    contest.run.verify = true;
    contest.run.time = true;
    contest.run.mode = CodegenMode::kRuntimeParameters;
    // Cheaper than an interactive run: a short warm-up, then the median of at least 5 runs
    // covering about 50 ms.
    contest.run.timing.warmup_runs = 1;
    contest.run.timing.warmup_ms = 10;
    contest.run.timing.min_reps = 5;
    contest.run.timing.max_reps = 10000;
    contest.run.timing.min_total_ms = 50;
    contest.run.timing.max_ms_per_run = request_.max_ms;
    if (request_.on_busy == BusyPolicy::kIgnore) contest.run.timing.disturbance_retries = 0;
    contest.compile_jobs = request_.compile_jobs;
    contest.seed = request_.seed;
    contest.drift_anchor = drift_anchor;
    return MeasureTogether(runner, schedules, jit_, contest, observer);
  }

  const CollectRequest& request_;
  const CollectObserver& observer_;
  const std::vector<InputFile> files_;
  CollectTally tally_;
  std::unique_ptr<Database> db_;
  Jit jit_;
  int64_t machine_id_;
  double hard_limit_s_;
  Clock::time_point start_;
  CollectProgress progress_;
  std::unique_ptr<RestartWatchdog> watchdog_;
};

}  // namespace

CollectReport RunCollection(const CollectRequest& request, const CollectObserver& observer) {
  // Checked once here rather than failing on every matrix.
  const std::vector<std::string> dense_indices = request.expression.DenseOnlyIndices();
  for (const auto& [index, size] : request.dense) {
    if (std::find(dense_indices.begin(), dense_indices.end(), index) == dense_indices.end())
      throw InputError("--dense " + index + "=" + std::to_string(size) + ": " + request.kernel +
                       " has no dense index " + index);
  }
  if (request.samples < 0) throw InputError("--samples must be at least 0");
  if (!(request.max_ms > 0)) throw InputError("--max-ms must be positive");
  std::vector<InputFile> files = ExpandInputPaths(request.paths, request.kernel);
  Collection collection(request, observer, std::move(files));
  return collection.Run();
}

}  // namespace sparsetune
