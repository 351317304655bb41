// A collection of training data for the cost model: for every matrix, FixedCSR and N sampled
// SuperSchedules are packed, compiled, verified and timed side by side, and every outcome (a
// time or the reason it failed) is stored in the schedule database, so that a rerun resumes
// where the last one stopped.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.hpp"
#include "ir/expression.hpp"
#include "tune/measuring.hpp"

namespace sparsetune {

// The environment variable that carries a collection's tally across the re-execution that
// follows a runaway kernel (see RestartWatchdog).
constexpr const char* kCollectStateVariable = "SPARSETUNE_COLLECT_STATE";

// The counters of a collection.
struct CollectTally {
  int64_t measured = 0;
  int64_t skipped = 0;                    // already in the database
  std::map<std::string, int64_t> failed;  // by reason ("timed_out", "format_refused", ...)
  int64_t unreadable = 0;                 // files left out as bad input
  int64_t matrices_done = 0;
  int64_t restarts = 0;
  double elapsed_before = 0;  // seconds spent before the last restart
  // After a restart the files are walked again from the start, and the schedules counted
  // before it show up as already stored: that many are not counted again as skipped.
  int64_t recounted = 0;
  int64_t busy_matrices = 0;  // measured while other processes held the cores
  // Timed while other processes held the cores, twice: not stored, so the next run measures
  // them again.
  int64_t disturbed = 0;
  // Matrices measured again because the two timings of FixedCSR in their contest disagreed.
  int64_t twins_retimed = 0;
  // Per measured matrix, how far apart FixedCSR's two timings ended: |a - b| / min(a, b).
  std::vector<double> twin_spreads;
  // The `q` quantile (0 to 1) of twin_spreads, nearest rank; 0 when there are none.
  double TwinSpread(double q) const;
  // Per matrix measured beside FixedCSR, the largest correction its groups' times were scaled by
  // for the machine's drift between them (LargestDriftCorrection), and their quantile.
  std::vector<double> drift_corrections;
  double DriftCorrection(double q) const;

  int64_t failed_total() const;
  // The state carried across a restart. Unreadable files and finished matrices are met again
  // after it, so they are not carried; what was counted becomes `recounted`.
  nlohmann::json ToJson() const;
  static CollectTally FromJson(const nlohmann::json& json);
};

// The tally that a restart left in kCollectStateVariable, removed from the environment so that
// nothing started later inherits it; an empty tally when there is none or it does not parse.
CollectTally TakeCarriedTally();

struct CollectRequest {
  // Matrix or tensor files, directories, list files and corpus manifests (ExpandInputPaths).
  std::vector<std::string> paths;
  std::string kernel;  // the kernel's name and database key ("expr" for an expression)
  Expression expression;
  std::map<std::string, int64_t> dense;  // sizes of the dense-only indices (defaults applied)
  DType dtype = DType::kF32;
  std::string db_path;
  int samples = 100;  // sampled schedules per matrix, besides FixedCSR
  uint64_t seed = 1;
  bool uniform = false;  // the whole WACO template, without the artifact's sub-spaces
  // Also the rule candidates (library rules, Scorch) that the kernel's template expresses, so
  // that the model learns their times and can rank them beside the sampled schedules.
  bool rules = true;
  // Then schedules one move from the matrix's fastest (RefinementCandidates, as tune's second
  // round), drawn from the first phase's measurements so that a rerun draws the same ones: the
  // fine differences near the top, which random samples seldom land on, are where a model's
  // first picks compete.
  int neighbours = 0;
  double max_ms = 1000;  // a run slower than this is recorded as a timeout
  // A schedule still running after this many seconds is abandoned; 0: 5 x max_ms + 20 s.
  double hard_limit_s = 0;
  int compile_jobs = 2;
  double wait_idle_s = 0;  // before each matrix, wait up to this long for the cores to be idle
  // Times taken while other processes held the cores are measured again; kFail leaves those
  // still disturbed unstored, kStore stores them anyway, kIgnore stores them without retrying.
  BusyPolicy on_busy = BusyPolicyFromEnvironment();
  // What a runaway kernel re-executes, the tally in kCollectStateVariable: this process's
  // command line (RestartWatchdog::OwnCommandLine). Empty: no watchdog, runs are waited for.
  std::vector<std::string> restart_command;
  CollectTally carried;  // TakeCarriedTally() in a restarted process
};

// Where a collection stands.
struct CollectProgress {
  int64_t total = 0;  // schedules expected over all files; shrinks as files are left out
  int64_t measured = 0;
  int64_t failed = 0;
  int64_t skipped = 0;
  double elapsed_s = 0;  // including the time before restarts
  size_t matrix_index = 0;
  size_t matrix_count = 0;
  std::string matrix_name;
  std::string status;  // what runs now on the matrix: "reading", "sampling", "measuring", ...

  int64_t done() const { return measured + failed + skipped; }
};

// What a collection tells its caller while it runs. Every member may be left empty.
struct CollectObserver {
  // A step began on a matrix: worth showing at once.
  std::function<void(const CollectProgress&)> status;
  // Schedules were stored or skipped.
  std::function<void(const CollectProgress&)> progress;
  // A file was left out as bad input; `cause` names the file.
  std::function<void(const std::string& cause)> file_skipped;
  // The first matrix measured while other processes held the cores: an empty parallel region
  // took `region_us` microseconds (about 1 on an idle machine).
  std::function<void(double region_us)> cores_busy;
};

struct CollectReport {
  std::string kernel;
  std::string database;
  int64_t files = 0;
  CollectTally tally;
  double elapsed_s = 0;  // including the time before restarts

  double schedules_per_minute() const;
  // Some file was left out as bad input (the command exits 2).
  bool bad_input() const { return tally.unreadable > 0; }
  // The --json summary.
  nlohmann::json ToJson() const;
};

// Collects, stores and reports. Bad arguments and input paths throw InputError before anything
// is stored; a file that cannot be read or run is reported to the observer and left out.
CollectReport RunCollection(const CollectRequest& request, const CollectObserver& observer = {});

}  // namespace sparsetune
