// sparsetune tune and query: the main job, and the database-only answer build scripts use.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/progress.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "emit/emit.hpp"
#include "io/read.hpp"
#include "ir/schedule.hpp"
#include "tune/query.hpp"
#include "tune/tune.hpp"

namespace sparsetune::cli {

namespace {

struct TuneOptions {
  std::vector<OrderingKind> orderings = TuneRequest::DefaultOrderings();
  std::string file;
  KernelOptions kernel;
  std::string db;
  SearchBudget budget;
  int search_ef = 100;
  int samples = -1;
  std::string model;
  bool no_model = false;
  std::shared_ptr<bool> samples_given = std::make_shared<bool>(false);
  double max_ms = 1000;
  bool force = false;
  int64_t calls = 0;
  bool tuned_order = false;
  uint64_t seed = 1;
  std::string emit;
  std::string on_busy;
  bool json = false;
  bool explain = false;
};

// The candidates' outcomes, those that did not count apart by why: "24 candidates: 19 verified
// and timed, 4 formats the packer refused (padding over its cap), 1 too slow (over --max-ms)".
std::string CandidateCounts(const TuneReport& r) {
  std::map<std::string, int> by_status;
  for (const auto& c : r.candidates) ++by_status[c.status];
  std::string out = std::to_string(r.candidates.size()) +
                    " candidates: " + std::to_string(by_status["ok"]) + " verified and timed";
  struct Reason {
    const char* status;
    const char* one;
    const char* many;
  };
  const Reason reasons[] = {
      {"format_refused", "format the packer refused (padding over its cap)",
       "formats the packer refused (padding over its cap)"},
      {"invalid_schedule", "schedule lowering rejected", "schedules lowering rejected"},
      {"wrong_result", "failed verification", "failed verification"},
      {"timed_out", "too slow (over --max-ms)", "too slow (over --max-ms)"},
  };
  for (const Reason& reason : reasons) {
    const int n = by_status[reason.status];
    if (n > 0) out += ", " + std::to_string(n) + " " + (n == 1 ? reason.one : reason.many);
  }
  return out;
}

void PrintLegend() {
  std::printf(
      "\nHow to read this report:\n"
      "  winner      LOOPS | LEVELS SPLITS | PARALLEL [| EXTRAS]  [SOURCE]\n"
      "              LOOPS: the loop order, outermost first; i1,i0 are index i split in two\n"
      "              (i1 = i / s, i0 = i %% s); <t; P ; C> is a fused where node whose producer P\n"
      "              fills the dense temporary t that its consumer C reads\n"
      "              LEVELS: the sparse operand's storage, outer to inner: U a dense range, C\n"
      "              compressed (positions and coordinates, as CSR's columns), S sliced across "
      "the\n"
      "              lanes of the U level below (SELL), G<n> compressed in groups of n (GroupCOO)\n"
      "              SPLITS: i/4 splits index i by 4\n"
      "              PARALLEL: par i chunk 32: OpenMP threads share loop i in dynamic chunks of "
      "32\n"
      "              iterations (balanced: one range per thread with equal nonzeros); threads N:\n"
      "              N threads (absent: all); serial: one thread\n"
      "              EXTRAS: unroll N (N independent partial sums), prefetch N (rows N nonzeros\n"
      "              ahead), ordered rcm|degree|partition|community (rows and columns renumbered\n"
      "              before packing) or row-degree (rows only), narrow (8- or 16-bit\n"
      "              coordinates), C transposed (a dense operand read through a transposed copy)\n"
      "              SOURCE: where the candidate came from: fixed_csr (TACO's default CSR),\n"
      "              scorch (Scorch's heuristic), heuristic (rule-based), groupcoo (Insum),\n"
      "              model (the cost model's search), sampled (WACO's template), sparseauto "
      "(fused\n"
      "              kernels); +rcm etc.: the same schedule with an ordering, timed in the final\n"
      "              round\n"
      "  time        median time per call of the winner and of FixedCSR, timed side by side in\n"
      "              this run; speedup = FixedCSR's time / the winner's. The winner is the\n"
      "              fastest of the final round: the first round's three best and any others\n"
      "              within 10%% of its fastest (six at most), timed again together in three\n"
      "              contests, each counting its median one; those within 5%% of the fastest\n"
      "              then in four more, each counting its median of seven\n"
      "  pack        converting the matrix into the winner's format (and renumbering it); it pays\n"
      "              for itself after N calls of the per-call saving over FixedCSR\n"
      "  order       with --tuned-order: every candidate was called as an iterative method\n"
      "              calls the emitted _compute_tuned_order, its vectors converted once, and\n"
      "              the winner is stored apart from the one for the caller's order\n"
      "  calls       with --calls N: the winner is the one of least preparation plus N calls\n"
      "              (each finalist's preparation timed on fresh memory), stored apart from\n"
      "              the winner per call; FixedCSR's figure is its packing plus N calls\n"
      "  model       shown when the cost model is this machine's (sparsetune calibrate)\n"
      "  candidates  every candidate was packed, compiled, checked against the reference and\n"
      "              timed; those the packer refused (padding over 20 x nnz), lowering rejected,\n"
      "              that failed verification or ran too long are counted apart\n"
      "  noise       the relative difference of two timings of identical FixedCSR code in this\n"
      "              run: a speedup within it may be noise. Candidates are timed in groups one\n"
      "              after another, FixedCSR in every group; when the machine's speed drifted\n"
      "              between groups, each group's times were scaled by FixedCSR's; the\n"
      "              candidates the final round did not time again, by how far the finalists'\n"
      "              times moved between the rounds. The largest correction is shown\n"
      "  machine     quiet, or disturbed: other processes held the cores, or the threads moved\n"
      "              between cores that share a cache and cores that do not, while measuring\n");
}

void PrintReport(const TuneReport& r, bool explain) {
  const Schedule winner = ParseScheduleText(r.winner_json, "winner");
  std::printf("%s  %s  fingerprint %s%s\n", r.kernel.c_str(), r.expression.c_str(),
              r.fingerprint.c_str(), r.from_db ? "  (from the database)" : "");
  std::printf("  winner      %s  [%s]\n", winner.Summary().c_str(), r.winner_source.c_str());
  std::printf("  time        %s   FixedCSR %s   speedup %.2fx\n", FormatMs(r.winner_ms).c_str(),
              FormatMs(r.fixed_csr_ms).c_str(), r.speedup_vs_fixed_csr());
  // Two timings of identical code differed by `noise`: a gain no larger than that is not
  // shown to be one.
  const double gain = r.speedup_vs_fixed_csr() - 1;
  if (!r.from_db && r.winner_source != "fixed_csr" && r.noise > 0 && r.fixed_csr_ms > 0 &&
      gain <= r.noise) {
    std::printf(
        "  warning     the speedup is within the measured noise (%.1f%%): the winner may be no "
        "faster than FixedCSR; tune again with --force on a quieter machine\n",
        100 * r.noise);
  }
  const std::string ordering = r.ordering_ms > 0
                                   ? " (ordering " + FormatMs(r.ordering_ms) + ", packing " +
                                         FormatMs(r.pack_ms - r.ordering_ms) + ")"
                                   : "";
  if (r.break_even_calls >= 0) {
    std::printf("  pack        %s%s   pays for itself after %lld %s\n", FormatMs(r.pack_ms).c_str(),
                ordering.c_str(), (long long)r.break_even_calls,
                r.break_even_calls == 1 ? "call" : "calls");
  } else {
    std::printf("  pack        %s%s\n", FormatMs(r.pack_ms).c_str(), ordering.c_str());
  }
  if (r.tuned_order)
    std::printf(
        "  order       timed in the tuned order: vectors converted once, no permutation a call "
        "(_compute_tuned_order)\n");
  if (r.calls > 0)
    std::printf(
        "  calls       chosen for %lld %s on one prepared operand: %s with preparation "
        "(FixedCSR %s)\n",
        (long long)r.calls, r.calls == 1 ? "call" : "calls", FormatMs(r.end_to_end_ms()).c_str(),
        FormatMs(r.fixed_csr_end_to_end_ms()).c_str());
  if (!r.from_db && r.model_calibrated)
    std::printf("  model       calibrated to this machine: %s\n", r.model_dir.c_str());
  if (!r.from_db && !r.model_skipped.empty())
    std::printf("  model       not consulted: %s\n", r.model_skipped.c_str());
  if (!r.from_db) {
    std::printf("  candidates  %s\n", CandidateCounts(r).c_str());
    std::printf("  noise       %.1f%% between two timings of identical FixedCSR code",
                100 * r.noise);
    if (r.drift_correction > 0)
      std::printf("; times scaled for drift by up to %.1f%%", 100 * r.drift_correction);
    std::printf("\n");
  }
  if (r.disturbed) {
    std::printf("  machine     disturbed: %s; stored anyway (--on-busy)\n", r.disturbance.c_str());
  } else if (!r.from_db) {
    std::printf("  machine     quiet%s\n", r.measure_attempts > 1 ? " after measuring again" : "");
  }
  // Where the threads ran decides between some close schedules; a later run may see the other.
  if (r.thread_round_trip_ns > 0)
    std::printf(
        "  threads     a cache line's round trip between two of them: %.0f ns; the slowest took "
        "%.2fx the fastest's time for the same work\n",
        r.thread_round_trip_ns, r.thread_skew);
  if (r.near_rounds > 0 && r.far_rounds > 0)
    std::printf(
        "  placement   the threads shared a last-level cache in %lld timing rounds and not in "
        "%lld: where a timing saw both, each time weighs the far one's by %.0f%%\n",
        static_cast<long long>(r.near_rounds), static_cast<long long>(r.far_rounds),
        100 * r.far_share);
  std::printf("  tune        %.2f s\n", r.tune_ms / 1000);
  for (const auto& path : r.emitted_files) std::printf("  emitted     %s\n", path.c_str());
  if (explain) {
    PrintLegend();
  } else if (!r.from_db) {
    std::printf("  (--explain: how to read this report)\n");
  }
}

void RunTune(const TuneOptions& o) {
  ResolvedKernel k = ResolveKernel(o.kernel);
  if (o.samples_given && *o.samples_given && (o.samples < 0 || o.samples > kMaxSamples))
    throw InputError("--samples must be from 0 to " + std::to_string(kMaxSamples));
  if (!o.model.empty() && o.no_model) throw InputError("--model and --no-model exclude each other");
  if (o.search_ef < 1 || o.search_ef > kMaxSearchEf)
    throw InputError("--search-ef must be from 1 to " + std::to_string(kMaxSearchEf));
  CheckSearchBudget(o.budget);
  TuneRequest request;
  request.path = o.file;
  request.kernel = k.name == "expr" ? "" : k.name;
  request.expression = k.expression;
  request.dense = k.dense_sizes;
  request.dtype = k.dtype;
  request.db_path = DatabasePathOrDefault(o.db);
  request.samples = o.samples;
  request.model_dir = o.model;
  request.use_model = !o.no_model;
  // An explicit --samples also samples kernels without a WACO template.
  request.sample_generic = o.samples_given && *o.samples_given;
  request.max_ms = o.max_ms;
  request.top_k = o.budget.top_k;
  request.refine = o.budget.refine;
  request.refine_steps = o.budget.refine_steps;
  request.leader_round = o.budget.leader_round;
  request.search_ef = o.search_ef;
  request.force = o.force;
  request.calls = o.calls;
  request.tuned_order = o.tuned_order;
  request.seed = o.seed;
  request.emit_dir = o.emit;
  request.orderings = o.orderings;
  if (!o.on_busy.empty()) request.on_busy = ParseBusyPolicy(o.on_busy, "--on-busy");
  ProgressBar bar("tune", 1, 2);
  std::string stage;
  int64_t measured = 0;  // a later stage keeps the count of measured candidates
  TuneProgress progress;
  progress.stage = [&](const std::string& s) {
    stage = s;
    bar.Update(measured, s, true);
  };
  progress.step = [&](size_t done, size_t total) {
    measured = static_cast<int64_t>(done);
    bar.SetTotal(static_cast<int64_t>(total));
    bar.Update(measured, stage);
  };
  WarnWhenShippedModelMissing(request.kernel, request.use_model, request.model_dir);
  const TuneReport report = Tune(request, progress);
  bar.Finish();
  for (const auto& w : report.input_warnings)
    std::fprintf(stderr, "sparsetune: warning: %s\n", w.c_str());
  if (!report.stored_winner_passed_over.empty())
    std::fprintf(stderr, "sparsetune tune: %s\n", report.stored_winner_passed_over.c_str());
  if (o.json) {
    std::cout << report.ToJson().dump(2) << "\n";
  } else {
    PrintReport(report, o.explain);
  }
}

struct QueryOptions {
  std::string file;
  std::string fingerprint;
  KernelOptions kernel;
  std::string db;
  int64_t calls = 0;
  bool tuned_order = false;
  std::string emit;
  std::string fallback;
  bool json = false;
};

void RunQuery(const QueryOptions& o, Context& context) {
  ResolvedKernel k = ResolveKernel(o.kernel);
  if (o.file.empty() == o.fingerprint.empty())
    throw InputError("give a matrix FILE or --fingerprint H");
  if (!o.emit.empty()) PrepareEmitDirectory(o.emit);
  QueryRequest request;
  request.path = o.file;
  request.fingerprint = o.fingerprint;
  request.kernel = k.name == "expr" ? "" : k.name;
  request.expression = k.expression;
  request.dense = k.dense_sizes;
  request.dtype = k.dtype;
  request.db_path = DatabasePathOrDefault(o.db);
  request.calls = o.calls;
  request.tuned_order = o.tuned_order;
  request.fallback_heuristic = o.fallback == "heuristic";
  const QueryAnswer answer = Query(request);
  if (!answer.answered()) {
    context.exit_code = 1;
    // The tune that stores what this query asks for: same file, kernel and database.
    const std::string tune_command =
        "sparsetune tune " + (o.file.empty() ? std::string("MATRIX_FILE") : ShellWord(o.file)) +
        KernelArguments(o.kernel) + (o.calls > 0 ? " --calls " + std::to_string(o.calls) : "") +
        (o.tuned_order ? " --tuned-order" : "") + (o.db.empty() ? "" : " --db " + ShellWord(o.db));
    if (!answer.passed_over.empty())
      std::fprintf(stderr, "sparsetune query: %s; tune it:\n  %s\n", answer.passed_over.c_str(),
                   tune_command.c_str());
    else
      std::fprintf(stderr,
                   "sparsetune query: no stored schedule for %s (%s) on this machine in %s; "
                   "tune it first:\n  %s\n",
                   answer.fingerprint.c_str(), answer.kernel.c_str(), request.db_path.c_str(),
                   tune_command.c_str());
    if (o.json) {
      nlohmann::json out = answer.ToJson();
      out["tune_command"] = tune_command;
      std::cout << out.dump(2) << "\n";
    }
    return;
  }
  const Schedule winner = ParseScheduleText(answer.winner_json, "winner");
  nlohmann::json out = answer.ToJson();
  if (!o.emit.empty()) {
    // The coordinate widths come from the operand: without the file, 32-bit ones.
    std::unique_ptr<CooTensor> pattern;
    std::map<std::string, int64_t> sizes = k.dense_sizes;
    if (!o.file.empty()) {
      pattern = std::make_unique<CooTensor>(ReadTensorFile(o.file));
      sizes = ResolveIndexSizes(k.expression, pattern->dims, k.dense_sizes);
    } else {
      for (const auto& index : k.expression.sparse_input().indices) sizes[index] = 1;
    }
    Schedule emitted = winner;
    if (!pattern) emitted.narrow_coordinates = false;
    out["emitted"] = EmitKernel(o.emit, request.kernel, k.expression, sizes, k.dtype, emitted,
                                pattern.get(), answer.calls, answer.tuned_order);
  }
  if (o.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::printf("%s\n", answer.winner_json.c_str());
  if (answer.hit) {
    const std::string for_calls = answer.calls > 0
                                      ? ", preparation " + FormatMs(answer.prepare_ms) +
                                            ", chosen for " + std::to_string(answer.calls) +
                                            (answer.calls == 1 ? " call" : " calls")
                                      : "";
    const std::string order = answer.tuned_order ? " in the tuned order" : "";
    std::fprintf(stderr, "sparsetune query: %s a call%s%s (%s)\n",
                 FormatMs(answer.winner_ms).c_str(), order.c_str(), for_calls.c_str(),
                 winner.Summary().c_str());
  } else {
    std::fprintf(stderr,
                 "sparsetune query: no stored schedule for %s (%s); answering with Scorch's "
                 "heuristic schedule from %s, not measured (%s)\n",
                 answer.fingerprint.c_str(), answer.kernel.c_str(), answer.heuristic_basis.c_str(),
                 winner.Summary().c_str());
  }
  if (out.contains("emitted")) {
    for (const auto& path : out["emitted"])
      std::fprintf(stderr, "  emitted %s\n", path.get<std::string>().c_str());
  }
}

}  // namespace

void RegisterTune(CLI::App& app, Context& context) {
  auto o = std::make_shared<TuneOptions>();
  CLI::App* sub = app.add_subcommand(
      "tune",
      "Find the fastest verified format and schedule for a matrix: candidates measured side by "
      "side, the winner stored in the database (a stored winner answers at once)");
  sub->add_option("FILE", o->file, "Sparse matrix or tensor file")->required();
  AddKernelOptions(sub, o->kernel);
  AddDatabaseOption(sub, o->db);
  AddSearchBudgetOptions(sub, o->budget);
  sub->add_option_function<int>(
      "--samples",
      [o](const int& n) {
        o->samples = n;
        *o->samples_given = true;
      },
      "Sampled SuperSchedules to measure as well, each format the packer refuses drawn again "
      "(default: none when a cost model ranks the candidates, else 16; kernels without a WACO "
      "template sample only when this is given)");
  sub->add_option("--model", o->model,
                  "The cost model's folder (default: this machine's model from `sparsetune "
                  "calibrate`, else the shipped models/<kernel>, when present)");
  sub->add_flag("--no-model", o->no_model, "Do not use a cost model (sampled candidates instead)");
  sub->add_option("--search-ef", o->search_ef,
                  "Candidates the search keeps while it walks the schedule graph (hnswlib's ef)")
      ->capture_default_str();
  sub->add_option("--max-ms", o->max_ms,
                  "A candidate whose run takes longer (and longer than 20 x FixedCSR) is dropped")
      ->check(PositiveMilliseconds())
      ->capture_default_str();
  AddOrderingsOption(sub, o->orderings);
  AddCallsOption(sub, o->calls);
  AddTunedOrderOption(sub, o->tuned_order);
  sub->add_flag("--force", o->force, "Measure again even when a winner is stored");
  sub->add_option("--seed", o->seed, "Sampling seed")->capture_default_str();
  sub->add_option("--emit", o->emit,
                  "Write the winner's standalone kernel (header, source, "
                  "schedule JSON) into this folder");
  AddOnBusyOption(sub, o->on_busy, "stores nothing (exit code 3)");
  sub->add_flag("--json", o->json, "One JSON object on stdout");
  sub->add_flag("--explain", o->explain, "Also say how to read the report");
  sub->callback([o, &context] { RunTune(*o); });
}

void RegisterQuery(CLI::App& app, Context& context) {
  auto o = std::make_shared<QueryOptions>();
  CLI::App* sub = app.add_subcommand(
      "query",
      "The stored winner for a matrix (or its fingerprint), from the database alone: no tuning, "
      "no compiler. Exit code 1 when none is stored");
  sub->add_option("FILE", o->file, "Sparse matrix or tensor file");
  sub->add_option("--fingerprint", o->fingerprint, "The pattern's fingerprint (sparsetune info)");
  AddKernelOptions(sub, o->kernel);
  AddDatabaseOption(sub, o->db);
  AddCallsOption(sub, o->calls);
  AddTunedOrderOption(sub, o->tuned_order);
  sub->add_option("--emit", o->emit, "Also write the winner's standalone kernel into this folder");
  sub->add_option("--fallback", o->fallback,
                  "On a miss, answer with this instead of exit code 1: \"heuristic\" is Scorch's "
                  "schedule (microseconds, not measured; the output says so)")
      ->check(CLI::IsMember({"heuristic"}));
  sub->add_flag("--json", o->json, "One JSON object on stdout");
  sub->callback([o, &context] { RunQuery(*o, context); });
}

}  // namespace sparsetune::cli
