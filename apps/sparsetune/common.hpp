#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/dtype.hpp"
#include "ir/expression.hpp"
#include "ir/schedule.hpp"
#include "tensor/permutation.hpp"

namespace sparsetune::cli {

// The kernel a command works on: a named kernel or an index-notation expression.
struct KernelOptions {
  std::string kernel;
  std::string expr;
  std::string sparse;
  bool sparse_output = false;
  std::vector<std::string> dense;
  std::string dtype = "f32";
};

void AddKernelOptions(CLI::App* sub, KernelOptions& options, bool required = true);

struct ResolvedKernel {
  std::string name;  // kernel name, or "expr" for --expr
  Expression expression;
  std::map<std::string, int64_t> dense_sizes;  // defaults overridden by --dense
  DType dtype = DType::kF32;
};

ResolvedKernel ResolveKernel(const KernelOptions& options);

// A small file's contents, whole; a longer file or stream (/dev/zero) is refused once
// max_bytes have been read, as is a directory.
std::string ReadSmallFile(const std::string& path, size_t max_bytes);

// "default" (FixedCSR) or a JSON file.
Schedule LoadSchedule(const std::string& spec, const Expression& expression);

// "random:SEED" asks for a sampled schedule, drawn once the tensor's sizes are known.
bool IsRandomScheduleSpec(const std::string& spec);
// The seed of "random:SEED"; throws InputError when SEED is not a non-negative integer.
uint64_t RandomScheduleSeed(const std::string& spec);
// A valid schedule: the kernel's WACO SuperSchedule template for spmv, spmm, sddmm and
// mttkrp, the generic sampler for anything else.
Schedule SampleSchedule(const std::string& kernel, const Expression& expression,
                        const std::map<std::string, int64_t>& sizes, std::mt19937_64& rng);

// --orderings auto|none|all|KIND[,KIND...]: the row and column orderings tune tries on its best
// schedules, into `orderings` (auto: TuneRequest's defaults).
void AddOrderingsOption(CLI::App* sub, std::vector<OrderingKind>& orderings);

// --on-busy fail|store|ignore, into `on_busy` (empty: $SPARSETUNE_ON_BUSY, else fail);
// `unstored` says what "fail" does with times still disturbed after measuring again.
void AddOnBusyOption(CLI::App* sub, std::string& on_busy, const std::string& unstored);

// Option checks (CLI11 validators; a failed check ends the command with exit code 2).
// A thread count: 0 (all) up to kThreadsPerCpu times the CPUs this process may use.
constexpr int kThreadsPerCpu = 4;
CLI::Validator ThreadCount();
// A finite number above 0 (or from 0 with allow_zero) up to `most`: nan, inf and negatives
// are refused.
CLI::Validator FiniteNumber(bool allow_zero, double most = 1e9);
inline CLI::Validator PositiveMilliseconds() {
  return FiniteNumber(false);
}
// Bounds of tune's and batch's candidate counts.
constexpr int kMaxSamples = 100000;
constexpr int kMaxTopK = 10000;
constexpr int kMaxSearchEf = 100000;
constexpr int kMaxRefineSteps = 100;
// A whole number from lo to hi.
CLI::Validator CountIn(int64_t lo, int64_t hi);

// tune's and batch's --top-k, --refine, --refine-steps and --leader-round, and their bounds
// (InputError when a value is outside them); the defaults are TuneRequest's.
struct SearchBudget {
  int top_k = 0;  // the model's own (ModelTopK)
  int refine = 8;
  int refine_steps = 1;
  int leader_round = 8;
};
void AddSearchBudgetOptions(CLI::App* sub, SearchBudget& budget);
void CheckSearchBudget(const SearchBudget& budget);

// tune's, query's and batch's --calls N: the winner for N calls on one prepared operand (chosen
// by preparation plus N calls, stored apart); 0, the default: the winner per call.
constexpr int64_t kMaxCalls = 1000000000;
void AddCallsOption(CLI::App* sub, int64_t& calls);
// --tuned-order: the winner for callers that stay in the tuned order, stored apart.
void AddTunedOrderOption(CLI::App* sub, bool& tuned_order);

// A time for people, in the unit that suits it: "0.421 us", "42.1 us", "1.25 ms", "3.40 s".
// Machine-readable outputs (JSON, CSV) keep milliseconds.
std::string FormatMs(double ms);

// A word for /bin/sh: as it is when it needs no quotes, else in single quotes.
std::string ShellWord(const std::string& text);
// The kernel options as given, for a command line to copy: " --kernel spmm --dense j=64".
std::string KernelArguments(const KernelOptions& options);

// Says on stderr that the shipped cost model of `kernel` is not where this executable looks
// for it, and what is measured instead, when tune or batch would use it (a kernel with a WACO
// template, no --no-model, no --model). Without it tune measures sampled candidates.
void WarnWhenShippedModelMissing(const std::string& kernel, bool use_model,
                                 const std::string& model_dir);

// --db FILE (default: $SPARSETUNE_DB, else sparsetune.db under the XDG data home).
void AddDatabaseOption(CLI::App* sub, std::string& path);
std::string DatabasePathOrDefault(const std::string& path);

}  // namespace sparsetune::cli
