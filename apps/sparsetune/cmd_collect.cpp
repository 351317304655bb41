// sparsetune collect: training data for the cost model. For every matrix, FixedCSR and N
// sampled SuperSchedules are packed, compiled, verified and timed, and every outcome (a time or
// the reason it failed) is stored in the schedule database, so a rerun resumes where the last
// one stopped.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/progress.hpp"
#include "base/threads.hpp"
#include "codegen/codegen.hpp"
#include "collect/candidates.hpp"
#include "collect/inputs.hpp"
#include "collect/restart_watchdog.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "io/read.hpp"
#include "ir/loop_nest.hpp"
#include "jit/jit.hpp"
#include "measure/contest.hpp"
#include "measure/runner.hpp"
#include "measure/timing.hpp"
#include "superschedule/waco_template.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/stats.hpp"

namespace sparsetune::cli {

namespace {

using Clock = std::chrono::steady_clock;

// Carries the counters of a collection across the re-exec that follows a runaway kernel.
constexpr const char* kStateVariable = "SPARSETUNE_COLLECT_STATE";

struct CollectOptions {
  std::vector<std::string> paths;
  KernelOptions kernel;
  int samples = 100;
  std::string db;
  double max_ms = 1000;
  double hard_limit_s = 0;  // 0: 5 x max_ms + 20 s
  uint64_t seed = 1;
  bool uniform = false;
  double progress_seconds = 10;
  int compile_jobs = 2;
  double wait_idle_s = 0;
  bool json = false;
};

// The counters of a collection (carried across a restart).
struct Tally {
  int64_t measured = 0;
  int64_t skipped = 0;
  std::map<std::string, int64_t> failed;  // by reason
  int64_t unreadable = 0;
  int64_t matrices_done = 0;
  int64_t restarts = 0;
  double elapsed_before = 0;  // seconds spent before the last restart
  // After a restart the files are walked again from the start, and the schedules counted
  // before it show up as already stored: that many are not counted again as skipped.
  int64_t recounted = 0;
  int64_t busy_matrices = 0;  // measured while other processes held the cores

  int64_t failed_total() const {
    int64_t n = 0;
    for (const auto& [reason, count] : failed) n += count;
    return n;
  }
  nlohmann::json ToJson() const {
    // Unreadable files and finished matrices are met again after a restart; not carried.
    return {{"measured", measured},
            {"skipped", skipped},
            {"failed", failed},
            {"restarts", restarts},
            {"busy_matrices", busy_matrices},
            {"elapsed_before", elapsed_before},
            {"recounted", measured + failed_total() + skipped}};
  }
  static Tally FromJson(const nlohmann::json& j) {
    Tally t;
    t.measured = j.value("measured", int64_t(0));
    t.skipped = j.value("skipped", int64_t(0));
    t.failed = j.value("failed", std::map<std::string, int64_t>());
    t.recounted = j.value("recounted", int64_t(0));
    t.restarts = j.value("restarts", int64_t(0));
    t.busy_matrices = j.value("busy_matrices", int64_t(0));
    t.elapsed_before = j.value("elapsed_before", 0.0);
    return t;
  }
};

// Progress on stderr: a bar redrawn in place on a terminal, else a line every few seconds.
class Progress {
 public:
  Progress(int64_t total, double line_seconds, const Tally& tally)
      : total_(total),
        line_seconds_(line_seconds),
        tty_(isatty(STDERR_FILENO) == 1),
        tally_(tally),
        start_(Clock::now()),
        last_(Clock::now()) {}

  double Elapsed() const {
    return tally_.elapsed_before + std::chrono::duration<double>(Clock::now() - start_).count();
  }
  void Shrink(int64_t by) { total_ -= by; }
  void SetMatrix(int64_t index, int64_t count, const std::string& name) {
    matrix_ = "matrix " + std::to_string(index + 1) + "/" + std::to_string(count) + " " + name;
  }
  void Status(const std::string& status) {
    status_ = status;
    Update(true);
  }
  void Update(bool force = false) {
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    if (tty_) {
      if (!force && since < 0.25) return;
    } else if (since < line_seconds_) {
      return;
    }
    last_ = now;
    const int64_t work = tally_.measured + tally_.failed_total();
    const int64_t done = work + tally_.skipped;
    const double elapsed = Elapsed();
    const double rate = elapsed > 0 ? work / elapsed : 0;  // per second
    const double eta = rate > 0 ? double(total_ - done) / rate : -1;
    char line[512];
    std::snprintf(line, sizeof line,
                  "%lld/%lld schedules, %lld measured, %lld failed, %lld skipped, %.1f/min, "
                  "ETA %s | %s%s%s",
                  (long long)done, (long long)total_, (long long)tally_.measured,
                  (long long)tally_.failed_total(), (long long)tally_.skipped, rate * 60,
                  FormatDuration(eta).c_str(), matrix_.c_str(), status_.empty() ? "" : ": ",
                  status_.c_str());
    if (tty_) {
      const int width = 24;
      const int filled = total_ > 0 ? int(width * std::min<int64_t>(done, total_) / total_) : 0;
      std::string bar(filled, '#');
      bar += std::string(width - filled, '.');
      std::fprintf(stderr, "\r\033[K[%s] %s", bar.c_str(), line);
    } else {
      std::fprintf(stderr, "collect: %s\n", line);
    }
    std::fflush(stderr);
  }
  // A message on its own line (the bar is redrawn after it).
  void Message(const std::string& text) {
    if (tty_) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
    if (tty_) Update(true);
  }
  void Finish() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  int64_t total_;
  double line_seconds_;
  bool tty_;
  const Tally& tally_;
  Clock::time_point start_, last_;
  std::string matrix_, status_;
};

// A candidate still to measure on the current matrix.
struct PendingRun {
  const Candidate* candidate;
};

// "format_refused" of "format_refused: padding ...".
std::string ReasonOf(const std::string& failure) {
  return failure.substr(0, failure.find(':'));
}

void RunCollect(const CollectOptions& o, Context& context) {
  const auto argv = RestartWatchdog::OwnCommandLine();  // before anything else, for a restart
  ResolvedKernel k = ResolveKernel(o.kernel);
  // Checked once here rather than failing on every matrix.
  const std::vector<std::string> dense_indices = k.expression.DenseOnlyIndices();
  for (const auto& [index, size] : k.dense_sizes) {
    if (std::find(dense_indices.begin(), dense_indices.end(), index) == dense_indices.end())
      throw InputError("--dense " + index + "=" + std::to_string(size) + ": " + k.name +
                       " has no dense index " + index);
  }
  if (o.samples < 0) throw InputError("--samples must be at least 0");
  if (!(o.max_ms > 0)) throw InputError("--max-ms must be positive");
  const std::vector<InputFile> files = ExpandInputPaths(o.paths, k.name);
  const std::string db_path = DatabasePathOrDefault(o.db);

  Tally tally;
  if (const char* state = std::getenv(kStateVariable)) {
    try {
      tally = Tally::FromJson(nlohmann::json::parse(state));
    } catch (const std::exception&) {
    }
    unsetenv(kStateVariable);
  }

  auto db = Database::Open(db_path, OpenMode::kReadWrite);
  Jit jit;
  const int64_t machine_id = db->UpsertMachine(DetectMachine(jit.compiler(), Jit::Flags()));

  RunOptions run_options;
  run_options.verify = true;
  run_options.time = true;
  run_options.mode = CodegenMode::kRuntimeParameters;
  // Cheaper than an interactive run: a short warm-up, then the median of at least 5 runs
  // covering about 50 ms.
  run_options.timing.warmup_runs = 1;
  run_options.timing.warmup_ms = 10;
  run_options.timing.min_reps = 5;
  run_options.timing.max_reps = 10000;
  run_options.timing.min_total_ms = 50;
  run_options.timing.max_ms_per_run = o.max_ms;
  // Past this a kernel is presumed stuck: pack, one verification and one timed run fit well
  // within it.
  const double hard_limit_s = o.hard_limit_s > 0 ? o.hard_limit_s : 5 * o.max_ms / 1000 + 20;

  Progress progress(int64_t(files.size()) * (o.samples + 1), o.progress_seconds, tally);
  RestartWatchdog watchdog(db_path, argv, kStateVariable);
  bool bad_input = false;

  for (size_t m = 0; m < files.size(); ++m) {
    const std::string& path = files[m].path;
    const std::string name = MatrixNameOf(path);
    progress.SetMatrix(int64_t(m), int64_t(files.size()), name);
    progress.Status("reading");
    CooTensor tensor;
    IndexSizes sizes;
    try {
      std::vector<std::string> warnings;
      tensor = ReadTensorFile(path, &warnings);
      sizes = ResolveIndexSizes(k.expression, tensor.dims, k.dense_sizes);
    } catch (const InputError& e) {
      progress.Message(std::string("sparsetune: error: ") + e.what() + " (skipped)");
      ++tally.unreadable;
      bad_input = true;
      progress.Shrink(o.samples + 1);
      continue;
    }
    const std::string fingerprint = PatternFingerprint(tensor);
    MatrixRecord matrix;
    matrix.fingerprint = fingerprint;
    matrix.name = name;
    matrix.dims = tensor.dims;
    matrix.nnz = tensor.nnz();
    matrix.stats = PatternStatsToJson(ComputePatternStats(tensor));
    matrix.source_path = files[m].origin;
    db->UpsertMatrix(matrix);

    TuningKey key;
    key.fingerprint = fingerprint;
    key.kernel = k.name;
    key.machine_id = machine_id;
    for (const auto& index : k.expression.DenseOnlyIndices()) key.dense[index] = sizes.at(index);
    key.dtype = k.dtype;

    progress.Status("sampling");
    CandidateOptions candidate_options;
    candidate_options.samples = o.samples;
    candidate_options.seed = o.seed;
    candidate_options.uniform = o.uniform;
    const std::vector<Candidate> candidates =
        SampleCandidates(k.name, k.expression, sizes, fingerprint, candidate_options);
    progress.Shrink(o.samples + 1 - int64_t(candidates.size()));
    const std::set<std::string> done = db->MeasuredScheduleHashes(key, true);
    std::vector<PendingRun> pending;
    for (const auto& c : candidates) {
      if (done.count(c.hash)) {
        if (tally.recounted > 0) {
          --tally.recounted;
        } else {
          ++tally.skipped;
        }
      } else {
        pending.push_back(PendingRun{&c});
      }
    }
    if (pending.empty()) {
      ++tally.matrices_done;
      progress.Update();
      continue;
    }

    std::unique_ptr<KernelRunner> runner;
    try {
      runner = std::make_unique<KernelRunner>(k.expression, tensor, sizes, k.dtype, jit);
      progress.Status("reference");
      runner->reference();
    } catch (const InputError& e) {
      progress.Message(std::string("sparsetune: error: ") + path + ": " + e.what() + " (skipped)");
      ++tally.unreadable;
      bad_input = true;
      progress.Shrink(int64_t(pending.size()));
      continue;
    }
    double region_us = ParallelRegionMicros(HardwareThreads());
    for (const auto wait_start = Clock::now();
         region_us > kBusyParallelRegionMicros &&
         std::chrono::duration<double>(Clock::now() - wait_start).count() < o.wait_idle_s;
         region_us = ParallelRegionMicros(HardwareThreads())) {
      progress.Status("waiting for the cores to be idle");
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (region_us > kBusyParallelRegionMicros) {
      if (tally.busy_matrices++ == 0) {
        char text[256];
        std::snprintf(text, sizeof text,
                      "sparsetune collect: warning: the cores are busy (an empty parallel region "
                      "takes %.0f us, about 1 on an idle machine): times of small kernels will "
                      "measure the wait; collect on an idle machine",
                      region_us);
        progress.Message(text);
      }
    }
    progress.Status("measuring");

    // Every pending schedule of this matrix is verified, then timed beside the others in
    // shuffled rounds (MeasureTogether): none gains from always running first or last.
    std::vector<Schedule> schedules;
    for (const PendingRun& run : pending) schedules.push_back(run.candidate->schedule);
    auto failure_of = [&](size_t s, const std::string& reason) {
      FailureRecord failure;
      failure.key = key;
      failure.expression = k.expression.text;
      failure.schedule_json = pending[s].candidate->json;
      failure.reason = reason;
      return failure;
    };
    char limit_text[32];
    std::snprintf(limit_text, sizeof limit_text, "%g", hard_limit_s);
    auto arm = [&](size_t s, double seconds) {
      Tally if_fired = tally;
      ++if_fired.failed["timed_out"];
      if_fired.restarts += 1;
      if_fired.elapsed_before = progress.Elapsed() + seconds;
      watchdog.Arm(seconds,
                   failure_of(s, std::string("timed_out: still running after ") + limit_text +
                                     " s; the collection was restarted"),
                   if_fired.ToJson().dump());
    };
    ContestObserver observer;
    observer.before_verify = [&](size_t s) { arm(s, hard_limit_s); };
    // A verified kernel returns; a group's rounds are bounded by the timing protocol.
    observer.before_group = [&](const std::vector<size_t>& members) {
      arm(members.front(), hard_limit_s * double(members.size()));
    };
    ContestOptions contest;
    contest.run = run_options;
    contest.compile_jobs = o.compile_jobs;
    contest.seed = o.seed;
    std::vector<RunResult> results;
    try {
      results = MeasureTogether(*runner, schedules, jit, contest, observer);
    } catch (const InputError& e) {
      watchdog.Disarm();
      progress.Message(std::string("sparsetune: error: ") + path + ": " + e.what() + " (skipped)");
      ++tally.unreadable;
      bad_input = true;
      progress.Shrink(int64_t(pending.size()));
      continue;
    }
    watchdog.Disarm();
    for (size_t s = 0; s < pending.size(); ++s) {
      const RunResult& r = results[s];
      if (r.ok()) {
        MeasurementRecord record;
        record.key = key;
        record.expression = k.expression.text;
        record.schedule_json = pending[s].candidate->json;
        record.median_ms = r.time.median_ms;
        record.min_ms = r.time.min_ms;
        record.max_ms = r.time.max_ms;
        record.reps = r.time.reps;
        record.pack_ms = r.pack_ms;
        record.compile_ms = r.compile_ms;
        record.verified = r.verified;
        record.source = pending[s].candidate->source;
        db->RecordMeasurement(record);
        ++tally.measured;
      } else {
        const std::string reason = std::string(RunStatusName(r.status)) + ": " + r.message;
        db->RecordFailure(failure_of(s, reason));
        ++tally.failed[ReasonOf(reason)];
      }
      progress.Update();
    }
    ++tally.matrices_done;
  }
  progress.Finish();

  const double elapsed = progress.Elapsed();
  const int64_t work = tally.measured + tally.failed_total();
  const double per_minute = elapsed > 0 ? work * 60.0 / elapsed : 0;
  std::string failures;
  for (const auto& [reason, count] : tally.failed)
    failures += (failures.empty() ? "" : ", ") + reason + " " + std::to_string(count);
  std::fprintf(
      stderr,
      "collect %s: %zu files, %lld measured, %lld failed%s, %lld skipped (already in "
      "the database)%s; %s, %.1f schedules/min\n",
      k.name.c_str(), files.size(), (long long)tally.measured, (long long)tally.failed_total(),
      failures.empty() ? "" : (" (" + failures + ")").c_str(), (long long)tally.skipped,
      tally.unreadable ? (", " + std::to_string(tally.unreadable) + " unreadable").c_str() : "",
      FormatDuration(elapsed).c_str(), per_minute);
  if (tally.busy_matrices > 0) {
    std::fprintf(stderr,
                 "collect %s: %lld matrices were measured while the cores were busy with other "
                 "processes\n",
                 k.name.c_str(), (long long)tally.busy_matrices);
  }
  if (o.json) {
    nlohmann::json out;
    out["kernel"] = k.name;
    out["database"] = db_path;
    out["files"] = files.size();
    out["measured"] = tally.measured;
    out["failed"] = tally.failed_total();
    out["failed_by_reason"] = tally.failed;
    out["skipped"] = tally.skipped;
    out["unreadable"] = tally.unreadable;
    out["restarts"] = tally.restarts;
    out["busy_matrices"] = tally.busy_matrices;
    out["elapsed_s"] = elapsed;
    out["schedules_per_minute"] = per_minute;
    std::cout << out.dump(2) << "\n";
  }
  if (bad_input) context.exit_code = 2;
}

}  // namespace

void RegisterCollect(CLI::App& app, Context& context) {
  auto o = std::make_shared<CollectOptions>();
  CLI::App* sub = app.add_subcommand(
      "collect",
      "Training data: FixedCSR and N sampled schedules per matrix, packed, compiled, verified, "
      "timed and stored in the database; a rerun skips what is already there");
  sub->add_option("PATH", o->paths,
                  "Matrix or tensor files, directories of them, list files (.list/.txt: a path "
                  "per line, then optionally a tab and the origin to store) or a corpus manifest "
                  "(.tsv, datasets/corpus/corpus.tsv)")
      ->required();
  sub->add_option("--kernel,-k", o->kernel.kernel, "Named kernel (spmv, spmm, sddmm, mttkrp, ...)")
      ->required();
  sub->add_option("--dense", o->kernel.dense, "Dense index sizes, e.g. --dense j=256")->take_all();
  sub->add_option("--dtype", o->kernel.dtype, "Value type: f32 (default) or f64")
      ->check(CLI::IsMember({"f32", "f64"}));
  sub->add_option("--samples,-n", o->samples, "Sampled schedules per matrix (plus FixedCSR)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  AddDatabaseOption(sub, o->db);
  sub->add_option("--max-ms", o->max_ms,
                  "A run slower than this is recorded as a timeout instead of timed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--hard-limit", o->hard_limit_s,
                  "Seconds after which a schedule still running is abandoned: it is recorded as "
                  "timed out and the command restarts itself to go on (default 5 x max-ms + 20)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--seed", o->seed, "Sampling seed (with the matrix, it fixes the schedules)")
      ->capture_default_str();
  sub->add_flag("--uniform", o->uniform,
                "Sample the full template uniformly, without the artifact's sub-spaces");
  sub->add_option("--progress-seconds", o->progress_seconds,
                  "Without a terminal: seconds between progress lines")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--wait-idle", o->wait_idle_s,
                  "Before each matrix, wait up to this many seconds for the cores to be idle "
                  "(other processes distort the times of small parallel kernels)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--compile-jobs", o->compile_jobs, "Kernels compiled at once")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_flag("--json", o->json, "A JSON summary on stdout");
  sub->callback([o, &context] { RunCollect(*o, context); });
}

}  // namespace sparsetune::cli
