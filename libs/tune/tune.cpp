#include "tune/tune.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "costmodel/model_files.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "emit/emit.hpp"
#include "io/read.hpp"
#include "ir/footprint.hpp"
#include "jit/jit.hpp"
#include "measure/contest.hpp"
#include "measure/timing.hpp"
#include "superschedule/waco_template.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/stats.hpp"
#include "tune/candidate_sources.hpp"
#include "tune/refinement.hpp"

namespace sparsetune {

namespace {

using Clock = std::chrono::steady_clock;

// Calls after which the winner's per-call saving over FixedCSR pays for `cost_ms`.
int64_t BreakEven(double cost_ms, double winner_ms, double fixed_ms) {
  const double saving = fixed_ms - winner_ms;
  if (!(saving > 0)) return -1;
  return static_cast<int64_t>(std::ceil(std::max(0.0, cost_ms) / saving));
}

// The operand of a tune, read and checked before anything is stored.
struct Operand {
  CooTensor tensor;
  std::map<std::string, int64_t> sizes;  // of every index
  std::string fingerprint;
};

// The stored winner's schedule, with the report filled from the database; none when no winner
// is stored.
std::optional<Schedule> ReportStoredWinner(Database& db, const TuningKey& key, bool uniform_values,
                                           TuneReport& report) {
  auto winner = db.FindWinner(key, report.calls);
  if (!winner) return std::nullopt;
  Schedule schedule = ParseScheduleText(winner->schedule.canonical_json, "stored winner");
  // Tuned on an operand of this pattern whose values were all equal, and stored under the
  // kernel's own key by a build before OneValueKernelKey: it cannot hold these.
  if (schedule.uniform_values && !uniform_values) {
    report.stored_winner_passed_over =
        "the stored winner keeps one value for every entry (it was tuned on an operand of this "
        "pattern whose values were all equal), and these values differ: tuned again";
    return std::nullopt;
  }
  report.from_db = true;
  report.winner_json = winner->schedule.canonical_json;
  report.winner_ms = winner->time_ms;
  report.fixed_csr_ms = winner->fixed_csr_ms.value_or(0);
  for (const MeasurementRow& row : db.TopK(key, 1000)) {
    if (row.schedule.canonical_json == report.winner_json) {
      report.pack_ms = row.pack_ms;
      report.winner_source = row.source;
    }
    if (row.source == "fixed_csr") report.fixed_csr_pack_ms = row.pack_ms;
    report.candidates.push_back(
        {row.schedule.canonical_json, row.source, "ok", "", row.median_ms, row.pack_ms});
  }
  // Chosen for a call count, by the preparation timed on fresh memory that was stored with it.
  if (report.calls > 0) report.pack_ms = winner->prepare_ms;
  report.break_even_calls = BreakEven(report.pack_ms, report.winner_ms, report.fixed_csr_ms);
  return schedule;
}

// The candidates of a tune, from its sources in the order their schedules are kept: FixedCSR
// first (the baseline), Scorch, GroupCOO, the library rules, the cost model's top k of the
// schedules not yet proposed, SparseAuto for kernels without a template, and sampled
// SuperSchedules without a model (or when asked).
GatheredCandidates GatherTuneCandidates(const TuneRequest& request, const Operand& operand,
                                        const PatternStats& stats, const std::string& model_dir,
                                        const TuneProgress& progress, TuneReport& report) {
  const bool has_template =
      !request.kernel.empty() && WacoTemplate::ForKernel(request.kernel) != nullptr;
  CandidateContext context;
  context.kernel = request.kernel;
  context.kernel_key = report.kernel;
  context.expression = &request.expression;
  context.sizes = operand.sizes;
  context.tensor = &operand.tensor;
  context.fingerprint = operand.fingerprint;
  context.prefix_nnz = stats.prefix_nnz;
  context.value_bytes = DTypeSize(request.dtype);
  std::vector<std::unique_ptr<CandidateSource>> owned;
  owned.push_back(FixedCsrSource());
  owned.push_back(ScorchSource());
  owned.push_back(GroupCooSource());
  owned.push_back(LibraryRuleSource());
  ModelTopKSource* model = nullptr;
  if (!model_dir.empty()) {
    report.model_top_k = request.top_k > 0 ? request.top_k : ModelTopK(model_dir);
    auto source =
        std::make_unique<ModelTopKSource>(model_dir, report.model_top_k, request.search_ef);
    model = source.get();
    owned.push_back(std::move(source));
  }
  if (!has_template) owned.push_back(SparseAutoSource(request.sparseauto_limit));
  SampleOptions sampling;
  // Without a model, random SuperSchedules stand in for its picks, unless the model was left
  // out because such schedules gain nothing.
  sampling.samples = request.samples >= 0                     ? request.samples
                     : model || !report.model_skipped.empty() ? 0
                                                              : 16;
  sampling.seed = request.seed;
  sampling.packable_only = true;
  if (sampling.samples > 0 && (has_template || request.sample_generic))
    owned.push_back(SampledSource(sampling));
  std::vector<CandidateSource*> sources;
  for (auto& source : owned) sources.push_back(source.get());
  GatheredCandidates gathered = GatherCandidates(sources, context, progress.stage);
  if (model) {
    for (const auto& [stage, ms] : model->stage_ms()) report.stage_ms[stage] = ms;
    report.model_evaluations = model->evaluations();
  }
  return gathered;
}

// Reports every result and the winner, and stores them with the matrix; returns the winner.
const TuneCandidate& StoreAndReport(Database& db, const TuningKey& key, const TuneRequest& request,
                                    const Operand& operand, const PatternStats& stats,
                                    const Measured& measured, TuneReport& report) {
  const std::vector<TuneCandidate>& candidates = measured.candidates;
  const std::vector<RunResult>& results = measured.results;
  report.candidates.insert(report.candidates.end(), measured.lines.begin(), measured.lines.end());
  const int best = WinningCandidate(measured);
  // A wrong FixedCSR is a fault of this program: its results are kept, no winner is.
  const RunResult& fixed = results[0];
  const bool fixed_wrong = !fixed.ok() && fixed.status == RunStatus::kWrongResult;
  const MatrixRecord matrix =
      MatrixRecordOf(operand.fingerprint, std::filesystem::path(request.path).stem().string(),
                     operand.tensor, stats, request.path);
  StoreTune(db, key, request.expression.text, matrix, candidates, results, fixed_wrong ? -1 : best,
            request.calls);
  if (fixed_wrong)
    throw InternalError("FixedCSR gave a wrong result on " + request.path + ": " + fixed.message);
  if (best < 0) throw InternalError("no candidate verified on " + request.path);
  const RunResult& repeat = results.back();
  report.fixed_csr_ms = fixed.ok() ? fixed.time.median_ms : 0;
  report.fixed_csr_pack_ms = fixed.pack_ms;
  if (fixed.ok() && repeat.ok())
    report.noise = std::fabs(fixed.time.median_ms - repeat.time.median_ms) /
                   std::min(fixed.time.median_ms, repeat.time.median_ms);
  report.drift_correction = LargestDriftCorrection(results);
  report.winner_json = candidates[best].json;
  report.winner_source = candidates[best].source;
  report.winner_ms = results[best].time.median_ms;
  report.thread_round_trip_ns = results[best].time.round_trip_ns;
  report.thread_skew = results[best].time.thread_skew;
  report.pack_ms = results[best].pack_ms + results[best].ordering_ms;
  report.ordering_ms = results[best].ordering_ms;
  report.break_even_calls = BreakEven(report.pack_ms, report.winner_ms, report.fixed_csr_ms);
  return candidates[best];
}

}  // namespace

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
  out["calls"] = calls;
  out["tuned_order"] = tuned_order;
  if (calls > 0) {
    out["end_to_end_ms"] = end_to_end_ms();
    out["fixed_csr_end_to_end_ms"] = fixed_csr_end_to_end_ms();
  }
  out["noise"] = noise;
  out["drift_correction"] = drift_correction;
  out["disturbed"] = disturbed;
  out["disturbance"] = disturbance;
  out["measure_attempts"] = measure_attempts;
  out["thread_round_trip_ns"] = thread_round_trip_ns;
  out["thread_skew"] = thread_skew;
  if (near_rounds + far_rounds > 0)
    out["placements"] = {
        {"near_rounds", near_rounds}, {"far_rounds", far_rounds}, {"far_share", far_share}};
  out["tune_ms"] = tune_ms;
  out["stage_ms"] = stage_ms;
  out["sources"] = sources_used;
  out["model_evaluations"] = model_evaluations;
  if (model_top_k > 0) out["model_top_k"] = model_top_k;
  out["refine_weighted"] = refine_weighted;
  out["model"] = model_dir.empty() ? nlohmann::json(nullptr) : nlohmann::json(model_dir);
  out["model_calibrated"] = model_calibrated;
  if (!model_skipped.empty()) out["model_skipped"] = model_skipped;
  if (!stored_winner_passed_over.empty())
    out["stored_winner_passed_over"] = stored_winner_passed_over;
  out["candidates"] = nlohmann::json::array();
  for (const auto& c : candidates) {
    nlohmann::json j = {{"schedule", nlohmann::json::parse(c.schedule_json)},
                        {"source", c.source},
                        {"status", c.status}};
    if (c.status == "ok") {
      j["time_ms"] = c.time_ms;
      j["pack_ms"] = c.pack_ms;
      if (c.ordering_ms > 0) j["ordering_ms"] = c.ordering_ms;
      if (c.finalist) j["final"] = true;
      if (c.near_rounds + c.far_rounds > 0) {
        j["placements"] = {{"near_rounds", c.near_rounds}, {"far_rounds", c.far_rounds}};
        if (c.near_rounds > 0) j["placements"]["near_ms"] = c.near_ms;
        if (c.far_rounds > 0) j["placements"]["far_ms"] = c.far_ms;
      }
    } else {
      j["time_ms"] = nullptr;
      j["message"] = c.message;
    }
    out["candidates"].push_back(j);
  }
  if (!emitted_files.empty()) out["emitted"] = emitted_files;
  return out;
}

TuneReport Tune(const TuneRequest& request, const TuneProgress& progress) {
  const auto start = Clock::now();
  auto stage = [&](const std::string& name) {
    if (progress.stage) progress.stage(name);
  };
  TuneReport report;
  report.calls = request.calls;
  report.tuned_order = request.tuned_order;
  const Expression& e = request.expression;
  report.kernel = KernelKey(request.kernel, e);
  report.expression = e.text;

  // Everything that can be wrong with the input is found before anything is stored.
  if (!request.emit_dir.empty()) PrepareEmitDirectory(request.emit_dir);
  Jit jit;
  const MachineInfo machine = DetectMachine(jit.compiler(), Jit::Flags());
  std::string model_dir = ResolveModelDirectory(request.model_dir, request.kernel, report.kernel,
                                                request.use_model, MachineKey(machine));
  // A model named with --model is always consulted; the one tune found itself only when its
  // schedules can gain anything.
  if (request.model_dir.empty() && !model_dir.empty()) {
    report.model_skipped = NothingToRank(model_dir);
    if (!report.model_skipped.empty()) model_dir.clear();
  }
  report.model_dir = model_dir;
  // The model's move weights steer the second round; without a model it draws uniformly.
  RefinementMoveWeights move_weights;
  if (const nlohmann::json moves = ModelRefineMoves(model_dir); !moves.is_null())
    move_weights = RefinementMoveWeights::FromJson(
        moves, (std::filesystem::path(model_dir) / kModelManifest).string());
  report.model_calibrated =
      !model_dir.empty() &&
      model_dir == CalibratedModelDirectory(MachineKey(machine), request.kernel);
  stage("reading");
  auto t = Clock::now();
  Operand operand;
  operand.tensor = ReadTensorFile(request.path);
  // Every schedule of a tensor without entries does nothing: no winner is worth storing.
  if (operand.tensor.nnz() == 0)
    throw InputError(request.path, 0, "the tensor has no entries: there is nothing to tune");
  if (std::string left_out = ValuesLeftOut(operand.tensor, request.dtype); !left_out.empty())
    report.input_warnings.push_back(request.path + ": " + left_out);
  operand.sizes = ResolveIndexSizes(e, operand.tensor.dims, request.dense);
  try {
    CheckRunFitsInMemory(e, operand.tensor, operand.sizes, request.dtype);
  } catch (const InputError& error) {
    throw InputError(request.path, 0, error.cause());
  }
  const std::map<std::string, int64_t> dense_sizes = DenseOnlySizes(e, operand.sizes);
  operand.fingerprint = PatternFingerprint(operand.tensor);
  report.fingerprint = operand.fingerprint;
  report.stage_ms["read"] = MsSince(t);
  auto db = Database::Open(request.db_path, OpenMode::kReadWrite);
  // Every value equal (a pattern matrix's 1): the candidates read one value (ApplyUniformValues),
  // and the winner is stored under a key of its own (OneValueKernelKey).
  const bool uniform_values = HasUniformValues(operand.tensor, IsComplex(request.dtype));
  std::string kernel_key = request.tuned_order ? TunedOrderKernelKey(report.kernel) : report.kernel;
  if (uniform_values) kernel_key = OneValueKernelKey(kernel_key);
  const TuningKey key{operand.fingerprint, kernel_key, db->UpsertMachine(machine), dense_sizes,
                      request.dtype};
  std::optional<Schedule> winner;
  if (!request.force) winner = ReportStoredWinner(*db, key, uniform_values, report);
  if (!winner) {
    stage("candidates");
    t = Clock::now();
    // The pattern statistics feed Scorch's heuristic and SparseAuto here and are stored with
    // the matrix below.
    const PatternStats stats = ComputePatternStats(operand.tensor);
    GatheredCandidates gathered =
        GatherTuneCandidates(request, operand, stats, model_dir, progress, report);
    report.sources_used = gathered.sources_used;
    if (uniform_values) ApplyUniformValues(gathered.candidates);
    report.stage_ms["candidates"] = MsSince(t);

    MeasuringOptions measuring;
    measuring.path = request.path;
    measuring.max_ms = request.max_ms;
    measuring.seed = request.seed;
    measuring.on_busy = request.on_busy;
    measuring.orderings = request.orderings;
    measuring.calls = request.calls;
    measuring.tuned_order = request.tuned_order;
    const auto waco = WacoTemplate::ForKernel(request.kernel);
    if (waco && request.refine > 0) {
      RefinementOptions refinement;
      refinement.count = request.refine;
      refinement.seed = request.seed;
      refinement.weights = &move_weights;
      refinement.uniform_values = uniform_values;
      report.refine_weighted = !move_weights.empty();
      measuring.second_round_steps = request.refine_steps;
      measuring.second_round = [&, refinement](const std::vector<TuneCandidate>& candidates,
                                               const std::vector<RunResult>& results) {
        return RefinementCandidates(*waco, operand.sizes, candidates, results, refinement,
                                    report.kernel + operand.fingerprint);
      };
    }
    if (waco && request.leader_round > 0) {
      RefinementOptions leader;
      leader.count = request.leader_round;
      leader.seed = request.seed;
      leader.weights = &move_weights;
      leader.uniform_values = uniform_values;
      measuring.leader_round = [&, leader](const std::vector<TuneCandidate>& candidates,
                                           size_t winner) {
        return LeaderNeighbours(*waco, operand.sizes, candidates, winner, leader,
                                report.kernel + operand.fingerprint);
      };
    }
    const Measured measured =
        MeasureCandidates(e, operand.tensor, operand.sizes, request.dtype, jit,
                          std::move(gathered.candidates), measuring, progress);
    for (const auto& [name, ms] : measured.stage_ms) report.stage_ms[name] = ms;
    report.measure_attempts = measured.attempts;
    report.disturbed = !measured.disturbance.empty();
    report.disturbance = measured.disturbance;
    const PlacementTally placements = ObservedPlacements();
    report.near_rounds = placements.near_rounds;
    report.far_rounds = placements.far_rounds;
    report.far_share = placements.FarShare();

    stage("storing");
    winner = StoreAndReport(*db, key, request, operand, stats, measured, report).schedule;
  }
  if (!request.emit_dir.empty()) {
    stage("emitting");
    report.emitted_files =
        EmitKernel(request.emit_dir, request.kernel, e, operand.sizes, request.dtype, *winner,
                   &operand.tensor, request.calls, request.tuned_order);
  }
  report.tune_ms = MsSince(start);
  return report;
}

}  // namespace sparsetune
