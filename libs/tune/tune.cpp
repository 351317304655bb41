#include "tune/tune.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "base/errors.hpp"
#include "base/paths.hpp"
#include "collect/candidates.hpp"
#include "costmodel/cost_model.hpp"
#include "costmodel/model_files.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "heuristic/scorch.hpp"
#include "io/read.hpp"
#include "jit/jit.hpp"
#include "measure/contest.hpp"
#include "measure/runner.hpp"
#include "ordering/ordering.hpp"
#include "search/schedule_index.hpp"
#include "superschedule/waco_template.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/stats.hpp"
#include "tune/candidates.hpp"
#include "tune/emit.hpp"

namespace sparsetune {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::map<std::string, int64_t> DenseKey(const Expression& e,
                                        const std::map<std::string, int64_t>& sizes) {
  std::map<std::string, int64_t> dense;
  for (const auto& index : e.DenseOnlyIndices()) dense[index] = sizes.at(index);
  return dense;
}

// Two timings of identical code (FixedCSR measured twice) that differ by more than this share
// and by kTwinExcessMs say the machine was busy, whatever the probe saw.
constexpr double kTwinNoiseLimit = 0.5;
constexpr double kTwinExcessMs = 0.02;

// Why a contest's times cannot pick a winner, or "": a group's timing still disturbed, or the
// FixedCSR twins (the first and the last schedule) far apart.
std::string DisturbanceOf(const std::vector<RunResult>& results) {
  for (const RunResult& r : results) {
    if (r.ok() && r.time.disturbed) return r.time.disturbance;
  }
  const RunResult& fixed = results.front();
  const RunResult& twin = results.back();
  if (results.size() > 1 && fixed.ok() && twin.ok()) {
    const double a = fixed.time.median_ms, b = twin.time.median_ms;
    if (std::fabs(a - b) > kTwinExcessMs && std::fabs(a - b) > kTwinNoiseLimit * std::min(a, b)) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "two timings of the same FixedCSR kernel differ: %.4g and %.4g ms", a, b);
      return text;
    }
  }
  return "";
}

// Calls after which the winner's per-call saving over FixedCSR pays for `cost_ms`.
int64_t BreakEven(double cost_ms, double winner_ms, double fixed_ms) {
  const double saving = fixed_ms - winner_ms;
  if (!(saving > 0)) return -1;
  return static_cast<int64_t>(std::ceil(std::max(0.0, cost_ms) / saving));
}

// The second round: the best `count` verified schedules of the first, each renumbered by every
// ordering that applies to this matrix, to be timed together with them.
std::vector<TuneCandidate> OrderedVariants(const std::vector<TuneCandidate>& candidates,
                                           const std::vector<RunResult>& results,
                                           const CooTensor& tensor,
                                           const std::vector<OrderingKind>& orderings,
                                           size_t count) {
  std::vector<OrderingKind> apply;
  for (OrderingKind kind : orderings) {
    if (kind == OrderingKind::kPartition && tensor.nnz() > kPartitionOrderingMaxNnz &&
        orderings == TuneRequest::DefaultOrderings())
      continue;
    if (OrderingRefusal(tensor, kind).empty()) apply.push_back(kind);
  }
  std::vector<size_t> ranked;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (results[c].ok() && candidates[c].schedule.ordering == OrderingKind::kNone)
      ranked.push_back(c);
  }
  std::sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    return results[a].time.median_ms < results[b].time.median_ms;
  });
  if (ranked.size() > count) ranked.resize(count);
  std::vector<TuneCandidate> out;
  if (apply.empty()) return out;
  for (size_t c : ranked) {
    AddDistinct(out, candidates[c]);
    for (OrderingKind kind : apply) {
      TuneCandidate variant = candidates[c];
      variant.schedule.ordering = kind;
      variant.source += std::string("+") + OrderingName(kind);
      AddDistinct(out, std::move(variant));
    }
  }
  return out;
}

}  // namespace

BusyPolicy ParseBusyPolicy(const std::string& text, const std::string& what) {
  if (text == "fail") return BusyPolicy::kFail;
  if (text == "store") return BusyPolicy::kStore;
  if (text == "ignore") return BusyPolicy::kIgnore;
  throw InputError(what + ": expected \"fail\", \"store\" or \"ignore\", not \"" +
                   text.substr(0, 40) + "\"");
}

BusyPolicy BusyPolicyFromEnvironment() {
  const char* value = std::getenv("SPARSETUNE_ON_BUSY");
  if (!value || !*value) return BusyPolicy::kFail;
  return ParseBusyPolicy(value, "SPARSETUNE_ON_BUSY");
}

std::string KernelKey(const std::string& kernel, const Expression& expression) {
  return kernel.empty() ? "expr:" + expression.text : kernel;
}

nlohmann::json TuneReport::ToJson() const {
  nlohmann::json out;
  out["kernel"] = kernel;
  out["expression"] = expression;
  out["fingerprint"] = fingerprint;
  out["from_db"] = from_db;
  out["winner"] = {{"schedule", nlohmann::json::parse(winner_json)},
                   {"time_ms", winner_ms},
                   {"source", winner_source}};
  out["fixed_csr_ms"] = fixed_csr_ms;
  out["speedup_vs_fixed_csr"] = speedup_vs_fixed_csr();
  out["pack_ms"] = pack_ms;
  out["ordering_ms"] = ordering_ms;
  out["fixed_csr_pack_ms"] = fixed_csr_pack_ms;
  out["break_even_calls"] = break_even_calls;
  out["noise"] = noise;
  out["disturbed"] = disturbed;
  out["disturbance"] = disturbance;
  out["measure_attempts"] = measure_attempts;
  out["tune_ms"] = tune_ms;
  out["stage_ms"] = stage_ms;
  out["sources"] = sources_used;
  out["model_evaluations"] = model_evaluations;
  out["candidates"] = nlohmann::json::array();
  for (const auto& c : candidates) {
    nlohmann::json j = {{"schedule", nlohmann::json::parse(c.schedule_json)},
                        {"source", c.source},
                        {"status", c.status}};
    if (c.status == "ok") {
      j["time_ms"] = c.time_ms;
      j["pack_ms"] = c.pack_ms;
      if (c.ordering_ms > 0) j["ordering_ms"] = c.ordering_ms;
    } else {
      j["time_ms"] = nullptr;
      j["message"] = c.message;
    }
    out["candidates"].push_back(j);
  }
  if (!emitted_files.empty()) out["emitted"] = emitted_files;
  return out;
}

nlohmann::json QueryAnswer::ToJson() const {
  nlohmann::json out;
  out["hit"] = hit;
  out["fingerprint"] = fingerprint;
  out["kernel"] = kernel;
  if (hit) {
    out["winner"] = {{"schedule", nlohmann::json::parse(winner_json)}, {"time_ms", winner_ms}};
    out["fixed_csr_ms"] = fixed_csr_ms ? nlohmann::json(*fixed_csr_ms) : nlohmann::json();
    out["updated_at"] = updated_at;
  } else if (!fallback.empty()) {
    out["winner"] = {{"schedule", nlohmann::json::parse(winner_json)}, {"time_ms", nullptr}};
    out["fallback"] = fallback;
    out["fallback_basis"] = heuristic_basis;
    out["fallback_us"] = heuristic_us;
  } else {
    out["winner"] = nullptr;
  }
  return out;
}

TuneReport Tune(const TuneRequest& request, const TuneProgress& progress) {
  const auto start = Clock::now();
  auto stage = [&](const std::string& name) {
    if (progress.stage) progress.stage(name);
  };
  TuneReport report;
  const Expression& e = request.expression;
  report.kernel = KernelKey(request.kernel, e);
  report.expression = e.text;

  // Everything that can be wrong with the input is found before anything is stored.
  if (!request.emit_dir.empty()) PrepareEmitDirectory(request.emit_dir);
  stage("reading");
  auto t = Clock::now();
  const CooTensor tensor = ReadTensorFile(request.path);
  const std::map<std::string, int64_t> sizes = ResolveIndexSizes(e, tensor.dims, request.dense);
  try {
    CheckRunFitsInMemory(e, tensor, sizes, request.dtype);
  } catch (const InputError& error) {
    throw InputError(request.path, 0, error.cause());
  }
  report.fingerprint = PatternFingerprint(tensor);
  report.stage_ms["read"] = MsSince(t);
  const std::string& kernel = request.kernel;
  const bool has_template = !kernel.empty() && WacoTemplate::ForKernel(kernel) != nullptr;
  // The cost model: the shipped models/<kernel> when it is there (skipped when absent), or the
  // folder named, which must load. Its files are checked before anything is stored.
  std::string model_dir;
  if (!request.model_dir.empty() && !has_template)
    throw InputError(request.model_dir, 0,
                     "cost models rank SuperSchedules of spmv, spmm, sddmm and mttkrp; " +
                         report.kernel + " has none");
  if (has_template && request.use_model) {
    model_dir = request.model_dir.empty()
                    ? (std::filesystem::path(DefaultModelsDirectory()) / kernel).string()
                    : request.model_dir;
    if (request.model_dir.empty() &&
        !std::filesystem::exists(std::filesystem::path(model_dir) / kModelManifest))
      model_dir.clear();
    if (!model_dir.empty()) ReadModelManifest(model_dir, kernel);
  }
  auto db = Database::Open(request.db_path, OpenMode::kReadWrite);
  Jit jit;
  TuningKey key;
  key.fingerprint = report.fingerprint;
  key.kernel = report.kernel;
  key.machine_id = db->UpsertMachine(DetectMachine(jit.compiler(), Jit::Flags()));
  key.dense = DenseKey(e, sizes);
  key.dtype = request.dtype;

  if (!request.force) {
    if (auto winner = db->FindWinner(key)) {
      report.from_db = true;
      report.winner_json = winner->schedule.canonical_json;
      report.winner_ms = winner->time_ms;
      report.fixed_csr_ms = winner->fixed_csr_ms.value_or(0);
      for (const MeasurementRow& row : db->TopK(key, 1000)) {
        if (row.schedule.canonical_json == report.winner_json) {
          report.pack_ms = row.pack_ms;
          report.winner_source = row.source;
        }
        report.candidates.push_back(
            {row.schedule.canonical_json, row.source, "ok", "", row.median_ms, row.pack_ms});
      }
      report.break_even_calls = BreakEven(report.pack_ms, report.winner_ms, report.fixed_csr_ms);
      if (!request.emit_dir.empty()) {
        report.emitted_files =
            EmitKernel(request.emit_dir, request.kernel, e, sizes, request.dtype,
                       ParseScheduleText(report.winner_json, "stored winner"), &tensor);
      }
      report.tune_ms = MsSince(start);
      return report;
    }
  }

  stage("candidates");
  t = Clock::now();
  std::vector<TuneCandidate> candidates;
  AddDistinct(candidates, {FixedCsrSchedule(e), "", "fixed_csr"});
  report.sources_used.push_back("fixed_csr");
  // The pattern statistics feed Scorch's heuristic and SparseAuto here and are stored with
  // the matrix below.
  const PatternStats stats = ComputePatternStats(tensor);
  {
    HeuristicInput input;
    input.sizes = sizes;
    input.prefix_nnz = stats.prefix_nnz;
    AddDistinct(candidates, {ScorchSchedule(e, input).schedule, "", "scorch"});
    report.sources_used.push_back("scorch");
  }
  auto grouped = GroupCooCandidates(kernel, e, sizes, tensor.nnz());
  if (!grouped.empty()) report.sources_used.push_back("groupcoo");
  for (auto& c : grouped) AddDistinct(candidates, std::move(c));
  bool model_used = false;
  if (!model_dir.empty()) {
    stage("searching");
    const auto model_start = Clock::now();
    auto model = LoadCostModel(model_dir, kernel);
    SearchOptions search;
    search.ef = request.search_ef;
    auto index = ScheduleIndex::Open(*model, CacheDirectory() + "/search", search);
    report.stage_ms["model_load"] = MsSince(model_start);
    const auto embed_start = Clock::now();
    const std::vector<float> embedding = model->EmbedMatrix(tensor);
    report.stage_ms["model_embed"] = MsSince(embed_start);
    auto waco = WacoTemplate::ForKernel(kernel);
    const auto& set = model->schedule_set();
    const auto search_start = Clock::now();
    const auto ranked = index->Search(
        embedding, request.top_k,
        [&](size_t s) { return waco->CheckMember(set[s], sizes).empty(); },
        &report.model_evaluations);
    report.stage_ms["model_search"] = MsSince(search_start);
    for (const auto& r : ranked)
      AddDistinct(candidates, {waco->ToSchedule(set[r.index]), "", "model"});
    report.sources_used.push_back("model");
    report.stage_ms["model"] = MsSince(model_start);
    model_used = true;
  }
  auto heuristic = HeuristicCandidates(kernel, e, sizes, DTypeSize(request.dtype));
  if (!heuristic.empty()) report.sources_used.push_back("heuristic");
  for (auto& c : heuristic) AddDistinct(candidates, std::move(c));
  if (!has_template) {
    try {
      auto fused = SparseAutoCandidates(e, tensor.dims, stats.prefix_nnz, key.dense,
                                        request.sparseauto_limit);
      if (!fused.empty()) report.sources_used.push_back("sparseauto");
      for (auto& c : fused) AddDistinct(candidates, std::move(c));
    } catch (const InputError&) {
      // SparseAuto has nothing to say about this expression; the others still run.
    }
  }
  const int samples = request.samples >= 0 ? request.samples : model_used ? 0 : 16;
  if (samples > 0 && (has_template || request.sample_generic)) {
    CandidateOptions options;
    options.samples = samples;
    options.seed = request.seed;
    const auto sampled = SampleCandidates(kernel.empty() ? report.kernel : kernel, e, sizes,
                                          report.fingerprint, options);
    for (const auto& c : sampled) {
      if (c.source == "sampled") AddDistinct(candidates, {c.schedule, "", "sampled"});
    }
    report.sources_used.push_back("sampled");
  }
  report.stage_ms["candidates"] = MsSince(t);

  // FixedCSR twice: two timings of identical code show the run's noise.
  std::vector<Schedule> schedules;
  for (const auto& c : candidates) schedules.push_back(c.schedule);
  schedules.push_back(candidates[0].schedule);

  stage("measuring");
  t = Clock::now();
  KernelRunner runner(e, tensor, sizes, request.dtype, jit);
  ContestOptions contest;
  contest.run.timing.warmup_runs = 2;
  contest.run.timing.warmup_ms = 20;
  contest.run.timing.min_reps = 10;
  contest.run.timing.min_total_ms = 100;
  // Candidates 3x behind the best (SDDMM samples run seconds where the best runs 20 ms) are
  // not timed to the full count: their medians are rough, and they were never going to win.
  contest.run.timing.drop_slower_than = 3;
  {
    // FixedCSR's first run scales the limit: large operands are allowed longer runs.
    RunOptions probe;
    const PreparedKernel fixed = runner.Prepare(candidates[0].schedule, probe);
    contest.run.timing.max_ms_per_run = std::max(request.max_ms, 20 * fixed.result().verify_run_ms);
  }
  contest.seed = request.seed;
  if (request.on_busy == BusyPolicy::kIgnore) contest.run.timing.disturbance_retries = 0;
  ContestObserver observer;
  observer.after_step = progress.step;
  std::vector<RunResult> results = MeasureTogether(runner, schedules, jit, contest, observer);
  // A winner from disturbed measurements is no winner: each group was already timed again
  // while it looked disturbed (TimingOptions::disturbance_retries); if the times still were,
  // or the two timings of identical FixedCSR code disagree, everything is measured once more.
  std::string disturbance = DisturbanceOf(results);
  if (!disturbance.empty() && request.on_busy != BusyPolicy::kIgnore) {
    stage("measuring again (" + disturbance + ")");
    results = MeasureTogether(runner, schedules, jit, contest, observer);
    report.measure_attempts = 2;
    disturbance = DisturbanceOf(results);
  }
  report.stage_ms["measure"] = MsSince(t);
  if (!disturbance.empty()) {
    report.disturbed = true;
    report.disturbance = disturbance;
    if (request.on_busy == BusyPolicy::kFail)
      throw MachineBusyError("the machine was busy while measuring " + request.path + " (" +
                             disturbance + ", after measuring " +
                             std::to_string(report.measure_attempts) +
                             " times): nothing was stored; tune again on a quiet machine, or "
                             "store it anyway with --on-busy store");
  }
  // Round two: orderings of the best schedules, timed together with them. Its times replace
  // the first round's for the schedules it measures again, so the winner is chosen among
  // times taken side by side.
  const std::vector<TuneCandidate> ordered =
      tensor.order() == 2 ? OrderedVariants(candidates, results, tensor, request.orderings, 2)
                          : std::vector<TuneCandidate>{};
  if (ordered.size() > 1) {
    stage("ordering");
    t = Clock::now();
    std::vector<Schedule> second;
    for (const auto& c : ordered) second.push_back(c.schedule);
    const std::vector<RunResult> again = MeasureTogether(runner, second, jit, contest, observer);
    for (size_t o = 0; o < ordered.size(); ++o) {
      auto same = std::find_if(candidates.begin(), candidates.end(),
                               [&](const TuneCandidate& c) { return c.json == ordered[o].json; });
      if (same != candidates.end()) {
        results[same - candidates.begin()] = again[o];
      } else {
        candidates.push_back(ordered[o]);
        results.insert(results.end() - 1, again[o]);  // the FixedCSR repeat stays last
      }
    }
    report.stage_ms["ordering"] = MsSince(t);
  }

  stage("storing");
  MatrixRecord matrix;
  matrix.fingerprint = report.fingerprint;
  matrix.name = std::filesystem::path(request.path).stem().string();
  matrix.dims = tensor.dims;
  matrix.nnz = tensor.nnz();
  matrix.stats = PatternStatsToJson(stats);
  matrix.source_path = request.path;
  db->UpsertMatrix(matrix);
  int best = -1;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const RunResult& r = results[c];
    TuneCandidateResult out;
    out.schedule_json = candidates[c].json;
    out.source = candidates[c].source;
    out.status = RunStatusName(r.status);
    out.message = r.message;
    if (r.ok()) {
      out.time_ms = r.time.median_ms;
      out.pack_ms = r.pack_ms + r.ordering_ms;
      out.ordering_ms = r.ordering_ms;
      MeasurementRecord record;
      record.key = key;
      record.expression = e.text;
      record.schedule_json = candidates[c].json;
      record.median_ms = r.time.median_ms;
      record.min_ms = r.time.min_ms;
      record.max_ms = r.time.max_ms;
      record.reps = r.time.reps;
      // Preparing the operand: renumbering (when ordered) and packing.
      record.pack_ms = r.pack_ms + r.ordering_ms;
      record.compile_ms = r.compile_ms;
      record.verified = r.verified;
      record.source = candidates[c].source;
      db->RecordMeasurement(record);
      if (best < 0 || r.time.median_ms < results[best].time.median_ms) best = static_cast<int>(c);
    } else {
      FailureRecord failure;
      failure.key = key;
      failure.expression = e.text;
      failure.schedule_json = candidates[c].json;
      failure.reason = out.status + ": " + r.message;
      db->RecordFailure(failure);
    }
    report.candidates.push_back(out);
  }
  if (!results[0].ok() && results[0].status == RunStatus::kWrongResult) {
    throw InternalError("FixedCSR gave a wrong result on " + request.path + ": " +
                        results[0].message);
  }
  if (best < 0) throw InternalError("no candidate verified on " + request.path);
  const RunResult& fixed = results[0];
  const RunResult& repeat = results.back();
  report.fixed_csr_ms = fixed.ok() ? fixed.time.median_ms : 0;
  report.fixed_csr_pack_ms = fixed.pack_ms;
  if (fixed.ok() && repeat.ok())
    report.noise = std::fabs(fixed.time.median_ms - repeat.time.median_ms) /
                   std::min(fixed.time.median_ms, repeat.time.median_ms);
  report.winner_json = candidates[best].json;
  report.winner_source = candidates[best].source;
  report.winner_ms = results[best].time.median_ms;
  report.pack_ms = results[best].pack_ms + results[best].ordering_ms;
  report.ordering_ms = results[best].ordering_ms;
  report.break_even_calls = BreakEven(report.pack_ms, report.winner_ms, report.fixed_csr_ms);
  const int64_t schedule_id = db->UpsertSchedule(report.kernel, e.text, report.winner_json);
  db->SetWinner(key, schedule_id, report.winner_ms,
                fixed.ok() ? std::optional<double>(report.fixed_csr_ms) : std::nullopt);
  if (!request.emit_dir.empty()) {
    stage("emitting");
    report.emitted_files = EmitKernel(request.emit_dir, request.kernel, e, sizes, request.dtype,
                                      candidates[best].schedule, &tensor);
  }
  report.tune_ms = MsSince(start);
  return report;
}

namespace {

// Scorch's heuristic for a pattern the database has not seen: the file's measured levels when
// it was given, else the database's statistics of the fingerprint, else shapes and priors.
void AnswerWithHeuristic(const QueryRequest& request, const CooTensor* tensor, Database* db,
                         QueryAnswer& answer) {
  HeuristicInput input;
  input.sizes = request.dense;
  if (tensor) {
    input.sizes = ResolveIndexSizes(request.expression, tensor->dims, request.dense);
    input.prefix_nnz = ComputePatternStats(*tensor, StatsDetail::kLinear).prefix_nnz;
    answer.heuristic_basis = "the file's pattern";
  } else if (auto matrix = db ? db->FindMatrix(answer.fingerprint) : std::nullopt) {
    const auto& modes = request.expression.sparse_input().indices;
    if (matrix->dims.size() == modes.size()) {
      for (size_t m = 0; m < modes.size(); ++m) input.sizes[modes[m]] = matrix->dims[m];
      if (matrix->stats.contains("prefix_nnz"))
        input.prefix_nnz = matrix->stats["prefix_nnz"].get<std::vector<int64_t>>();
      answer.heuristic_basis = "the stored pattern statistics";
    }
  }
  if (answer.heuristic_basis.empty()) answer.heuristic_basis = "shapes and priors only";
  const HeuristicResult h = ScorchSchedule(request.expression, input);
  answer.fallback = "heuristic";
  answer.winner_json = h.schedule.CanonicalJson();
  answer.heuristic_us = h.microseconds;
}

}  // namespace

QueryAnswer Query(const QueryRequest& request) {
  QueryAnswer answer;
  answer.kernel = KernelKey(request.kernel, request.expression);
  std::map<std::string, int64_t> dense = request.dense;
  std::unique_ptr<CooTensor> tensor;
  if (!request.path.empty()) {
    tensor = std::make_unique<CooTensor>(ReadTensorFile(request.path));
    answer.fingerprint = PatternFingerprint(*tensor);
    dense = DenseKey(request.expression,
                     ResolveIndexSizes(request.expression, tensor->dims, request.dense));
  } else {
    answer.fingerprint = request.fingerprint;
    std::map<std::string, int64_t> key_dense;
    for (const auto& index : request.expression.DenseOnlyIndices()) {
      auto it = dense.find(index);
      if (it == dense.end())
        throw InputError("no size for dense index " + index + " (give --dense " + index + "=N)");
      key_dense[index] = it->second;
    }
    dense = key_dense;
  }
  std::unique_ptr<Database> db;
  if (std::filesystem::exists(request.db_path))
    db = Database::Open(request.db_path, OpenMode::kReadOnly);
  // The machine row as tune wrote it (compiler and flags included): times belong to it.
  const auto machine =
      db ? db->FindMachine(DetectMachine(Jit::DefaultCompiler(), Jit::Flags())) : std::nullopt;
  if (machine) {
    TuningKey key;
    key.fingerprint = answer.fingerprint;
    key.kernel = answer.kernel;
    key.machine_id = *machine;
    key.dense = dense;
    key.dtype = request.dtype;
    if (auto winner = db->FindWinner(key)) {
      answer.hit = true;
      answer.winner_json = winner->schedule.canonical_json;
      answer.winner_ms = winner->time_ms;
      answer.fixed_csr_ms = winner->fixed_csr_ms;
      answer.updated_at = winner->updated_at;
      return answer;
    }
  }
  if (request.fallback_heuristic) AnswerWithHeuristic(request, tensor.get(), db.get(), answer);
  return answer;
}

}  // namespace sparsetune
