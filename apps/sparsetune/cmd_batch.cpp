// sparsetune batch: tune many matrices (files, folders, the SuiteSparse catalogue) into one
// database, resumably and in shards that separate processes share out.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/progress.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "tune/batch.hpp"

namespace sparsetune::cli {

namespace {

struct BatchOptions {
  std::vector<OrderingKind> orderings = TuneRequest::DefaultOrderings();
  std::vector<std::string> paths;
  std::string catalog;
  std::string root;
  std::string group;
  std::string kind;
  int64_t max_nnz = -1;
  KernelOptions kernel;
  std::string db;
  std::string shard;
  std::string summary;
  SearchBudget budget;
  int samples = -1;
  std::shared_ptr<bool> samples_given = std::make_shared<bool>(false);
  std::string model;
  bool no_model = false;
  double max_ms = 1000;
  uint64_t seed = 1;
  int64_t calls = 0;
  bool tuned_order = false;
  std::string on_busy;
  int busy_retries = 2;
  double busy_wait_s = 60;
  bool json = false;
};

std::string DescribeRow(const BatchRow& row) {
  char text[256];
  switch (row.status) {
    case BatchStatus::kTuned:
    case BatchStatus::kFromDb:
      std::snprintf(text, sizeof text, "%s %s, %.2fx FixedCSR", BatchStatusName(row.status),
                    FormatMs(row.winner_ms).c_str(), row.speedup);
      return row.name + ": " + text + (row.message.empty() ? "" : " (" + row.message + ")");
    case BatchStatus::kFailed:
      return row.name + ": failed: " + row.message;
    case BatchStatus::kMissing:
      return row.name + ": missing";
    case BatchStatus::kBusy:
      return row.name + ": busy, not stored: " + row.message;
  }
  return row.name;
}

void PrintReport(const BatchReport& report) {
  std::printf(
      "%lld matrices: %lld tuned, %lld from the database, %lld failed, %lld missing, %lld busy "
      "(%.1f s)\n",
      (long long)report.total, (long long)report.Count(BatchStatus::kTuned),
      (long long)report.Count(BatchStatus::kFromDb), (long long)report.Count(BatchStatus::kFailed),
      (long long)report.Count(BatchStatus::kMissing), (long long)report.Count(BatchStatus::kBusy),
      report.batch_ms / 1000);
  double log_sum = 0;
  int64_t with_speedup = 0;
  for (const auto& row : report.rows) {
    if (row.status == BatchStatus::kTuned || row.status == BatchStatus::kFromDb) {
      if (row.speedup > 0) {
        log_sum += std::log(row.speedup);
        ++with_speedup;
      }
    }
  }
  if (with_speedup > 0)
    std::printf("geomean speedup over FixedCSR %.2fx (%lld matrices)\n",
                std::exp(log_sum / double(with_speedup)), (long long)with_speedup);
  for (const auto& row : report.rows) {
    if (row.status == BatchStatus::kFailed)
      std::printf("  failed   %s: %s\n", row.name.c_str(), row.message.c_str());
  }
  for (const auto& row : report.rows) {
    if (row.status == BatchStatus::kBusy)
      std::printf("  busy     %s: %s\n", row.name.c_str(), row.message.c_str());
  }
  if (report.Count(BatchStatus::kBusy) > 0)
    std::printf("  (a busy matrix stored nothing; the same command on a quiet machine tunes it)\n");
  // A catalogue with few local files would list thousands: the summary file has them all.
  constexpr int64_t kMissingListed = 20;
  int64_t missing = 0;
  for (const auto& row : report.rows) {
    if (row.status != BatchStatus::kMissing) continue;
    if (++missing <= kMissingListed)
      std::printf("  missing  %s: %s\n", row.name.c_str(), row.message.c_str());
  }
  if (missing > kMissingListed)
    std::printf("  ... and %lld more missing (--summary lists them all)\n",
                (long long)(missing - kMissingListed));
}

void RunBatchCommand(const BatchOptions& o, Context& context) {
  ResolvedKernel k = ResolveKernel(o.kernel);
  if (*o.samples_given && (o.samples < 0 || o.samples > kMaxSamples))
    throw InputError("--samples must be from 0 to " + std::to_string(kMaxSamples));
  if (!o.model.empty() && o.no_model) throw InputError("--model and --no-model exclude each other");
  CheckSearchBudget(o.budget);
  BatchRequest request;
  request.paths = o.paths;
  request.catalog_path = o.catalog;
  request.catalog_root = o.root;
  request.filter.group = o.group;
  request.filter.kind = o.kind;
  if (o.max_nnz >= 0) request.filter.max_nnz = o.max_nnz;
  if (!o.shard.empty()) request.shard = ParseShard(o.shard);
  TuneRequest& tune = request.tune;
  tune.kernel = k.name == "expr" ? "" : k.name;
  tune.expression = k.expression;
  tune.dense = k.dense_sizes;
  tune.dtype = k.dtype;
  tune.db_path = DatabasePathOrDefault(o.db);
  tune.samples = o.samples;
  tune.model_dir = o.model;
  tune.use_model = !o.no_model;
  tune.sample_generic = *o.samples_given;
  tune.max_ms = o.max_ms;
  tune.top_k = o.budget.top_k;
  tune.refine = o.budget.refine;
  tune.refine_steps = o.budget.refine_steps;
  tune.leader_round = o.budget.leader_round;
  tune.seed = o.seed;
  tune.calls = o.calls;
  tune.tuned_order = o.tuned_order;
  tune.orderings = o.orderings;
  if (!o.on_busy.empty()) tune.on_busy = ParseBusyPolicy(o.on_busy, "--on-busy");
  request.busy_retries = o.busy_retries;
  request.busy_wait_s = o.busy_wait_s;

  // Rows reach the summary as they finish, so a killed batch leaves what it did.
  std::ofstream summary;
  auto open_summary = [&] {
    if (o.summary.empty() || summary.is_open()) return;
    summary.open(o.summary, std::ios::trunc);
    if (!summary) throw InputError(o.summary, 0, "cannot write the summary file");
    summary << BatchCsvHeader() << "\n" << std::flush;
  };

  const bool tty = isatty(STDERR_FILENO) == 1;
  ProgressBar bar("batch", 0);
  std::string current;
  size_t done = 0;
  BatchProgress progress;
  progress.start = [&](size_t index, size_t total, const BatchItem& item) {
    open_summary();
    current = item.name;
    done = index;
    bar.SetTotal(static_cast<int64_t>(total));
    if (tty) bar.Update(static_cast<int64_t>(index), current, true);
  };
  progress.stage = [&](const std::string& stage) {
    bar.Update(static_cast<int64_t>(done), current + ": " + stage);
  };
  progress.busy = [&](const std::string& cause, double wait_s, int next_attempt) {
    bar.Message("batch: " + current + ": " + cause + "; waiting " + FormatMs(wait_s * 1000) +
                " before attempt " + std::to_string(next_attempt));
  };
  progress.done = [&](size_t index, size_t, const BatchRow& row) {
    if (summary.is_open()) summary << BatchCsvRow(row) << "\n" << std::flush;
    const std::string line = DescribeRow(row);
    // On a terminal every matrix's line stays above the bar, which is redrawn below it; in a
    // log each update is a line of its own anyway.
    if (tty) {
      bar.Message("batch: " + line);
      bar.Update(static_cast<int64_t>(index + 1), "", true);
    } else {
      bar.Update(static_cast<int64_t>(index + 1), line, true);
    }
  };
  WarnWhenShippedModelMissing(tune.kernel, tune.use_model, tune.model_dir);
  const BatchReport report = RunBatch(request, progress);
  bar.Finish();
  open_summary();  // an empty shard still gets its header
  if (summary.is_open() && !summary.flush())
    throw InternalError("cannot write the summary file " + o.summary);

  if (o.json) {
    nlohmann::json out = report.ToJson();
    out["kernel"] = KernelKey(tune.kernel, tune.expression);
    out["tuned_order"] = tune.tuned_order;
    out["database"] = tune.db_path;
    out["shard"] = {{"index", request.shard.index}, {"count", request.shard.count}};
    std::cout << out.dump(2) << "\n";
  } else {
    PrintReport(report);
  }
  context.exit_code = report.ExitCode();
}

}  // namespace

void RegisterBatch(CLI::App& app, Context& context) {
  auto o = std::make_shared<BatchOptions>();
  CLI::App* sub = app.add_subcommand(
      "batch",
      "Tune many matrices into one database: files, folders, or SuiteSparse's catalogue under a "
      "root. Resumable: a matrix whose winner is stored counts as done. A failing matrix is "
      "reported and the batch goes on; exit code 0 when all succeeded, 2 after bad input, 3 "
      "after an internal failure or a matrix left busy");
  sub->footer(
      "Shards: --shard I/N runs the I-th of N disjoint parts, so that N processes (or machines) "
      "share the batch. Every process computes the same assignment: the matrices are taken "
      "largest first by estimated cost (the catalogue's nnz, or the file size for plain files) "
      "and each goes to the shard with the least total cost so far (ties to the lower index). "
      "Shards may write one database at once, or their own ones, joined later with "
      "`sparsetune db merge OUT IN...`.\n\n"
      "Catalogue layouts under --root: Group/Name/Name.mtx, Group/Name.mtx, Group/Name.mtx.gz, "
      "Group/Name.tar.gz, Name.mtx, Name.mtx.gz. Entries without a file are reported as "
      "missing and do not change the exit code.");
  sub->add_option("PATH", o->paths, "Matrix or tensor files, or folders searched recursively");
  sub->add_option("--catalog", o->catalog, "SuiteSparse catalogue (ssstats.csv)");
  sub->add_option("--root", o->root, "With --catalog: the folder holding the collection's files");
  sub->add_option("--group", o->group, "With --catalog: only this group");
  sub->add_option("--kind", o->kind, "With --catalog: only kinds containing this text");
  sub->add_option("--max-nnz", o->max_nnz, "With --catalog: only matrices with at most N nonzeros")
      ->check(CLI::NonNegativeNumber);
  AddKernelOptions(sub, o->kernel);
  AddDatabaseOption(sub, o->db);
  sub->add_option("--shard", o->shard, "Run only shard I of N (I/N, 0 <= I < N); see below");
  sub->add_option("--summary", o->summary,
                  "Write one CSV row per matrix (name, path, status, nnz, winner_ms, "
                  "fixed_csr_ms, speedup, tune_ms, message) as each finishes");
  AddSearchBudgetOptions(sub, o->budget);
  sub->add_option_function<int>(
      "--samples",
      [o](const int& n) {
        o->samples = n;
        *o->samples_given = true;
      },
      "Sampled SuperSchedules to measure per matrix (as in tune)");
  sub->add_option("--model", o->model,
                  "The cost model's folder (default: this machine's model from `sparsetune "
                  "calibrate`, else the shipped models/<kernel>, when present)");
  sub->add_flag("--no-model", o->no_model, "Do not use a cost model (sampled candidates instead)");
  sub->add_option("--max-ms", o->max_ms,
                  "A candidate whose run takes longer (and longer than 20 x FixedCSR) is dropped")
      ->check(PositiveMilliseconds())
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Sampling seed")->capture_default_str();
  AddOrderingsOption(sub, o->orderings);
  AddCallsOption(sub, o->calls);
  AddTunedOrderOption(sub, o->tuned_order);
  AddOnBusyOption(sub, o->on_busy, "waits --busy-wait and tunes the matrix again");
  sub->add_option("--busy-retries", o->busy_retries,
                  "With --on-busy fail: how many times a matrix whose times stayed disturbed is "
                  "tuned again; after that it is reported busy, stores nothing, and a rerun "
                  "tunes it")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  sub->add_option("--busy-wait", o->busy_wait_s,
                  "Seconds to wait before tuning a busy matrix again")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  sub->add_flag("--json", o->json, "One JSON object on stdout, the summary rows under matrices");
  sub->callback([o, &context] { RunBatchCommand(*o, context); });
}

}  // namespace sparsetune::cli
