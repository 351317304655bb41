// sparsetune collect: training data for the cost model. For every matrix, FixedCSR and N
// sampled SuperSchedules are packed, compiled, verified and timed, and every outcome (a time or
// the reason it failed) is stored in the schedule database, so a rerun resumes where the last
// one stopped.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/hash.hpp"
#include "base/paths.hpp"
#include "codegen/codegen.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "io/read.hpp"
#include "ir/loop_nest.hpp"
#include "jit/jit.hpp"
#include "measure/runner.hpp"
#include "superschedule/random_schedule.hpp"
#include "superschedule/waco_template.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/stats.hpp"

namespace sparsetune::cli {

namespace {

namespace fs = std::filesystem;
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

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsTensorFileName(const std::string& name) {
  for (const char* ext : {".mtx", ".mtx.gz", ".tns", ".tns.gz", ".tar.gz"}) {
    if (EndsWith(name, ext)) return true;
  }
  return false;
}

bool IsListFileName(const std::string& name) {
  return EndsWith(name, ".list") || EndsWith(name, ".txt");
}

// A matrix or tensor to collect on, and where it comes from: what the database keeps as its
// source (the path, or the corpus manifest's source such as a gen command with its seed).
struct InputFile {
  std::string path;
  std::string origin;
};

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::string(value) : fallback;
}

// The files of a corpus manifest (datasets/corpus/corpus.tsv: name, kernels, nnz, source)
// for one kernel. shared:PATH sources live in the shared datasets folder
// ($SPARSETUNE_SHARED_DATASETS, else ../shared/datasets beside the checkout holding the
// manifest); generated ones in the corpus cache ($SPARSETUNE_CORPUS_CACHE, else
// sparsetune/corpus under the XDG cache home), put there by scripts/collect_training_data.sh.
std::vector<InputFile> ManifestFiles(const std::string& manifest, const std::string& kernel) {
  std::ifstream in(manifest);
  if (!in) throw InputError(manifest, 0, "cannot open the manifest");
  const fs::path checkout = fs::absolute(manifest).parent_path().parent_path().parent_path();
  const fs::path shared =
      EnvOr("SPARSETUNE_SHARED_DATASETS", (checkout.parent_path() / "shared/datasets").string());
  const fs::path cache = EnvOr("SPARSETUNE_CORPUS_CACHE", XdgCacheHome() + "/sparsetune/corpus");
  std::vector<InputFile> out;
  std::string line;
  int64_t number = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    for (size_t start = 0;;) {
      const size_t tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (!header) {
      if (fields.size() < 4 || fields[0] != "name" || fields[1] != "kernels" ||
          fields[3] != "source")
        throw InputError(manifest, number, "expected the header name, kernels, nnz, source");
      header = true;
      continue;
    }
    if (fields.size() < 4) throw InputError(manifest, number, "expected 4 tab-separated fields");
    if (("," + fields[1] + ",").find("," + kernel + ",") == std::string::npos) continue;
    const std::string& source = fields[3];
    fs::path file;
    if (source.rfind("shared:", 0) == 0) {
      file = shared / source.substr(7);
    } else if (source.rfind("gen ", 0) == 0) {
      const bool tensor = source.find("tensor3") != std::string::npos;
      file = cache / "files" / (fields[0] + (tensor ? ".tns" : ".mtx"));
    } else {
      throw InputError(manifest, number, "a source is shared:PATH or a gen command");
    }
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      throw InputError(manifest, number,
                       file.string() + " does not exist" +
                           (source[0] == 'g' ? " (generate the corpus with "
                                               "scripts/collect_training_data.sh "
                                               "--materialize-only)"
                                             : ""));
    }
    out.push_back({file.string(), source});
  }
  if (!header) throw InputError(manifest, number, "no header: expected name, kernels, nnz, source");
  return out;
}

// Files, directories (every matrix or tensor file below them, sorted), list files (one path
// per line, relative to the list's folder, optionally followed by a tab and the file's origin;
// lines starting with '#' are comments) and corpus manifests (.tsv).
std::vector<InputFile> ExpandPaths(const std::vector<std::string>& paths,
                                   const std::string& kernel) {
  std::vector<InputFile> out;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw InputError(path, 0, "no such file or directory");
    if (EndsWith(path, ".tsv")) {
      std::vector<InputFile> files = ManifestFiles(path, kernel);
      out.insert(out.end(), files.begin(), files.end());
    } else if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::recursive_directory_iterator(path)) {
        if (entry.is_regular_file() && IsTensorFileName(entry.path().filename().string()))
          found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      for (const auto& f : found) out.push_back({f, f});
    } else if (IsListFileName(path)) {
      std::ifstream in(path);
      if (!in) throw InputError(path, 0, "cannot open the list");
      std::string line;
      int64_t number = 0;
      const fs::path base = fs::path(path).parent_path();
      while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        const size_t tab = line.find('\t');
        std::string entry = line.substr(0, tab);
        while (!entry.empty() && entry.back() == ' ') entry.pop_back();
        if (entry.empty()) continue;
        const fs::path p = fs::path(entry).is_absolute() ? fs::path(entry) : base / entry;
        if (!fs::is_regular_file(p, ec))
          throw InputError(path, number, "no such file: " + p.string());
        std::string origin = tab == std::string::npos ? p.string() : line.substr(tab + 1);
        out.push_back({p.string(), origin.empty() ? p.string() : origin});
      }
    } else {
      out.push_back({path, path});
    }
  }
  if (out.empty()) throw InputError("no matrix or tensor files found in the given paths");
  return out;
}

std::string MatrixName(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* ext : {".gz", ".tar", ".mtx", ".tns"}) {
    if (EndsWith(name, ext)) name.resize(name.size() - std::string(ext).size());
  }
  return name;
}

std::string FormatDuration(double seconds) {
  char text[32];
  if (seconds < 0 || !std::isfinite(seconds)) return "?";
  if (seconds < 90) {
    std::snprintf(text, sizeof text, "%.0fs", seconds);
  } else if (seconds < 5400) {
    std::snprintf(text, sizeof text, "%.0fm", seconds / 60);
  } else {
    std::snprintf(text, sizeof text, "%.1fh", seconds / 3600);
  }
  return text;
}

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

// Guards against a kernel that never ends. A kernel cannot be stopped from outside its
// thread, so when a run outlives the hard limit the watchdog records it as a timeout failure
// with its own database connection and re-executes the command, which resumes after it.
class Watchdog {
 public:
  Watchdog(std::string db_path, std::vector<std::string> argv)
      : db_path_(std::move(db_path)), argv_(std::move(argv)), thread_([this] { Loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Arm(double seconds, FailureRecord failure, std::string state_if_fired) {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
    limit_seconds_ = seconds;
    deadline_ = Clock::now() + std::chrono::microseconds(int64_t(seconds * 1e6));
    failure_ = std::move(failure);
    state_ = std::move(state_if_fired);
    cv_.notify_all();
  }
  void Disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (!armed_) {
        cv_.wait(lock);
        continue;
      }
      if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
          Clock::now() >= deadline_) {
        Fire();  // does not return
      }
    }
  }
  [[noreturn]] void Fire() {
    std::fprintf(stderr,
                 "\nsparsetune collect: a kernel is still running after %g s; recording it as "
                 "timed out and restarting to continue\n",
                 limit_seconds_);
    try {
      auto db = Database::Open(db_path_, OpenMode::kReadWrite);
      db->RecordFailure(failure_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sparsetune: internal error: cannot record the timeout: %s\n", e.what());
      std::fflush(stderr);
      _exit(3);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    setenv(kStateVariable, state_.c_str(), 1);
    std::vector<char*> args;
    for (auto& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    execv("/proc/self/exe", args.data());
    std::fprintf(stderr, "sparsetune: internal error: cannot restart the collection\n");
    _exit(3);
  }

  std::string db_path_;
  std::vector<std::string> argv_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool armed_ = false, stop_ = false;
  double limit_seconds_ = 0;
  Clock::time_point deadline_;
  FailureRecord failure_;
  std::string state_;
  std::thread thread_;
};

// Microseconds per empty parallel region: about one on an idle machine. When other processes
// hold the cores, a region's barrier waits for the scheduler to run every thread (milliseconds),
// and the times of small kernels measure that wait rather than the schedule.
double ParallelRegionMicros() {
  const int threads = HardwareThreads();
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
constexpr double kBusyRegionMicros = 20;

std::vector<std::string> OwnCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  return argv;
}

struct Candidate {
  Schedule schedule;
  std::string json;  // canonical
  std::string hash;
  std::string source;      // where it came from: fixed_csr, sampled
  std::string failure;     // set when it cannot run (invalid, compile error)
  int kernel_source = -1;  // index into the batch's distinct generated sources
};

// FixedCSR and `samples` distinct sampled schedules of one matrix, deterministic per seed.
std::vector<Candidate> CandidatesFor(const ResolvedKernel& k, const IndexSizes& sizes,
                                     const CollectOptions& o, const std::string& fingerprint) {
  std::vector<Candidate> out;
  Candidate csr;
  csr.schedule = FixedCsrSchedule(k.expression);
  csr.source = "fixed_csr";
  out.push_back(csr);
  std::set<std::string> seen = {csr.schedule.CanonicalJson()};
  StableHasher hasher;
  hasher.UpdateU64(o.seed);
  hasher.UpdateString(k.name);
  hasher.UpdateString(fingerprint);
  std::mt19937_64 rng(hasher.Digest64());
  if (auto waco = WacoTemplate::ForKernel(k.name)) {
    WacoSampleOptions options;
    options.subspaces = !o.uniform;
    for (const auto& s : waco->SampleDistinct(sizes, o.samples, rng, options, seen)) {
      Candidate c;
      c.schedule = waco->ToSchedule(s);
      c.source = "sampled";
      out.push_back(c);
    }
  } else {
    GenericSampleOptions options;
    options.max_threads = HardwareThreads();
    int misses = 0;
    while (static_cast<int>(out.size()) < o.samples + 1 && misses < 200 + 20 * o.samples) {
      Candidate c;
      c.schedule = SampleGenericSchedule(k.expression, sizes, rng, options);
      if (!Lower(k.expression, c.schedule).nest ||
          !seen.insert(c.schedule.CanonicalJson()).second) {
        ++misses;
        continue;
      }
      misses = 0;
      c.source = "sampled";
      out.push_back(c);
    }
  }
  for (auto& c : out) {
    c.schedule.Canonicalize();
    c.json = c.schedule.CanonicalJson();
    c.hash = ScheduleHash(c.json);
  }
  return out;
}

// Verifies first and times only when the verifying run stayed under the limit: a schedule
// that is far too slow costs one run instead of two.
RunResult VerifyThenTime(KernelRunner& runner, const Schedule& schedule,
                         const RunOptions& options) {
  RunOptions verify = options;
  verify.time = false;
  const auto start = Clock::now();
  RunResult checked = runner.Run(schedule, verify);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!checked.ok()) return checked;
  // The pack time may be that of an earlier, cached pack: the estimate errs towards timing.
  const double run_ms = ms - checked.pack_ms;
  if (run_ms > options.timing.max_ms_per_run) {
    checked.status = RunStatus::kTimedOut;
    checked.message = "the verifying run took " + std::to_string(run_ms) +
                      " ms, over the limit of " + std::to_string(options.timing.max_ms_per_run) +
                      " ms";
    return checked;
  }
  RunOptions time = options;
  time.verify = false;
  RunResult timed = runner.Run(schedule, time);
  timed.verified = checked.verified;
  timed.max_relative_error = checked.max_relative_error;
  timed.pack_ms = checked.pack_ms;
  timed.compile_ms = checked.compile_ms;
  return timed;
}

std::string ReasonOf(const std::string& failure) {
  return failure.substr(0, failure.find(':'));
}

void RunCollect(const CollectOptions& o, Context& context) {
  const auto argv = OwnCommandLine();  // before anything else, for a restart
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
  const std::vector<InputFile> files = ExpandPaths(o.paths, k.name);
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
  Watchdog watchdog(db_path, argv);
  bool bad_input = false;

  for (size_t m = 0; m < files.size(); ++m) {
    const std::string& path = files[m].path;
    const std::string name = MatrixName(path);
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
    std::vector<Candidate> candidates = CandidatesFor(k, sizes, o, fingerprint);
    progress.Shrink(o.samples + 1 - int64_t(candidates.size()));
    const std::set<std::string> done = db->MeasuredScheduleHashes(key, true);
    std::vector<Candidate*> pending;
    for (auto& c : candidates) {
      if (done.count(c.hash)) {
        if (tally.recounted > 0) {
          --tally.recounted;
        } else {
          ++tally.skipped;
        }
      } else {
        pending.push_back(&c);
      }
    }
    if (pending.empty()) {
      ++tally.matrices_done;
      progress.Update();
      continue;
    }

    // Generate every kernel, then compile the distinct ones up front, a few at a time:
    // compiling dominates, and schedules that differ only in split sizes, chunk or threads
    // share one object.
    std::vector<std::string> sources;
    std::map<std::string, int> source_ids;
    for (Candidate* c : pending) {
      LowerOutcome lowered = Lower(k.expression, c->schedule);
      if (!lowered.nest) {
        c->failure = std::string(RunStatusName(RunStatus::kInvalidSchedule)) + ": " + lowered.error;
        continue;
      }
      const std::string source =
          GenerateKernelSource(*lowered.nest, k.dtype, CodegenMode::kRuntimeParameters);
      auto [it, added] = source_ids.emplace(source, int(sources.size()));
      if (added) sources.push_back(source);
      c->kernel_source = it->second;
    }
    std::vector<std::string> compile_errors(sources.size());
    std::vector<double> compile_ms(sources.size(), 0);
    {
      progress.Status("compiling " + std::to_string(sources.size()) + " kernels");
      std::atomic<size_t> next{0};
      auto worker = [&] {
        for (size_t s; (s = next++) < sources.size();) {
          try {
            compile_ms[s] = jit.Compile(sources[s]).compile_ms;
          } catch (const std::exception& e) {
            compile_errors[s] = e.what();
          }
        }
      };
      std::vector<std::thread> workers;
      const int jobs = std::max(1, std::min<int>(o.compile_jobs, int(sources.size())));
      for (int w = 1; w < jobs; ++w) workers.emplace_back(worker);
      worker();
      for (auto& w : workers) w.join();
    }
    for (Candidate* c : pending) {
      if (c->kernel_source >= 0 && !compile_errors[c->kernel_source].empty())
        c->failure = "compile_failed: " + compile_errors[c->kernel_source];
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
    double region_us = ParallelRegionMicros();
    for (const auto wait_start = Clock::now();
         region_us > kBusyRegionMicros &&
         std::chrono::duration<double>(Clock::now() - wait_start).count() < o.wait_idle_s;
         region_us = ParallelRegionMicros()) {
      progress.Status("waiting for the cores to be idle");
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (region_us > kBusyRegionMicros) {
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

    for (Candidate* c : pending) {
      FailureRecord failure;
      failure.key = key;
      failure.expression = k.expression.text;
      failure.schedule_json = c->json;
      if (c->failure.empty()) {
        Tally if_fired = tally;
        ++if_fired.failed["timed_out"];
        if_fired.restarts += 1;
        if_fired.elapsed_before = progress.Elapsed() + hard_limit_s;
        FailureRecord stuck = failure;
        char limit[32];
        std::snprintf(limit, sizeof limit, "%g", hard_limit_s);
        stuck.reason = std::string("timed_out: still running after ") + limit +
                       " s; the collection was restarted";
        watchdog.Arm(hard_limit_s, stuck, if_fired.ToJson().dump());
        RunResult r;
        try {
          r = VerifyThenTime(*runner, c->schedule, run_options);
        } catch (const std::exception& e) {
          r.status = RunStatus::kInvalidSchedule;
          r.message = e.what();
          c->failure = std::string("error: ") + e.what();
        }
        watchdog.Disarm();
        if (c->failure.empty() && r.ok()) {
          MeasurementRecord record;
          record.key = key;
          record.expression = k.expression.text;
          record.schedule_json = c->json;
          record.median_ms = r.time.median_ms;
          record.min_ms = r.time.min_ms;
          record.max_ms = r.time.max_ms;
          record.reps = r.time.reps;
          record.pack_ms = r.pack_ms;
          record.compile_ms = r.compile_ms > 0 ? r.compile_ms : compile_ms[c->kernel_source];
          record.verified = r.verified;
          record.source = c->source;
          db->RecordMeasurement(record);
          ++tally.measured;
          progress.Update();
          continue;
        }
        if (c->failure.empty())
          c->failure = std::string(RunStatusName(r.status)) + ": " + r.message;
      }
      failure.reason = c->failure;
      db->RecordFailure(failure);
      ++tally.failed[ReasonOf(c->failure)];
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
