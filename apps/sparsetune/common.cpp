#include "common.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/compiler.hpp"
#include "base/errors.hpp"
#include "base/paths.hpp"
#include "base/threads.hpp"
#include "costmodel/model_files.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "ir/kernels.hpp"
#include "jit/jit.hpp"
#include "superschedule/random_schedule.hpp"
#include "superschedule/waco_template.hpp"
#include "tune/tune.hpp"

namespace sparsetune::cli {

void AddKernelOptions(CLI::App* sub, KernelOptions& o, bool) {
  auto* kernel = sub->add_option("--kernel,-k", o.kernel, "Named kernel: " + KnownKernelNames());
  auto* expr =
      sub->add_option("--expr,-e", o.expr, "Index notation, e.g. \"y(i) = A(i,k) * x(k)\"");
  kernel->excludes(expr);
  expr->excludes(kernel);
  sub->add_option("--sparse", o.sparse,
                  "With --expr: the sparse operand (default: first on the right)");
  sub->add_flag("--sparse-output", o.sparse_output,
                "With --expr: the output is sparse over the sparse operand's leading indices");
  sub->add_option("--dense", o.dense, "Dense index sizes, e.g. --dense j=256 or k=16,l=16")
      ->take_all();
  sub->add_option("--dtype", o.dtype,
                  "Value type: f32 (default), f64, or complex c64 (two f32) and c128 (two f64)")
      ->check(CLI::IsMember({"f32", "f64", "c64", "c128"}));
}

std::string FormatMs(double ms) {
  if (!std::isfinite(ms)) return "?";
  const char* unit = "ms";
  double value = ms;
  if (std::fabs(ms) < 1) {
    value = ms * 1000;
    unit = "us";
  } else if (std::fabs(ms) >= 1000) {
    value = ms / 1000;
    unit = "s";
  }
  // Three significant digits, never an exponent.
  const double size = std::fabs(value);
  const int decimals = size == 0 ? 0 : size < 1 ? 3 : size < 10 ? 2 : size < 100 ? 1 : 0;
  char text[48];
  std::snprintf(text, sizeof text, "%.*f %s", decimals, value, unit);
  return text;
}

std::string ShellWord(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_./=,:+-@%") == std::string::npos;
  return plain ? text : ShellQuote(text);
}

std::string KernelArguments(const KernelOptions& o) {
  std::string out;
  if (!o.kernel.empty()) out += " --kernel " + ShellWord(o.kernel);
  if (!o.expr.empty()) out += " --expr " + ShellWord(o.expr);
  if (!o.sparse.empty()) out += " --sparse " + ShellWord(o.sparse);
  if (o.sparse_output) out += " --sparse-output";
  if (!o.dense.empty()) {
    out += " --dense";
    for (const auto& d : o.dense) out += " " + ShellWord(d);
  }
  if (o.dtype != "f32") out += " --dtype " + ShellWord(o.dtype);
  return out;
}

void WarnWhenShippedModelMissing(const std::string& kernel, bool use_model,
                                 const std::string& model_dir) {
  if (!use_model || !model_dir.empty() || kernel.empty() || !WacoTemplate::ForKernel(kernel))
    return;
  const std::filesystem::path folder = std::filesystem::path(DefaultModelsDirectory()) / kernel;
  std::error_code error;
  if (std::filesystem::exists(folder / kModelManifest, error)) return;
  // This machine's calibrated model is used before the shipped one: nothing is missing.
  const std::string calibrated = CalibratedModelDirectory(
      MachineKey(DetectMachine(Jit::DefaultCompiler(), Jit::Flags())), kernel);
  if (std::filesystem::exists(std::filesystem::path(calibrated) / kModelManifest, error)) return;
  std::string looked;
  for (const std::string& place : ModelsSearchPath())
    looked += (looked.empty() ? "" : ", ") + (std::filesystem::path(place) / kernel).string();
  const char* from_env = std::getenv("SPARSETUNE_MODELS");
  std::fprintf(stderr,
               "sparsetune: warning: no cost model for %s (looked in %s%s); measuring FixedCSR, "
               "the heuristic schedules and sampled candidates instead of the model's choices. "
               "Point SPARSETUNE_MODELS at the shipped models/ folder or pass --model DIR "
               "(--no-model silences this)\n",
               kernel.c_str(), looked.empty() ? "nowhere" : looked.c_str(),
               from_env && *from_env ? ", from SPARSETUNE_MODELS" : "");
}

ResolvedKernel ResolveKernel(const KernelOptions& o) {
  ResolvedKernel r;
  if (o.kernel.empty() == o.expr.empty())
    throw InputError("give exactly one of --kernel and --expr");
  std::map<std::string, int64_t> overrides = ParseDenseSizes(o.dense);
  if (!o.kernel.empty()) {
    const KernelDef* def = FindKernel(o.kernel);
    if (!def)
      throw InputError("unknown kernel '" + o.kernel + "' (known: " + KnownKernelNames() + ")");
    if (!o.sparse.empty() || o.sparse_output)
      throw InputError("--sparse and --sparse-output go with --expr");
    r.name = def->name;
    r.expression = KernelExpression(def->name);
    r.dense_sizes = def->dense_defaults;
  } else {
    r.name = "expr";
    r.expression = BuildExpression(o.expr, "--expr \"" + o.expr + "\"", o.sparse,
                                   o.sparse_output ? SparseOutput::kYes : SparseOutput::kAuto);
  }
  for (const auto& [index, size] : overrides) r.dense_sizes[index] = size;
  if (!ParseDTypeName(o.dtype, &r.dtype)) r.dtype = DType::kF32;
  return r;
}

std::string ReadSmallFile(const std::string& path, size_t max_bytes) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw InputError(path, 0, std::string("cannot open the file: ") + strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) throw InputError(path, 0, "cannot stat the file");
  if (S_ISDIR(st.st_mode)) throw InputError(path, 0, "is a directory, not a file");
  // Streams (pipes, devices) are read up to the limit too; one byte more tells it was passed.
  std::string text;
  char buffer[1 << 16];
  while (text.size() <= max_bytes) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(path, 0, std::string("cannot read: ") + strerror(errno));
    if (got == 0) return text;
    text.append(buffer, static_cast<size_t>(got));
  }
  throw InputError(path, 0,
                   "longer than " + std::to_string(max_bytes) + " bytes, the limit for this file");
}

Schedule LoadSchedule(const std::string& spec, const Expression& expression) {
  if (spec.empty() || spec == "default") return FixedCsrSchedule(expression);
  return ParseScheduleText(ReadSmallFile(spec, ScheduleLimits::kMaxJsonBytes), spec);
}

bool IsRandomScheduleSpec(const std::string& spec) {
  return spec.rfind("random:", 0) == 0;
}

uint64_t RandomScheduleSeed(const std::string& spec) {
  const std::string digits = spec.substr(std::string("random:").size());
  if (digits.empty() || digits.size() > 19 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    throw InputError("--schedule " + spec + ": the seed must be a non-negative integer (random:7)");
  }
  return std::stoull(digits);
}

Schedule SampleSchedule(const std::string& kernel, const Expression& expression,
                        const std::map<std::string, int64_t>& sizes, std::mt19937_64& rng) {
  if (auto waco = WacoTemplate::ForKernel(kernel)) {
    return waco->ToSchedule(waco->Sample(sizes, rng));
  }
  GenericSampleOptions options;
  options.max_threads = HardwareThreads();
  return SampleGenericSchedule(expression, sizes, rng, options);
}

void AddOnBusyOption(CLI::App* sub, std::string& on_busy, const std::string& unstored) {
  sub->add_option("--on-busy", on_busy,
                  "Times taken while other processes held the cores: \"fail\" measures them "
                  "again and, still disturbed, " +
                      unstored +
                      "; \"store\" measures again and stores anyway; \"ignore\" measures once "
                      "and stores. Default: $SPARSETUNE_ON_BUSY, else fail")
      ->check(CLI::IsMember({"fail", "store", "ignore"}));
}

void AddCallsOption(CLI::App* sub, int64_t& calls) {
  sub->add_option("--calls", calls,
                  "The operand is prepared once and called N times: the winner is the one of "
                  "least preparation (ordering, packing) plus N calls, stored apart from the "
                  "winner per call (default 0: the fastest per call)")
      ->check(CountIn(0, kMaxCalls));
}

void AddTunedOrderOption(CLI::App* sub, bool& tuned_order) {
  sub->add_flag("--tuned-order", tuned_order,
                "For an iterative method that converts its vectors once and calls the kernel in "
                "the tuned order (the emitted _compute_tuned_order): candidates are timed "
                "without the permutations of every call, and the winner is stored apart from "
                "the winner in the caller's order");
}

void AddOrderingsOption(CLI::App* sub, std::vector<OrderingKind>& orderings) {
  sub->add_option_function<std::string>(
         "--orderings",
         [&orderings](const std::string& text) {
           orderings.clear();
           if (text == "auto") {
             orderings = TuneRequest::DefaultOrderings();
             return;
           }
           if (text == "none") return;
           if (text == "all") {
             orderings = AllOrderings();
             return;
           }
           size_t begin = 0;
           while (begin <= text.size()) {
             const size_t end = std::min(text.find(',', begin), text.size());
             OrderingKind kind;
             const std::string name = text.substr(begin, end - begin);
             if (!ParseOrdering(name, &kind) || kind == OrderingKind::kNone)
               throw InputError("--orderings: unknown ordering '" + name +
                                "' (auto, none, all, or a list of rcm, degree, row-degree, "
                                "partition, community)");
             orderings.push_back(kind);
             begin = end + 1;
           }
         },
         "Row and column orderings tried on the best schedules (matrices): auto (degree, "
         "row-degree, rcm, and partition up to 4M nonzeros), none, all (also Louvain communities: "
         "slow on large "
         "graphs), or a list such as rcm,degree")
      ->default_str("auto");
}

CLI::Validator ThreadCount() {
  const int most = kThreadsPerCpu * HardwareThreads();
  return CLI::Validator(
      [most](std::string& text) -> std::string {
        int64_t n = 0;
        if (!CLI::detail::lexical_cast(text, n) || n < 0 || n > most)
          return "threads must be a whole number from 0 (all) to " + std::to_string(most) + " (" +
                 std::to_string(kThreadsPerCpu) + " x the " +
                 std::to_string(most / kThreadsPerCpu) + " CPUs here), not " + text;
        return "";
      },
      "0.." + std::to_string(most));
}

CLI::Validator FiniteNumber(bool allow_zero, double most) {
  char bound[32];
  std::snprintf(bound, sizeof bound, "%g", most);
  const std::string range = std::string(allow_zero ? "from 0" : "above 0") + " to " + bound;
  return CLI::Validator(
      [allow_zero, most, range](std::string& text) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(text, x) || !std::isfinite(x) || x < 0 ||
            (x == 0 && !allow_zero) || x > most)
          return "expected a finite number " + range + ", not " + text;
        return "";
      },
      "NUMBER " + range);
}

void AddSearchBudgetOptions(CLI::App* sub, SearchBudget& budget) {
  sub->add_option("--top-k", budget.top_k,
                  "Cost-model candidates to measure (default 0: as many as the model's manifest "
                  "says, tune_top_k; the shipped SDDMM model's 30, the others' 10)");
  sub->add_option("--refine", budget.refine,
                  "Second-round schedules a step, one move from the fastest so far (0: none)")
      ->capture_default_str();
  sub->add_option("--refine-steps", budget.refine_steps,
                  "Steps of the second round, each from the fastest after the step before")
      ->capture_default_str();
  sub->add_option("--leader-round", budget.leader_round,
                  "Schedules one move from the final round's winner (its splits halved and doubled "
                  "first), timed beside it in three more contests (0: none)")
      ->capture_default_str();
}

void CheckSearchBudget(const SearchBudget& budget) {
  if (budget.top_k < 0 || budget.top_k > kMaxTopK)
    throw InputError("--top-k must be from 1 to " + std::to_string(kMaxTopK) +
                     " (0: the model's own)");
  if (budget.refine < 0 || budget.refine > kMaxTopK)
    throw InputError("--refine must be from 0 to " + std::to_string(kMaxTopK));
  if (budget.refine_steps < 1 || budget.refine_steps > kMaxRefineSteps)
    throw InputError("--refine-steps must be from 1 to " + std::to_string(kMaxRefineSteps));
  if (budget.leader_round < 0 || budget.leader_round > kMaxTopK)
    throw InputError("--leader-round must be from 0 to " + std::to_string(kMaxTopK));
}

CLI::Validator CountIn(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t n = 0;
        if (!CLI::detail::lexical_cast(text, n) || n < lo || n > hi)
          return "expected a whole number from " + std::to_string(lo) + " to " +
                 std::to_string(hi) + ", not " + text;
        return "";
      },
      std::to_string(lo) + ".." + std::to_string(hi));
}

void AddDatabaseOption(CLI::App* sub, std::string& path) {
  sub->add_option("--db", path,
                  "Schedule database (default: $SPARSETUNE_DB, else sparsetune.db under the XDG "
                  "data home)");
}

std::string DatabasePathOrDefault(const std::string& path) {
  const std::string chosen = path.empty() ? DefaultDatabasePath() : path;
  Database::CheckPath(chosen);
  return chosen;
}

}  // namespace sparsetune::cli
