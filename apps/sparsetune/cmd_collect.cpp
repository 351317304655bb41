// sparsetune collect: training data for the cost model (libs/collect/collection.hpp). This
// file parses the options, shows progress on stderr and prints the summary.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/progress.hpp"
#include "collect/collection.hpp"
#include "collect/restart_watchdog.hpp"
#include "commands.hpp"
#include "common.hpp"

namespace sparsetune::cli {

namespace {

struct CollectOptions {
  std::vector<std::string> paths;
  KernelOptions kernel;
  int samples = 100;
  int neighbours = 0;
  std::string db;
  double max_ms = 1000;
  double hard_limit_s = 0;  // 0: 5 x max_ms + 20 s
  uint64_t seed = 1;
  bool uniform = false;
  bool no_rules = false;
  double progress_seconds = 10;
  int compile_jobs = 2;
  double wait_idle_s = 0;
  std::string on_busy;
  bool json = false;
};

// Progress on stderr: a bar redrawn in place on a terminal, else a line every few seconds. Its
// rate and time to go count only the schedules run, over the time including earlier restarts.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(double line_seconds)
      : line_seconds_(line_seconds), tty_(isatty(STDERR_FILENO) == 1), last_(Clock::now()) {}

  void Update(const CollectProgress& progress, bool force) {
    now_ = progress;
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    if (tty_) {
      if (!force && since < 0.25) return;
    } else if (since < line_seconds_) {
      return;
    }
    last_ = now;
    Draw();
  }
  // A message on its own line (the bar is redrawn after it).
  void Message(const std::string& text) {
    if (tty_) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
    if (tty_) Draw();
  }
  void Finish() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;

  void Draw() {
    const int64_t work = now_.measured + now_.failed;
    const int64_t done = now_.done();
    const double rate = now_.elapsed_s > 0 ? work / now_.elapsed_s : 0;  // per second
    const double eta = rate > 0 ? double(now_.total - done) / rate : -1;
    const std::string matrix = "matrix " + std::to_string(now_.matrix_index + 1) + "/" +
                               std::to_string(now_.matrix_count) + " " + now_.matrix_name;
    char line[512];
    std::snprintf(line, sizeof line,
                  "%lld/%lld schedules, %lld measured, %lld failed, %lld skipped, %.1f/min, "
                  "ETA %s | %s%s%s",
                  (long long)done, (long long)now_.total, (long long)now_.measured,
                  (long long)now_.failed, (long long)now_.skipped, rate * 60,
                  FormatDuration(eta).c_str(), matrix.c_str(), now_.status.empty() ? "" : ": ",
                  now_.status.c_str());
    if (tty_) {
      const int width = 24;
      const int filled =
          now_.total > 0 ? int(width * std::min<int64_t>(done, now_.total) / now_.total) : 0;
      std::string bar(filled, '#');
      bar += std::string(width - filled, '.');
      std::fprintf(stderr, "\r\033[K[%s] %s", bar.c_str(), line);
    } else {
      std::fprintf(stderr, "collect: %s\n", line);
    }
    std::fflush(stderr);
  }

  double line_seconds_;
  bool tty_;
  Clock::time_point last_;
  CollectProgress now_;
};

void PrintSummary(const CollectReport& report) {
  const CollectTally& tally = report.tally;
  std::string failures;
  for (const auto& [reason, count] : tally.failed)
    failures += (failures.empty() ? "" : ", ") + reason + " " + std::to_string(count);
  std::fprintf(
      stderr,
      "collect %s: %lld files, %lld measured, %lld failed%s, %lld skipped (already in "
      "the database)%s; %s, %.1f schedules/min\n",
      report.kernel.c_str(), (long long)report.files, (long long)tally.measured,
      (long long)tally.failed_total(), failures.empty() ? "" : (" (" + failures + ")").c_str(),
      (long long)tally.skipped,
      tally.unreadable ? (", " + std::to_string(tally.unreadable) + " unreadable").c_str() : "",
      FormatDuration(report.elapsed_s).c_str(), report.schedules_per_minute());
  if (tally.busy_matrices > 0) {
    std::fprintf(stderr,
                 "collect %s: %lld matrices were measured while the cores were busy with other "
                 "processes\n",
                 report.kernel.c_str(), (long long)tally.busy_matrices);
  }
  if (!tally.twin_spreads.empty()) {
    std::fprintf(stderr,
                 "collect %s: FixedCSR's two timings per matrix, %.1f%% apart at the median and "
                 "%.1f%% at p90 (%zu matrices)\n",
                 report.kernel.c_str(), 100 * tally.TwinSpread(0.5), 100 * tally.TwinSpread(0.9),
                 tally.twin_spreads.size());
  }
  if (tally.DriftCorrection(1) > 0) {
    std::fprintf(stderr,
                 "collect %s: the machine's speed drifted between a matrix's groups of "
                 "schedules: their times were scaled by FixedCSR's, timed in every group, by "
                 "%.1f%% at the median and %.1f%% at most (%zu matrices)\n",
                 report.kernel.c_str(), 100 * tally.DriftCorrection(0.5),
                 100 * tally.DriftCorrection(1), tally.drift_corrections.size());
  }
  if (tally.twins_retimed > 0) {
    std::fprintf(stderr,
                 "collect %s: %lld matrices were measured again: two timings of the same "
                 "FixedCSR kernel disagreed by more than 10%%\n",
                 report.kernel.c_str(), (long long)tally.twins_retimed);
  }
  if (tally.disturbed > 0) {
    std::fprintf(stderr,
                 "collect %s: %lld schedules were timed while the machine was busy (other "
                 "processes on the cores, or FixedCSR's two timings apart), twice; they were not "
                 "stored: collect again on a quiet machine to measure them\n",
                 report.kernel.c_str(), (long long)tally.disturbed);
  }
}

void RunCollect(const CollectOptions& o, Context& context) {
  CollectRequest request;
  // Read before anything else, for the restart after a runaway kernel.
  request.restart_command = RestartWatchdog::OwnCommandLine();
  const ResolvedKernel k = ResolveKernel(o.kernel);
  request.paths = o.paths;
  request.kernel = k.name;
  request.expression = k.expression;
  request.dense = k.dense_sizes;
  request.dtype = k.dtype;
  request.db_path = DatabasePathOrDefault(o.db);
  request.samples = o.samples;
  request.neighbours = o.neighbours;
  request.seed = o.seed;
  request.uniform = o.uniform;
  request.rules = !o.no_rules;
  request.max_ms = o.max_ms;
  request.hard_limit_s = o.hard_limit_s;
  request.compile_jobs = o.compile_jobs;
  request.wait_idle_s = o.wait_idle_s;
  if (!o.on_busy.empty()) request.on_busy = ParseBusyPolicy(o.on_busy, "--on-busy");
  request.carried = TakeCarriedTally();

  ProgressPrinter printer(o.progress_seconds);
  CollectObserver observer;
  observer.status = [&](const CollectProgress& p) { printer.Update(p, true); };
  observer.progress = [&](const CollectProgress& p) { printer.Update(p, false); };
  observer.file_skipped = [&](const std::string& cause) {
    printer.Message("sparsetune: error: " + cause + " (skipped)");
  };
  observer.cores_busy = [&](double region_us) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "sparsetune collect: warning: the cores are busy (an empty parallel region "
                  "takes %.0f us, about 1 on an idle machine): times of small kernels will "
                  "measure the wait; collect on an idle machine",
                  region_us);
    printer.Message(text);
  };
  const CollectReport report = RunCollection(request, observer);
  printer.Finish();

  PrintSummary(report);
  if (o.json) std::cout << report.ToJson().dump(2) << "\n";
  if (report.bad_input()) context.exit_code = 2;
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
  sub->add_option("--samples,-n", o->samples,
                  "Sampled schedules per matrix (besides FixedCSR and the rules)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--neighbours", o->neighbours,
                  "Then this many schedules one move from the matrix's fastest, as tune's second "
                  "round draws them: the fine differences near the top")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  AddDatabaseOption(sub, o->db);
  sub->add_option("--max-ms", o->max_ms,
                  "A run slower than this is recorded as a timeout instead of timed")
      ->check(PositiveMilliseconds())
      ->capture_default_str();
  sub->add_option("--hard-limit", o->hard_limit_s,
                  "Seconds after which a schedule still running is abandoned: it is recorded as "
                  "timed out and the command restarts itself to go on (default 5 x max-ms + 20)")
      ->check(FiniteNumber(false, 1e7));
  sub->add_option("--seed", o->seed, "Sampling seed (with the matrix, it fixes the schedules)")
      ->capture_default_str();
  sub->add_flag("--uniform", o->uniform,
                "Sample the full template uniformly, without the artifact's sub-spaces");
  sub->add_flag("--no-rules", o->no_rules,
                "Leave out the rule candidates (library rules, Scorch) that are measured beside "
                "the samples where the kernel's template expresses them");
  sub->add_option("--progress-seconds", o->progress_seconds,
                  "Without a terminal: seconds between progress lines")
      ->check(FiniteNumber(false, 1e7))
      ->capture_default_str();
  sub->add_option("--wait-idle", o->wait_idle_s,
                  "Before each matrix, wait up to this many seconds for the cores to be idle "
                  "(other processes distort the times of small parallel kernels)")
      ->check(FiniteNumber(true, 1e7))
      ->capture_default_str();
  AddOnBusyOption(sub, o->on_busy, "leaves them unstored for the next run");
  sub->add_option("--compile-jobs", o->compile_jobs, "Kernels compiled at once")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_flag("--json", o->json, "A JSON summary on stdout");
  sub->callback([o, &context] { RunCollect(*o, context); });
}

}  // namespace sparsetune::cli
