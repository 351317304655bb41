#include "tune/storing.hpp"

namespace sparsetune {

std::string KernelKey(const std::string& kernel, const Expression& expression) {
  return kernel.empty() ? "expr:" + expression.text : kernel;
}

std::string TunedOrderKernelKey(const std::string& kernel_key) {
  return kernel_key + "@tuned-order";
}

std::string OneValueKernelKey(const std::string& kernel_key) {
  return kernel_key + "@one-value";
}

MatrixRecord MatrixRecordOf(const std::string& fingerprint, const std::string& name,
                            const CooTensor& tensor, const PatternStats& stats,
                            const std::string& source) {
  MatrixRecord matrix;
  matrix.fingerprint = fingerprint;
  matrix.name = name;
  matrix.dims = tensor.dims;
  matrix.nnz = tensor.nnz();
  matrix.stats = PatternStatsToJson(stats);
  matrix.source_path = source;
  return matrix;
}

FailureRecord FailureOf(const TuningKey& key, const std::string& expression,
                        const std::string& schedule_json, const std::string& reason) {
  FailureRecord failure;
  failure.key = key;
  failure.expression = expression;
  failure.schedule_json = schedule_json;
  failure.reason = reason;
  return failure;
}

std::string FailureReason(const RunResult& result) {
  return std::string(RunStatusName(result.status)) + ": " + result.message;
}

int64_t StoreResult(Database& db, const TuningKey& key, const std::string& expression,
                    const TuneCandidate& candidate, const RunResult& r) {
  if (!r.ok())
    return db.RecordFailure(FailureOf(key, expression, candidate.json, FailureReason(r)));
  MeasurementRecord record;
  record.key = key;
  record.expression = expression;
  record.schedule_json = candidate.json;
  record.median_ms = r.time.median_ms;
  record.min_ms = r.time.min_ms;
  record.max_ms = r.time.max_ms;
  record.reps = r.time.reps;
  record.pack_ms = r.pack_ms + r.ordering_ms;
  record.compile_ms = r.compile_ms;
  record.verified = r.verified;
  record.source = candidate.source;
  return db.RecordMeasurement(record);
}

void StoreTune(Database& db, const TuningKey& key, const std::string& expression,
               const MatrixRecord& matrix, const std::vector<TuneCandidate>& candidates,
               const std::vector<RunResult>& results, int winner, int64_t calls) {
  db.UpsertMatrix(matrix);
  int64_t winner_id = -1;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const int64_t schedule_id = StoreResult(db, key, expression, candidates[c], results[c]);
    if (static_cast<int>(c) == winner) winner_id = schedule_id;
  }
  if (winner < 0) return;
  const RunResult& fixed = results[0];
  const std::optional<double> fixed_ms =
      fixed.ok() ? std::optional<double>(fixed.time.median_ms) : std::nullopt;
  const RunResult& best = results[winner];
  if (calls > 0) {
    db.SetWinnerForCalls(key, calls, winner_id, best.time.median_ms,
                         best.ordering_ms + best.pack_ms, fixed_ms);
  } else {
    db.SetWinner(key, winner_id, best.time.median_ms, fixed_ms);
  }
}

}  // namespace sparsetune
