// sparsetune bench: sparsetune's kernels beside what a user would otherwise call or write
// (Eigen and textbook kernels compiled with the generated kernels' flags, librsb,
// SuiteSparse:GraphBLAS on its in-place paths, PyTorch), on the same operands, layouts and
// threads, each verified, all timed together in shuffled rounds; in several contests, each
// preparing every contender afresh, whose median counts for each (one packing or thread
// placement can be lucky); a bandwidth and a FLOP-rate probe say how far each is from the
// machine's limits.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/bulk_allocator.hpp"
#include "base/caches.hpp"
#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "base/memory.hpp"
#include "base/threads.hpp"
#include "baselines/baseline.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "db/machine.hpp"
#include "io/read.hpp"
#include "jit/jit.hpp"
#include "measure/runner.hpp"
#include "measure/timing.hpp"
#include "ordering/ordering.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/stats.hpp"
#include "tune/candidate_sources.hpp"
#include "tune/query.hpp"

namespace sparsetune::cli {

namespace {

struct BenchOptions {
  std::string file;
  KernelOptions kernel;
  int threads = 0;
  std::vector<std::string> schedules;
  int samples = 0;
  bool libraries = true;
  std::string db;
  double min_ms = 300;
  // Each contest prepares every contender afresh (a packing lands on other pages, the threads
  // perhaps on other cores) and times them together; each contender's median contest counts.
  int contests = 3;
  // Also the winner tune stored for the tuned order, and the given schedules, called in the
  // tuned order (vectors converted once, no permutation a call).
  bool tuned_order = false;
  // A library or textbook kernel whose verifying call takes longer than this is timed by that
  // call alone, in the first contest (0: every contender in full). PyTorch 1.13's CPU SDDMM
  // forms the dense product: two minutes a call on a 30000 x 30000 operand, called in every
  // contest and every retry of a disturbed timing, half an hour of a bench that decides
  // nothing. At seconds a call, a first call's cold start is well under a percent of it.
  double time_once_over_ms = 10000;
  bool json = false;
  bool csv = false;
  bool threads_given = false;  // --threads was on the command line (even --threads 0)
};

// Bytes of each of the bandwidth probe's three arrays: 128 MiB, or the last-level cache where
// that is larger (a large-L3 server's 480 MiB would hold all three 128 MiB arrays, and the probe
// would time the cache, not memory), at most 2 GiB, and 128 MiB again when three of those would
// take over half the memory left (the contenders bench holds come first).
int64_t BandwidthProbeArrayBytes() {
  const int64_t floor = int64_t(128) << 20, ceiling = int64_t(2) << 30;
  const int64_t bytes = std::min(ceiling, std::max(floor, MachineCaches().llc));
  return 3 * bytes <= MemoryAvailableToProcess() / 2 ? bytes : floor;
}

struct BandwidthReading {
  double gbs = 0;
  int64_t array_bytes = 0;
};

// STREAM-triad-like: a = b + s * c over three arrays of BandwidthProbeArrayBytes, together
// beyond the last-level cache, all threads; the best of a few runs, counting the three arrays
// once each.
BandwidthReading BandwidthProbe(int threads) {
  const int64_t n = BandwidthProbeArrayBytes() / int64_t(sizeof(double));
  std::vector<double> a(n), b(n), c(n);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t k = 0; k < n; ++k) {
    a[k] = 0;
    b[k] = 1.0 + double(k % 7);
    c[k] = 2.0 - double(k % 5);
  }
  double best = 1e30;
  for (int rep = 0; rep < 6; ++rep) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t k = 0; k < n; ++k) a[k] = b[k] + 0.5 * c[k];
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  volatile double sink = a[n / 3];
  (void)sink;
  return {3.0 * double(n) * sizeof(double) / best / 1e9, n * int64_t(sizeof(double))};
}

// The least bytes a kernel must move: the sparse operand in CSR (values, unless every value is
// the same, and 32-bit column indices, row pointers) and each dense operand and output once; 0
// for a kernel other than spmv, spmm, sddmm and sddmm_nt.
double EffectiveBytes(const std::string& kernel, const CooTensor& t, const IndexSizes& sizes,
                      DType dtype) {
  const double v = double(DTypeSize(dtype)), nnz = double(t.nnz());
  const double rows = double(t.dims[0]), cols = double(t.dims[1]);
  const double value_bytes = HasUniformValues(t, IsComplex(dtype)) ? 0 : v;
  const double csr = nnz * (value_bytes + 4) + (rows + 1) * 4;
  if (kernel == "spmv") return csr + (cols + rows) * v;
  if (kernel == "spmm") return csr + (cols + rows) * double(sizes.at("j")) * v;
  // sddmm and sddmm_nt: B (M x K), C (K x N or N x K) and the output's values.
  if (kernel == "sddmm" || kernel == "sddmm_nt")
    return csr + nnz * v + (rows + cols) * double(sizes.at("k")) * v;
  return 0;
}

// Floating-point operations of one call: a multiply and an add per term (SpMV: per nonzero;
// SpMM and SDDMM: per nonzero and element of the dense width); 0 for other kernels.
// Real operations: a multiply and an add per term, four times that for complex values (four
// multiplies and four adds).
double Flops(const std::string& kernel, const CooTensor& t, const IndexSizes& sizes, DType dtype) {
  const double per_term = IsComplex(dtype) ? 8 : 2, nnz = double(t.nnz());
  if (kernel == "spmv") return per_term * nnz;
  if (kernel == "spmm") return per_term * nnz * double(sizes.at("j"));
  if (kernel == "sddmm" || kernel == "sddmm_nt") return per_term * nnz * double(sizes.at("k"));
  return 0;
}

// The columns of --csv, its first line.
constexpr const char* kCsvHeader =
    "file,kernel,nnz,contender,kind,verified,time_ms,effective_gbs,prepare_ms,probe_gbs,gflops,"
    "flop_probe_gflops,flop_share,version,flags,threads,disturbed,contest_ms";

// "1.2 MB", "32 MB".
std::string FormatBytes(double bytes) {
  const char* unit = bytes >= 1e9 ? "GB" : bytes >= 1e6 ? "MB" : "kB";
  const double value = bytes / (bytes >= 1e9 ? 1e9 : bytes >= 1e6 ? 1e6 : 1e3);
  char text[32];
  std::snprintf(text, sizeof text, "%.*f %s", value < 10 ? 2 : value < 100 ? 1 : 0, value, unit);
  return text;
}

// What bench is doing, on stderr: one line a step, or one line redrawn on a terminal.
class BenchProgress {
 public:
  explicit BenchProgress(int64_t total) : total_(total), tty_(isatty(STDERR_FILENO) == 1) {}
  void Step(const std::string& what) {
    ++done_;
    if (tty_) {
      std::fprintf(stderr, "\r\033[Kbench: %s (%lld/%lld)", what.c_str(), (long long)done_,
                   (long long)total_);
    } else {
      std::fprintf(stderr, "bench: %s (%lld/%lld)\n", what.c_str(), (long long)done_,
                   (long long)total_);
    }
    std::fflush(stderr);
  }
  void Finish() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  int64_t total_;
  int64_t done_ = 0;
  bool tty_;
};

// Commas would split a CSV field.
std::string CsvField(std::string text) {
  std::replace(text.begin(), text.end(), ',', ';');
  return text;
}

struct Contender {
  std::string name;
  std::string kind;  // "sparsetune", "library" or "hand"
  std::string version, method, flags;
  std::function<void()> call;
  bool verified = false;
  std::string message;
  double prepare_ms = 0;
  double ordering_ms = 0;  // of which renumbering rows and columns
  int threads = 0;         // the threads it runs on
  // sparsetune's schedules from the database or a file: the thread count they name, which
  // they run with unless --threads overrides it (-1: not such a schedule).
  int stored_threads = -1;
  // Called in its tuned order (--tuned-order): compared apart, since the libraries cannot skip
  // the caller's order.
  bool tuned_order = false;
  // sparsetune's contenders: the schedule it ran, so that a heuristic_N or the stored winner can
  // be read, run or stored again (null for libraries and textbook kernels).
  nlohmann::json schedule;
  // The contender whose kernel this one is, to the byte and on as many threads: it was timed
  // once, under that name, and shares its times ("" and -1: timed on its own).
  std::string same_as;
  int same_as_index = -1;
  TimingResult time;               // of its median contest
  std::vector<double> contest_ms;  // each contest's median, in the order they ran
  // Its verifying call took over --time-once-over: that call, in the first contest, is its time.
  bool timed_once = false;
};

bool Matches(const ValueBuffer& got, const ReferenceResult& ref, DType dtype, std::string* why) {
  if (got.size() != static_cast<int64_t>(ref.values.size())) {
    *why = "output has " + std::to_string(got.size()) + " values, expected " +
           std::to_string(ref.values.size());
    return false;
  }
  // As KernelRunner::Verify: relative to the sum of the terms' magnitudes.
  for (int64_t q = 0; q < got.size(); ++q) {
    double error = 0;
    if (!MatchesReference(got.GetComplex(q), ReferenceValue(ref, q), ref.magnitudes[q], dtype,
                          &error)) {
      *why = "element " + std::to_string(q) + ": got " + ValueText(got.GetComplex(q), dtype) +
             ", expected " + ValueText(ReferenceValue(ref, q), dtype);
      return false;
    }
  }
  return true;
}

// sparsetune's schedules: those with a name of their own run on `threads` threads; the
// stored winner and given files run as they are, unless --threads was given.
struct NamedSchedule {
  std::string name;
  Schedule schedule;
  bool as_stored = false;
  bool tuned_order = false;  // called in its tuned order (RunOptions::tuned_order)
  int same_as = -1;          // the index of an identical contender timed in its place
};

// FixedCSR and the schedules as stored are prepared first (ContenderPreparation), so that what
// memory cannot hold is the least telling.
bool Leading(const NamedSchedule& named) {
  return named.name == "fixed_csr" || named.as_stored;
}

// The threads a schedule runs on: its own count as stored, unless --threads was given.
int RunsOn(const NamedSchedule& named, int threads, bool threads_given) {
  const int runs_on = named.as_stored && !threads_given ? named.schedule.threads : threads;
  return runs_on > 0 ? runs_on : HardwareThreads();
}

// A rule and the stored winner are often the same schedule: timing the one kernel twice would
// put two draws of the machine's noise in the table as if they were two kernels. Each repeat
// (the same schedule, order and thread count) points at the one timed: the first leading one,
// else the first.
void MarkRepeatedKernels(std::vector<NamedSchedule>& schedules, int threads, bool threads_given) {
  std::map<std::string, int> timed;
  for (const bool leading : {true, false}) {
    for (size_t s = 0; s < schedules.size(); ++s) {
      NamedSchedule& named = schedules[s];
      if (Leading(named) != leading) continue;
      nlohmann::json key = named.schedule.ToJson();
      key["parallel"].erase("threads");  // the count it runs on stands in
      key["bench"] = {RunsOn(named, threads, threads_given), named.tuned_order};
      const auto [first, inserted] = timed.emplace(key.dump(), int(s));
      if (!inserted) named.same_as = first->second;
    }
  }
}

// sparsetune's contenders, named for the table, from the candidate sources tune uses: FixedCSR,
// the library rules, Scorch's schedule, GroupCOO; then the stored winner, the given schedules
// and sampled ones.
std::vector<NamedSchedule> ScheduleContenders(const ResolvedKernel& k, const CooTensor& tensor,
                                              const IndexSizes& sizes, const BenchOptions& o,
                                              const std::vector<Schedule>& given) {
  CandidateContext context;
  context.kernel = context.kernel_key = k.name;
  context.expression = &k.expression;
  context.sizes = sizes;
  context.tensor = &tensor;
  context.fingerprint = PatternFingerprint(tensor);
  context.prefix_nnz = ComputePatternStats(tensor, StatsDetail::kLinear).prefix_nnz;
  context.value_bytes = DTypeSize(k.dtype);
  // As tune measures them: one value where every value is the same and the format allows.
  const bool uniform_values = HasUniformValues(tensor, IsComplex(k.dtype));
  auto propose = [&](const std::unique_ptr<CandidateSource>& source) {
    auto proposed = source->Propose(context).value_or(std::vector<TuneCandidate>{});
    if (uniform_values) ApplyUniformValues(proposed);
    return proposed;
  };
  std::vector<NamedSchedule> schedules;
  schedules.push_back({"fixed_csr", FixedCsrSchedule(k.expression)});
  int h = 0;
  for (const auto& c : propose(LibraryRuleSource()))
    schedules.push_back({"heuristic_" + std::to_string(++h), c.schedule});
  schedules.push_back({"scorch", propose(ScorchSource()).front().schedule});
  for (const auto& c : propose(GroupCooSource())) {
    const auto& grouped = c.schedule.groups;
    std::string name = c.schedule.splits.count("i") ? "blockgroupcoo_" : "groupcoo_";
    schedules.push_back(
        {name + std::to_string(grouped.empty() ? 1 : grouped.begin()->second), c.schedule});
  }
  {
    QueryRequest q;
    q.fingerprint = context.fingerprint;
    q.kernel = k.name;
    q.expression = k.expression;
    q.dense = k.dense_sizes;
    q.dtype = k.dtype;
    q.db_path = DatabasePathOrDefault(o.db);
    q.one_value = uniform_values;
    const QueryAnswer answer = Query(q);
    if (answer.hit) {
      schedules.push_back(
          {"tuned", Schedule::FromJson(nlohmann::json::parse(answer.winner_json), "db"), true});
    }
    q.tuned_order = true;
    const QueryAnswer in_tuned_order = o.tuned_order ? Query(q) : QueryAnswer{};
    if (in_tuned_order.hit) {
      schedules.push_back(
          {"tuned@tuned-order",
           Schedule::FromJson(nlohmann::json::parse(in_tuned_order.winner_json), "db"), true,
           true});
    }
  }
  for (size_t s = 0; s < given.size(); ++s) {
    schedules.push_back(
        {o.schedules[s] + (o.tuned_order ? "@tuned-order" : ""), given[s], true, o.tuned_order});
  }
  if (o.samples > 0) {
    SampleOptions options;
    options.samples = o.samples;
    int n = 0;
    for (const auto& c : propose(SampledSource(options)))
      schedules.push_back({"sampled_" + std::to_string(++n), c.schedule});
  }
  return schedules;
}

// The operand of a bench: the matrix with its values (a pattern file's are all 1), and the
// given schedules, each of which must lower.
struct BenchOperand {
  CooTensor tensor;
  IndexSizes sizes;
  std::vector<Schedule> given;  // --schedule files, in order
};

BenchOperand ReadBenchOperand(const BenchOptions& o, const ResolvedKernel& k) {
  BenchOperand operand;
  for (const auto& path : o.schedules) {
    Schedule s = LoadSchedule(path, k.expression);
    LowerOutcome lowered = Lower(k.expression, s);
    if (!lowered.nest) throw InputError(path, 0, "invalid schedule: " + lowered.error);
    operand.given.push_back(s);
  }
  CooTensor& tensor = operand.tensor;
  tensor = ReadTensorFile(o.file);
  if (tensor.order() != 2) throw InputError(o.file + ": bench takes matrices");
  if (std::string left_out = ValuesLeftOut(tensor, k.dtype); !left_out.empty())
    std::fprintf(stderr, "sparsetune: warning: %s: %s\n", o.file.c_str(), left_out.c_str());
  // A pattern file's values are all 1, as its users' matrix is: GraphBLAS then keeps one value
  // (an iso matrix, its fast path for graphs), and so do sparsetune's kernels whose format
  // allows (Schedule::uniform_values).
  operand.sizes = ResolveIndexSizes(k.expression, tensor.dims, k.dense_sizes);
  return operand;
}

// Keeps bench within memory: every contender is held until all are timed together, so one is
// prepared only when what it is expected to hold (and, for FixedCSR's peers, what the libraries
// will hold) leaves a margin free; otherwise it is listed unprepared with the reason.
class MemoryGuard {
 public:
  MemoryGuard(const CooTensor& tensor, KernelRunner& runner, size_t libraries)
      : libraries_left_(int64_t(libraries)) {
    const int64_t value = DTypeSize(runner.dtype());
    matrix_bytes_ = tensor.nnz() * (4 + value) + (tensor.dims[0] + 1) * 8;
    output_bytes_ = int64_t(runner.reference().values.size()) * value;
    for (const ValueBuffer& input : runner.inputs()) input_bytes_ += input.size() * value;
    margin_ = std::max<int64_t>(int64_t(512) << 20, MemoryAvailableToProcess() / 20);
  }
  // A schedule's kernel: its packed operand (the largest so far, or a CSR matrix's) and an
  // output of its own until it is verified; "" or the reason it is left out.
  std::string ForSchedule(bool reserve_for_libraries) const {
    return Check(std::max(matrix_bytes_, largest_pack_) + output_bytes_,
                 reserve_for_libraries ? libraries_left_ * LibraryHolds() : 0);
  }
  void SchedulePrepared(int64_t pack_bytes) { largest_pack_ = std::max(largest_pack_, pack_bytes); }
  // A library may build its matrix from 64-bit coordinates, copy the dense operands and hold
  // its own output, and its output is copied once more to be verified; or as much as the
  // most a library took so far.
  std::string ForLibrary() {
    --libraries_left_;
    const int64_t need = 3 * matrix_bytes_ + input_bytes_ + 2 * output_bytes_;
    return Check(std::max(need, largest_library_ + output_bytes_), 0);
  }
  void LibraryPrepared(int64_t free_before) {
    largest_library_ = std::max(largest_library_, free_before - MemoryAvailableToProcess());
  }
  static int64_t Free() {
    // Freed memory the allocator keeps counts as free.
    bulk_memory::ReleaseKept();
    return MemoryAvailableToProcess();
  }

 private:
  int64_t LibraryHolds() const { return matrix_bytes_ + input_bytes_ + output_bytes_; }
  std::string Check(int64_t need, int64_t reserved) const {
    const int64_t free = Free();
    if (need + reserved + margin_ <= free) return "";
    std::string why = "left out for memory: it would hold about " + FormatBytes(double(need));
    if (reserved > 0) why += ", the libraries " + FormatBytes(double(reserved));
    return why + ", and " + FormatBytes(double(free)) + " are free";
  }
  int64_t matrix_bytes_ = 0, output_bytes_ = 0, input_bytes_ = 0, margin_ = 0;
  int64_t largest_pack_ = 0, largest_library_ = 0;
  int64_t libraries_left_ = 0;
};

// Prepares every contender (packed, compiled, verified) into its place in the table: first
// FixedCSR, the stored winner and the given schedules, then the libraries and textbook kernels,
// then sparsetune's other schedules, so that what memory cannot hold is the least telling.
class ContenderPreparation {
 public:
  ContenderPreparation(KernelRunner& runner, MemoryGuard& memory, BenchProgress& progress,
                       size_t count)
      : runner_(runner), memory_(memory), progress_(progress), contenders_(count) {
    prepared_.reserve(count);
  }

  // sparsetune's schedules: being called one after another, they write one output between
  // them, so a large output is held once rather than once per contender.
  void Schedules(const std::vector<NamedSchedule>& schedules, bool leading, int threads,
                 bool threads_given, const std::string& jit_flags) {
    for (size_t s = 0; s < schedules.size(); ++s) {
      const NamedSchedule& named = schedules[s];
      if (Leading(named) != leading) continue;
      auto& c = contenders_[s] = std::make_unique<Contender>();
      c->name = named.name;
      c->kind = "sparsetune";
      c->schedule = named.schedule.ToJson();
      c->version = "sparsetune";
      c->flags = jit_flags;
      c->threads = RunsOn(named, threads, threads_given);
      if (named.as_stored) c->stored_threads = named.schedule.threads;
      if (named.same_as >= 0) {
        c->same_as = schedules[named.same_as].name;
        c->same_as_index = named.same_as;
        progress_.Step(named.name + " is the kernel of " + c->same_as + ": timed once");
        continue;
      }
      progress_.Step("preparing " + named.name);
      // FixedCSR, the table's yardstick, is always tried.
      const bool always = named.name == "fixed_csr";
      if (std::string refusal = always ? "" : memory_.ForSchedule(leading); !refusal.empty()) {
        c->message = refusal;
        continue;
      }
      // On fresh memory, as a caller's first preparation is, not on what the last one freed.
      bulk_memory::ReleaseKept();
      RunOptions options;
      options.threads = named.as_stored && !threads_given ? -1 : threads;
      options.tuned_order = named.tuned_order;
      c->tuned_order = named.tuned_order;
      PreparedKernel p = runner_.Prepare(named.schedule, options);
      c->verified = p.result().verified;
      c->message =
          p.ok() ? "" : std::string(RunStatusName(p.result().status)) + ": " + p.result().message;
      // Preparing the operand: renumbering rows and columns (ordered schedules) and packing.
      c->prepare_ms = p.result().pack_ms + p.result().ordering_ms;
      c->ordering_ms = p.result().ordering_ms;
      if (!c->verified) continue;  // its kernel and operands are freed here
      const int64_t output_bytes = p.output().size() * int64_t(DTypeSize(p.output().dtype()));
      if (!shared_output_ || !p.WriteOutputTo(shared_output_)) shared_output_ = p.output_buffer();
      memory_.SchedulePrepared(p.bytes() - output_bytes);
      prepared_.push_back(std::move(p));
      const size_t index = prepared_.size() - 1;
      c->call = [this, index] { prepared_[index].Call(); };
    }
  }

  // The libraries and textbook kernels from places `first` on, each verified against `ref` on
  // its first call. Those given the matrix renumbered (a `suffix` naming the ordering) are
  // compared with the kernels called in the tuned order.
  // One whose verifying call took over `time_once_over_ms` is timed by that call; in a later
  // contest (`earlier`: the first contest's contenders) it is not prepared again.
  void Libraries(const std::vector<std::unique_ptr<Baseline>>& libraries, size_t first,
                 const ReferenceResult& ref, const std::string& suffix, int threads,
                 double time_once_over_ms, const std::vector<std::unique_ptr<Contender>>* earlier) {
    for (size_t l = 0; l < libraries.size(); ++l) {
      Baseline* library = libraries[l].get();
      if (earlier && (*earlier)[first + l]->timed_once) {
        contenders_[first + l] = std::make_unique<Contender>(*(*earlier)[first + l]);
        progress_.Step((*earlier)[first + l]->name + " was timed once, in the first contest");
        continue;
      }
      auto& c = contenders_[first + l] = std::make_unique<Contender>();
      c->name = library->name() + suffix;
      c->kind = library->kind();
      c->tuned_order = !suffix.empty();
      c->threads = threads;
      progress_.Step("preparing " + c->name);
      if (std::string refusal = memory_.ForLibrary(); !refusal.empty()) {
        c->message = refusal;
        continue;
      }
      // A library that accumulates (GraphBLAS's C += A*B) starts from a zeroed output, so
      // its first call is the one verified.
      const int64_t free_before = MemoryGuard::Free();
      double call_ms = 0;
      try {
        library->Prepare();
        const auto start = std::chrono::steady_clock::now();
        library->Call();
        call_ms = MsSince(start);
        c->verified = Matches(library->Output(), ref, runner_.dtype(), &c->message);
      } catch (const std::exception& e) {
        c->message = e.what();
      }
      if (c->verified && time_once_over_ms > 0 && call_ms > time_once_over_ms) {
        c->timed_once = true;
        c->time.median_ms = c->time.min_ms = c->time.max_ms = call_ms;
        c->time.reps = 1;
      }
      memory_.LibraryPrepared(free_before);
      c->prepare_ms = library->prepare_ms;
      c->version = library->version;
      c->method = library->method;
      c->flags = library->flags;
      if (!c->timed_once) c->call = [library] { library->Call(); };
    }
  }

  std::vector<std::unique_ptr<Contender>>& contenders() { return contenders_; }

 private:
  KernelRunner& runner_;
  MemoryGuard& memory_;
  BenchProgress& progress_;
  std::vector<std::unique_ptr<Contender>> contenders_;
  std::vector<PreparedKernel> prepared_;
  std::shared_ptr<ValueBuffer> shared_output_;
};

// Times the verified contenders together in shuffled rounds; returns the timing's disturbance
// check (timed again while disturbed; see TimingOptions).
TimingResult TimeContenders(const std::vector<std::unique_ptr<Contender>>& contenders,
                            double min_ms, uint64_t seed, BenchProgress& progress) {
  PinOpenMpThreads();
  std::vector<std::function<void()>> runs;
  std::vector<Contender*> timed;
  for (auto& c : contenders) {
    if (!c->verified || c->timed_once) continue;
    runs.push_back(c->call);
    timed.push_back(c.get());
  }
  TimingOptions timing;
  timing.min_reps = 10;
  timing.min_total_ms = min_ms;
  timing.max_reps = 1000;
  // A contender a thousand times slower than the fastest (PyTorch 1.13's CPU SDDMM forms the
  // dense product) cannot matter to any ratio; it leaves the rounds, its time from the runs it
  // made (`reps`), instead of costing minutes. The factor is far above what a scheduling
  // hiccup in a fast contender's first run does.
  timing.drop_slower_than = 1000;
  progress.Step("timing " + std::to_string(runs.size()) +
                " verified contenders together in shuffled rounds");
  const std::vector<TimingResult> times = TimeInterleaved(runs, timing, seed);
  for (size_t t = 0; t < timed.size(); ++t) timed[t]->time = times[t];
  return times.empty() ? TimingResult() : times.front();
}

// Each contender's contests as one: its median contest's time, weighing the two thread
// placements where the contests saw both (CombineContests; a contender that failed in any
// contest is not verified, with that contest's message), the median of its preparation times
// and every contest's median time. The disturbance check is the worst contest's, the threads'
// round trip the median contest's.
std::vector<std::unique_ptr<Contender>> MergeContests(
    std::vector<std::vector<std::unique_ptr<Contender>>>& contests,
    const std::vector<TimingResult>& checks, TimingResult* check) {
  std::vector<std::unique_ptr<Contender>> merged;
  for (size_t i = 0; i < contests.front().size(); ++i) {
    std::vector<double> times, prepare, ordering;
    std::vector<TimingResult> timings;
    std::unique_ptr<Contender>* failed = nullptr;
    for (auto& contest : contests) {
      Contender& c = *contest[i];
      if (!c.verified) {
        if (!failed) failed = &contest[i];
        continue;
      }
      times.push_back(c.time.median_ms);
      timings.push_back(c.time);
      prepare.push_back(c.prepare_ms);
      ordering.push_back(c.ordering_ms);
    }
    std::unique_ptr<Contender> one =
        failed ? std::move(*failed) : std::move(contests[MedianContestIndex(times)][i]);
    if (!failed) one->time = CombineContests(timings, ObservedPlacements().FarShare());
    one->call = nullptr;  // its kernel was freed with its contest
    one->contest_ms = times;
    if (!failed && one->timed_once) one->contest_ms.resize(1);  // the others are its copies
    if (!failed) {
      one->prepare_ms = prepare[MedianContestIndex(prepare)];
      one->ordering_ms = ordering[MedianContestIndex(ordering)];
    }
    merged.push_back(std::move(one));
  }
  // A repeated kernel shares the times of the one timed in its place.
  for (auto& one : merged) {
    if (one->same_as_index < 0) continue;
    const Contender& timed = *merged[one->same_as_index];
    one->verified = timed.verified;
    one->message = timed.message;
    one->time = timed.time;
    one->contest_ms = timed.contest_ms;
    one->prepare_ms = timed.prepare_ms;
    one->ordering_ms = timed.ordering_ms;
  }
  std::vector<double> round_trips;
  for (const TimingResult& t : checks) round_trips.push_back(t.round_trip_ns);
  *check = checks[MedianContestIndex(round_trips)];
  check->attempts = 0;
  for (const TimingResult& t : checks) {
    check->attempts += t.attempts;
    if (t.disturbed && !check->disturbed) {
      check->disturbed = true;
      check->disturbance = t.disturbance;
    }
  }
  return merged;
}

// What the report of a bench reads: the operand, the probes, the contenders' times and the best
// of each kind.
struct BenchReport {
  const BenchOptions* o = nullptr;
  const ResolvedKernel* k = nullptr;
  const CooTensor* tensor = nullptr;
  int threads = 0;
  std::string jit_flags;
  // The memory bandwidth probe, GB/s: the median of its readings, one after each contest (on
  // a virtual machine one reading moved by 35% between benches of the same kernel).
  double probe = 0;
  std::vector<double> probe_by_contest;
  int64_t probe_array_bytes = 0;  // each of its three arrays, the smallest of its readings
  FlopProbe flop_probe;
  int64_t llc_bytes = 0;
  double bytes = 0;             // the least bytes a call must move
  bool uniform_values = false;  // every value of the matrix is the same: no values among bytes
  double flops = 0;
  TimingResult timing_check;
  std::vector<double> contest_round_trip_ns;  // the threads' round trip in each contest
  PlacementTally placements;                  // where the threads ran in the bench's rounds
  const std::vector<std::unique_ptr<Contender>>* contenders = nullptr;  // FixedCSR first
  const Contender* best_library = nullptr;
  const Contender* best_hand = nullptr;
  const Contender* best_baseline = nullptr;  // the best library or textbook kernel
  const Contender* best_own = nullptr;       // in the caller's order
  const Contender* best_own_in_tuned_order = nullptr;
  // bench --tuned-order: the best library or textbook kernel given the matrix renumbered alike.
  const Contender* best_renumbered_baseline = nullptr;

  const Contender* fixed() const { return contenders->front().get(); }
  double gflops(const Contender& c) const { return flops / c.time.median_ms / 1e6; }
  double gbs(const Contender& c) const { return bytes / c.time.median_ms / 1e6; }
};

void FindBest(BenchReport& r) {
  auto keep_best = [](const Contender*& best, const Contender* c) {
    if (!best || c->time.median_ms < best->time.median_ms) best = c;
  };
  for (const auto& c : *r.contenders) {
    if (!c->verified || !c->same_as.empty()) continue;  // a repeat: the one timed is named
    if (c->kind == "sparsetune") {
      keep_best(c->tuned_order ? r.best_own_in_tuned_order : r.best_own, c.get());
      continue;
    }
    if (c->tuned_order) {
      keep_best(r.best_renumbered_baseline, c.get());
      continue;
    }
    keep_best(c->kind == "hand" ? r.best_hand : r.best_library, c.get());
    keep_best(r.best_baseline, c.get());
  }
}

nlohmann::json ReportJson(const BenchReport& r) {
  const BenchOptions& o = *r.o;
  const ResolvedKernel& k = *r.k;
  const CooTensor& tensor = *r.tensor;
  const FlopProbe& flop_probe = r.flop_probe;
  const int threads = r.threads;
  nlohmann::json out;
  out["file"] = o.file;
  out["kernel"] = k.name;
  out["rows"] = tensor.dims[0];
  out["cols"] = tensor.dims[1];
  out["nnz"] = tensor.nnz();
  out["threads"] = threads;
  out["dtype"] = DTypeName(k.dtype);
  out["bandwidth_probe_gbs"] = r.probe;
  out["bandwidth_probe_gbs_by_contest"] = r.probe_by_contest;
  out["bandwidth_probe_array_bytes"] = r.probe_array_bytes;
  out["flop_probe_gflops"] = flop_probe.gflops;
  out["flop_probe"] = {{"gflops", flop_probe.gflops}, {"isa", flop_probe.isa},
                       {"lanes", flop_probe.lanes},   {"dtype", DTypeName(k.dtype)},
                       {"threads", threads},          {"flags", r.jit_flags}};
  // The timing's disturbance check (timed again while disturbed; see TimingOptions).
  out["disturbed"] = r.timing_check.disturbed;
  out["disturbance"] = r.timing_check.disturbance;
  out["timing_attempts"] = r.timing_check.attempts;
  out["thread_round_trip_ns"] = r.timing_check.round_trip_ns;
  out["thread_skew"] = r.timing_check.thread_skew;
  if (r.placements.near_rounds + r.placements.far_rounds > 0)
    out["placements"] = {{"near_rounds", r.placements.near_rounds},
                         {"far_rounds", r.placements.far_rounds},
                         {"far_share", r.placements.FarShare()}};
  out["contests"] = r.contest_round_trip_ns.size();
  out["contest_round_trip_ns"] = r.contest_round_trip_ns;
  out["effective_bytes"] = r.bytes;
  out["uniform_values"] = r.uniform_values;
  out["llc_bytes"] = r.llc_bytes;
  out["flops"] = r.flops;
  out["results"] = nlohmann::json::array();
  out["effective_gbs"] = nlohmann::json::object();
  for (const auto& c : *r.contenders) {
    nlohmann::json j = {{"name", c->name},         {"kind", c->kind},
                        {"verified", c->verified}, {"prepare_ms", c->prepare_ms},
                        {"version", c->version},   {"flags", c->flags},
                        {"threads", c->threads}};
    if (c->stored_threads >= 0) j["stored_threads"] = c->stored_threads;
    if (c->tuned_order) j["tuned_order"] = true;
    if (!c->same_as.empty()) j["same_as"] = c->same_as;
    if (c->timed_once) j["timed_once"] = true;
    if (!c->schedule.is_null()) j["schedule"] = c->schedule;
    if (!c->method.empty()) j["method"] = c->method;
    if (c->verified) {
      j["time_ms"] = c->time.median_ms;
      j["min_ms"] = c->time.min_ms;
      j["max_ms"] = c->time.max_ms;
      if (c->time.far_weight > 0) {
        j["near_ms"] = c->time.near_ms;
        j["far_ms"] = c->time.far_ms;
        j["far_weight"] = c->time.far_weight;
      }
      j["reps"] = c->time.reps;
      j["contest_ms"] = c->contest_ms;
      // Per call with the operand's preparation (ordering and packing, or the library's
      // conversion) spread over 100 calls.
      j["end_to_end_100_ms"] = c->time.median_ms + c->prepare_ms / 100;
      if (c->ordering_ms > 0) j["ordering_ms"] = c->ordering_ms;
      if (r.bytes > 0) {
        j["effective_gbs"] = r.gbs(*c);
        j["bandwidth_share"] = r.gbs(*c) / r.probe;
        out["effective_gbs"][c->name] = r.gbs(*c);
      }
      if (r.flops > 0) {
        j["gflops"] = r.gflops(*c);
        j["flop_share"] = r.gflops(*c) / flop_probe.gflops;
      }
    } else {
      j["time_ms"] = nullptr;
      j["message"] = c->message;
    }
    out["results"].push_back(j);
  }
  const Contender* best_own = r.best_own;
  if (best_own) out["best_sparsetune"] = best_own->name;
  if (r.best_library) out["best_library"] = r.best_library->name;
  if (r.best_hand) out["best_hand"] = r.best_hand->name;
  if (r.best_baseline) out["best_baseline"] = r.best_baseline->name;
  if (best_own && r.best_library)
    out["speedup_vs_best_library"] = r.best_library->time.median_ms / best_own->time.median_ms;
  if (best_own && r.best_hand)
    out["speedup_vs_hand"] = r.best_hand->time.median_ms / best_own->time.median_ms;
  if (best_own && r.best_baseline)
    out["speedup_vs_best_baseline"] = r.best_baseline->time.median_ms / best_own->time.median_ms;
  if (best_own && r.fixed()->verified)
    out["speedup_vs_fixed_csr"] = r.fixed()->time.median_ms / best_own->time.median_ms;
  if (const Contender* tuned = r.best_own_in_tuned_order) {
    out["best_sparsetune_in_tuned_order"] = tuned->name;
    if (r.best_library)
      out["speedup_in_tuned_order_vs_best_library"] =
          r.best_library->time.median_ms / tuned->time.median_ms;
    if (r.best_baseline)
      out["speedup_in_tuned_order_vs_best_baseline"] =
          r.best_baseline->time.median_ms / tuned->time.median_ms;
    if (const Contender* renumbered = r.best_renumbered_baseline) {
      out["best_renumbered_baseline"] = renumbered->name;
      out["speedup_in_tuned_order_vs_best_renumbered_baseline"] =
          renumbered->time.median_ms / tuned->time.median_ms;
    }
  }
  return out;
}

void PrintCsv(const BenchReport& r) {
  std::printf("%s\n", kCsvHeader);
  for (const auto& c : *r.contenders) {
    std::string contest_ms;
    for (double t : c->contest_ms) {
      char text[32];
      std::snprintf(text, sizeof text, "%s%.6g", contest_ms.empty() ? "" : ";", t);
      contest_ms += text;
    }
    std::printf("%s,%s,%lld,%s,%s,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%s,%s,%d,%s,%s\n",
                CsvField(r.o->file).c_str(), r.k->name.c_str(), (long long)r.tensor->nnz(),
                CsvField(c->name).c_str(), c->kind.c_str(), c->verified ? "true" : "false",
                c->verified ? c->time.median_ms : 0.0, c->verified ? r.gbs(*c) : 0.0, c->prepare_ms,
                r.probe, c->verified ? r.gflops(*c) : 0.0, r.flop_probe.gflops,
                c->verified ? r.gflops(*c) / r.flop_probe.gflops : 0.0,
                CsvField(c->version).c_str(), CsvField(c->flags).c_str(), c->threads,
                r.timing_check.disturbed ? "true" : "false", contest_ms.c_str());
  }
}

// The table's notes: which threads the stored and given schedules run on, what GB/s counts and
// why a contender can pass the probe.
void PrintTableNotes(const BenchReport& r, const std::vector<std::string>& above_probe) {
  auto count_threads = [](int n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); };
  for (const auto& c : *r.contenders) {
    if (c->stored_threads < 0) continue;
    const std::string stored =
        c->stored_threads > 0 ? count_threads(c->stored_threads) : std::string("all threads");
    if (r.o->threads_given) {
      std::printf("  %s runs on %s (--threads); its schedule names %s\n", c->name.c_str(),
                  count_threads(c->threads).c_str(), stored.c_str());
    } else {
      std::printf("  %s runs as its schedule says: %s (--threads N overrides it)\n",
                  c->name.c_str(), stored.c_str());
    }
  }
  for (const auto& c : *r.contenders) {
    if (!c->same_as.empty())
      std::printf("  %s is the kernel of %s on as many threads: timed once, its times are %s's\n",
                  c->name.c_str(), c->same_as.c_str(), c->same_as.c_str());
    if (c->timed_once)
      std::printf(
          "  %s took %s on its verifying call, over --time-once-over %s: that call, in the "
          "first contest, is its time\n",
          c->name.c_str(), FormatMs(c->time.median_ms).c_str(),
          FormatMs(r.o->time_once_over_ms).c_str());
  }
  if (r.bytes > 0) {
    std::printf(
        "  GB/s is effective bandwidth: the least bytes a call must move (the matrix as CSR with "
        "32-bit column indices%s, every dense operand and the output once: %s) over its median "
        "time; GFLOP/s counts a multiply and an add per term%s, %%peak is its share of the FLOP "
        "probe\n",
        r.uniform_values ? " and no values, as every value is the same" : "",
        FormatBytes(r.bytes).c_str(),
        IsComplex(r.k->dtype) ? " (four of each for complex values)" : "");
    if (IsComplex(r.k->dtype)) {
      std::printf(
          "  complex values: PyTorch is not run (its complex CSR is not wired up here); the "
          "others run on std::complex, GraphBLAS on GxB_FC32/FC64, librsb on its complex "
          "types\n");
    }
    if (!above_probe.empty()) {
      std::string names;
      for (const auto& name : above_probe) names += (names.empty() ? "" : ", ") + name;
      const bool fits = r.llc_bytes > 0 && r.bytes <= double(r.llc_bytes);
      std::printf(
          "  above the probe (%s): the operands %s, so repeated calls read them from the caches "
          "while the probe reads memory\n",
          names.c_str(),
          fits ? ("(" + FormatBytes(r.bytes) + ") fit in the last-level cache (" +
                  FormatBytes(double(r.llc_bytes)) + ")")
                     .c_str()
               : "stay partly in the caches between calls");
    }
  }
}

void PrintTable(const BenchReport& r) {
  const ResolvedKernel& k = *r.k;
  const CooTensor& tensor = *r.tensor;
  const FlopProbe& flop_probe = r.flop_probe;
  const int threads = r.threads;
  const Contender* fixed = r.fixed();
  const std::string on_threads = std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  std::printf("%s  %s  %lld x %lld, %lld nonzeros, %s, %s\n", r.o->file.c_str(), k.name.c_str(),
              (long long)tensor.dims[0], (long long)tensor.dims[1], (long long)tensor.nnz(),
              DTypeName(k.dtype), on_threads.c_str());
  std::printf(
      "  probes      memory bandwidth %.1f GB/s (a = b + s * c over three %s arrays, %s, %s; "
      "the median of a reading after each contest)\n"
      "              FLOP rate %.1f GFLOP/s (independent %s FMA chains, %d lanes, %s)\n",
      r.probe, FormatBytes(double(r.probe_array_bytes)).c_str(),
      r.llc_bytes > 0 && 3 * r.probe_array_bytes <= r.llc_bytes
          ? "which the last-level cache could hold: memory was short for larger ones"
          : "beyond the caches",
      on_threads.c_str(), flop_probe.gflops, flop_probe.isa.c_str(), flop_probe.lanes,
      on_threads.c_str());
  std::printf("  %-22s %-10s %10s %10s %10s %8s %8s %6s %9s %11s %12s %7s\n", "contender", "kind",
              "median", "min", "max", "GB/s", "GFLOP/s", "%peak", "prepare", "vs FixedCSR",
              "vs best base", "threads");
  std::vector<std::string> above_probe;
  for (const auto& c : *r.contenders) {
    if (!c->verified) {
      std::printf("  %-22s %-10s   not verified: %s\n", c->name.c_str(), c->kind.c_str(),
                  c->message.c_str());
      continue;
    }
    const double median = c->time.median_ms;
    if (r.bytes > 0 && r.gbs(*c) > r.probe) above_probe.push_back(c->name);
    std::printf("  %-22s %-10s %10s %10s %10s %8.1f %8.2f %5.1f%% %9s %10.2fx %11.2fx %7d\n",
                c->name.c_str(), c->kind.c_str(), FormatMs(median).c_str(),
                FormatMs(c->time.min_ms).c_str(), FormatMs(c->time.max_ms).c_str(), r.gbs(*c),
                r.gflops(*c), 100 * r.gflops(*c) / flop_probe.gflops,
                FormatMs(c->prepare_ms).c_str(),
                fixed->verified ? fixed->time.median_ms / median : 0.0,
                r.best_baseline ? r.best_baseline->time.median_ms / median : 0.0, c->threads);
  }
  PrintTableNotes(r, above_probe);
  auto versus = [&](const char* what, const Contender* theirs) {
    if (r.best_own && theirs)
      std::printf("  best sparsetune (%s) vs %s (%s): %.2fx\n", r.best_own->name.c_str(), what,
                  theirs->name.c_str(), theirs->time.median_ms / r.best_own->time.median_ms);
  };
  versus("best library", r.best_library);
  versus("textbook kernel", r.best_hand);
  versus("best baseline", r.best_baseline);
  if (const Contender* tuned = r.best_own_in_tuned_order; tuned && r.best_baseline) {
    std::printf(
        "  best sparsetune in the tuned order (%s) vs best baseline (%s): %.2fx, for an iterative "
        "method that converts its vectors once; the baselines keep the caller's order\n",
        tuned->name.c_str(), r.best_baseline->name.c_str(),
        r.best_baseline->time.median_ms / tuned->time.median_ms);
    if (const Contender* renumbered = r.best_renumbered_baseline) {
      std::printf(
          "  best sparsetune in the tuned order (%s) vs best baseline given the matrix renumbered "
          "alike (%s): %.2fx\n",
          tuned->name.c_str(), renumbered->name.c_str(),
          renumbered->time.median_ms / tuned->time.median_ms);
    }
  }
  std::printf("  sparsetune's kernels: [%s]\n", r.jit_flags.c_str());
  for (const auto& c : *r.contenders) {
    if (c->kind == "sparsetune") continue;
    std::printf("  %s: %s", c->name.c_str(), c->version.c_str());
    if (!c->flags.empty()) std::printf(" [%s]", c->flags.c_str());
    std::printf("\n");
    if (!c->method.empty()) std::printf("      %s\n", c->method.c_str());
  }
  const size_t contests = r.contest_round_trip_ns.size();
  std::printf(
      "  contests   %zu: each prepared every contender afresh and timed them together; a "
      "contender's times are from its median contest\n",
      contests);
  std::printf("  machine    %s%s (timed %d times)\n",
              r.timing_check.disturbed ? "disturbed, these times are not to be trusted: " : "quiet",
              r.timing_check.disturbance.c_str(), r.timing_check.attempts);
  // Where the threads ran: kernels that share written data between threads depend on it.
  if (r.timing_check.round_trip_ns > 0) {
    std::string each;
    for (double ns : r.contest_round_trip_ns)
      each += (each.empty() ? "" : ", ") + std::to_string(std::lround(ns));
    std::printf(
        "  threads    a cache line's round trip between two of them: %s ns%s; the slowest took "
        "%.2fx the fastest's time for the same work\n",
        each.c_str(), contests > 1 ? " (by contest)" : "", r.timing_check.thread_skew);
  }
  if (r.placements.near_rounds > 0 && r.placements.far_rounds > 0)
    std::printf(
        "  placement  the threads shared a last-level cache in %lld timing rounds and not in "
        "%lld: where a contest saw both, a time weighs the far rounds' median by %.0f%%\n",
        static_cast<long long>(r.placements.near_rounds),
        static_cast<long long>(r.placements.far_rounds), 100 * r.placements.FarShare());
}

// The matrix renumbered by the ordering of the first contender called in its tuned order (the
// winner of `tune --tuned-order`, else a --schedule file), with dense inputs and a reference of
// its own; no runner when none of them renumbers.
struct RenumberedOperands {
  std::unique_ptr<CooTensor> tensor;
  std::unique_ptr<KernelRunner> runner;
  BaselineOperands operands;
  std::string suffix;  // "@degree": the contenders' names on it
};

RenumberedOperands RenumberForTheTunedOrder(const std::vector<NamedSchedule>& schedules,
                                            const BaselineOperands& operands, Jit& jit) {
  RenumberedOperands out;
  const auto ordered = std::find_if(schedules.begin(), schedules.end(), [](const NamedSchedule& s) {
    return s.tuned_order && s.schedule.ordering != OrderingKind::kNone;
  });
  if (ordered == schedules.end()) return out;
  const OrderingKind kind = ordered->schedule.ordering;
  const CooTensor& tensor = *operands.sparse;
  if (!OrderingRefusal(tensor, kind).empty()) return out;
  out.tensor = std::make_unique<CooTensor>(PermuteMatrix(tensor, ComputeOrdering(tensor, kind)));
  out.runner = std::make_unique<KernelRunner>(*operands.expression, *out.tensor, operands.sizes,
                                              operands.dtype, jit);
  out.runner->reference();  // computed first, as the caller's order's
  out.operands = operands;
  out.operands.sparse = out.tensor.get();
  out.operands.inputs = &out.runner->inputs();
  out.suffix = std::string("@") + OrderingName(kind);
  return out;
}

void RunBench(const BenchOptions& o) {
  ResolvedKernel k = ResolveKernel(o.kernel);
  if (o.libraries && !HasBaselines(k.name))
    throw InputError("bench compares spmv, spmm, sddmm and sddmm_nt with the baselines; " + k.name +
                     " has none (--no-libraries times sparsetune's kernels alone)");
  const int threads = o.threads > 0 ? o.threads : HardwareThreads();
  const BenchOperand operand = ReadBenchOperand(o, k);
  const CooTensor& tensor = operand.tensor;
  const IndexSizes& sizes = operand.sizes;
  Jit jit;
  KernelRunner runner(k.expression, tensor, sizes, k.dtype, jit);
  runner.reference();  // computed first: its memory is held throughout
  const std::string jit_flags = jit.compiler_version() + " " + Jit::Flags();

  std::vector<NamedSchedule> schedules = ScheduleContenders(k, tensor, sizes, o, operand.given);
  MarkRepeatedKernels(schedules, threads, o.threads_given);
  BaselineOperands operands;
  operands.kernel = k.name;
  operands.expression = &k.expression;
  operands.sparse = &tensor;
  operands.inputs = &runner.inputs();
  operands.sizes = sizes;
  operands.dtype = k.dtype;
  operands.threads = threads;
  operands.jit = &jit;
  std::vector<std::unique_ptr<Baseline>> libraries;  // each contest's own
  if (o.libraries) libraries = MakeBaselines(operands);
  // A kernel called in its tuned order is compared with the libraries given the matrix
  // renumbered by the same ordering, as a caller who renumbers the graph once would hand it to
  // them: they profit from the ordering too.
  const RenumberedOperands renumbered =
      o.libraries ? RenumberForTheTunedOrder(schedules, operands, jit) : RenumberedOperands{};
  std::vector<std::unique_ptr<Baseline>> renumbered_libraries;
  if (renumbered.runner) renumbered_libraries = MakeBaselines(renumbered.operands);

  // Progress on stderr: each contender as it is prepared (packed, compiled, verified), each
  // contest's timing, the probes.
  const size_t count = schedules.size() + libraries.size() + renumbered_libraries.size();
  BenchProgress progress(int64_t(o.contests * (count + 1) + 1));
  std::vector<std::vector<std::unique_ptr<Contender>>> contests;
  std::vector<TimingResult> checks;
  std::vector<double> probes;  // the bandwidth probe's reading after each contest
  int64_t probe_array_bytes = 0;
  for (int contest = 0; contest < o.contests; ++contest) {
    // Everything is prepared anew, the libraries' matrices too, and freed before the next.
    if (contest > 0 && o.libraries) libraries = MakeBaselines(operands);
    if (contest > 0 && renumbered.runner) renumbered_libraries = MakeBaselines(renumbered.operands);
    MemoryGuard memory(tensor, runner, libraries.size() + renumbered_libraries.size());
    ContenderPreparation preparation(runner, memory, progress, count);
    preparation.Schedules(schedules, /*leading=*/true, threads, o.threads_given, jit_flags);
    const std::vector<std::unique_ptr<Contender>>* first_contest =
        contests.empty() ? nullptr : &contests.front();
    preparation.Libraries(libraries, schedules.size(), runner.reference(), "", threads,
                          o.time_once_over_ms, first_contest);
    if (renumbered.runner) {
      preparation.Libraries(renumbered_libraries, schedules.size() + libraries.size(),
                            renumbered.runner->reference(), renumbered.suffix, threads,
                            o.time_once_over_ms, first_contest);
    }
    preparation.Schedules(schedules, /*leading=*/false, threads, o.threads_given, jit_flags);
    // Only verified contenders are timed, all together.
    checks.push_back(TimeContenders(preparation.contenders(), o.min_ms, contest + 1, progress));
    contests.push_back(std::move(preparation.contenders()));
    libraries.clear();
    renumbered_libraries.clear();
    const BandwidthReading reading = BandwidthProbe(threads);
    probes.push_back(reading.gbs);
    probe_array_bytes = probe_array_bytes == 0 ? reading.array_bytes
                                               : std::min(probe_array_bytes, reading.array_bytes);
  }
  BenchReport report;
  report.probe_by_contest = probes;
  report.probe_array_bytes = probe_array_bytes;
  report.probe = probes[MedianContestIndex(probes)];
  const std::vector<std::unique_ptr<Contender>> contenders =
      MergeContests(contests, checks, &report.timing_check);
  for (const TimingResult& t : checks) report.contest_round_trip_ns.push_back(t.round_trip_ns);
  report.placements = ObservedPlacements();
  progress.Step("probing the FLOP rate");
  report.flop_probe = MeasureFlopRate(jit, k.dtype, threads);
  progress.Finish();
  report.o = &o;
  report.k = &k;
  report.tensor = &tensor;
  report.threads = threads;
  report.jit_flags = jit_flags;
  report.llc_bytes = DetectMachine(jit.compiler(), Jit::Flags()).l3_bytes;
  report.bytes = EffectiveBytes(k.name, tensor, sizes, k.dtype);
  report.uniform_values = HasUniformValues(tensor, IsComplex(k.dtype));
  report.flops = Flops(k.name, tensor, sizes, k.dtype);
  report.contenders = &contenders;
  FindBest(report);
  if (o.json) {
    std::cout << ReportJson(report).dump(2) << "\n";
  } else if (o.csv) {
    PrintCsv(report);
  } else {
    PrintTable(report);
  }
}

}  // namespace

void RegisterBench(CLI::App& app, Context& context) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "sparsetune's kernels (FixedCSR, the heuristic schedules, Scorch's schedule, the stored "
      "winner, given schedules) beside the baselines (textbook kernels and Eigen compiled with "
      "the kernels' flags, librsb, GraphBLAS, PyTorch) on the same operands, all verified and "
      "timed together, with bandwidth and FLOP-rate probes");
  sub->add_option("FILE", o->file, "Sparse matrix file")->required();
  AddKernelOptions(sub, o->kernel);
  sub->add_option("--threads,-t", o->threads,
                  "Threads for every contender (default: all; the stored winner and --schedule "
                  "files run with the thread count they name unless this is given)")
      ->check(ThreadCount());
  sub->add_option("--schedule,-s", o->schedules, "Also a schedule JSON file (repeatable)");
  sub->add_option("--samples", o->samples, "Also this many sampled SuperSchedules");
  sub->add_flag("--tuned-order", o->tuned_order,
                "Also the winner stored by `tune --tuned-order` (tuned@tuned-order), and the "
                "--schedule files, called in their tuned order as an iterative method calls "
                "them (vectors converted once, no permutation a call), beside the baselines "
                "given the matrix renumbered by its ordering (graphblas@degree...), as a caller "
                "who renumbers the graph once would hand it to them");
  sub->add_flag("--no-libraries{false}", o->libraries,
                "Only sparsetune's kernels (no libraries, no textbook kernels)");
  AddDatabaseOption(sub, o->db);
  sub->add_option("--min-ms", o->min_ms, "Timed rounds last at least this long per contender")
      ->capture_default_str();
  sub->add_option("--contests", o->contests,
                  "Contests: each prepares every contender afresh and times them together; a "
                  "contender's median contest counts")
      ->check(CLI::Range(1, 25))
      ->capture_default_str();
  sub->add_option("--time-once-over", o->time_once_over_ms,
                  "A library or textbook kernel whose verifying call takes longer than this "
                  "many milliseconds is timed by that call alone, in the first contest, instead "
                  "of in every contest's rounds (0: time every contender in full)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_flag("--json", o->json, "One JSON object on stdout");
  sub->add_flag("--csv", o->csv,
                "One line per contender: file, kernel, nnz, contender, kind (sparsetune, library "
                "or hand), verified, time_ms, effective_gbs, prepare_ms, probe_gbs, gflops, "
                "flop_probe_gflops, flop_share, version, flags, threads, disturbed (other "
                "processes held the cores while timing), contest_ms (each contest's median, "
                "separated by semicolons), "
                "after a header line "
                "(commas in file, contender, version and flags become semicolons)");
  sub->callback([o, sub] {
    o->threads_given = sub->count("--threads") > 0;
    RunBench(*o);
  });
}

}  // namespace sparsetune::cli
