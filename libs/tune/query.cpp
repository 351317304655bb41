#include "tune/query.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "base/errors.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "heuristic/scorch.hpp"
#include "io/read.hpp"
#include "ir/schedule.hpp"
#include "jit/jit.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/stats.hpp"
#include "tune/storing.hpp"

namespace sparsetune {

nlohmann::json QueryAnswer::ToJson() const {
  nlohmann::json out;
  out["hit"] = hit;
  out["fingerprint"] = fingerprint;
  out["kernel"] = kernel;
  out["tuned_order"] = tuned_order;
  if (hit) {
    out["winner"] = {{"schedule", nlohmann::json::parse(winner_json)}, {"time_ms", winner_ms}};
    out["fixed_csr_ms"] = fixed_csr_ms ? nlohmann::json(*fixed_csr_ms) : nlohmann::json();
    out["calls"] = calls;
    if (calls > 0) out["prepare_ms"] = prepare_ms;
    out["updated_at"] = updated_at;
  } else if (!fallback.empty()) {
    out["winner"] = {{"schedule", nlohmann::json::parse(winner_json)}, {"time_ms", nullptr}};
    out["fallback"] = fallback;
    out["fallback_basis"] = heuristic_basis;
    out["fallback_us"] = heuristic_us;
  } else {
    out["winner"] = nullptr;
  }
  if (!passed_over.empty()) out["passed_over"] = passed_over;
  return out;
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
  answer.tuned_order = request.tuned_order;
  std::map<std::string, int64_t> dense = request.dense;
  std::unique_ptr<CooTensor> tensor;
  if (!request.path.empty()) {
    tensor = std::make_unique<CooTensor>(ReadTensorFile(request.path));
    answer.fingerprint = PatternFingerprint(*tensor);
    dense = DenseOnlySizes(request.expression,
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
    key.machine_id = *machine;
    key.dense = dense;
    key.dtype = request.dtype;
    const std::string kernel_key =
        request.tuned_order ? TunedOrderKernelKey(answer.kernel) : answer.kernel;
    // Whether the operand's values are all equal: from the file, else as the caller says.
    std::optional<bool> one_value = request.one_value;
    if (tensor) one_value = HasUniformValues(*tensor, IsComplex(request.dtype));
    // An operand of one value takes the winner tuned so, else the one of values that differ;
    // an operand whose values differ only the latter. Unknown: that one first.
    std::vector<std::string> kernel_keys{kernel_key};
    if (one_value == true) kernel_keys.insert(kernel_keys.begin(), OneValueKernelKey(kernel_key));
    if (!one_value.has_value()) kernel_keys.push_back(OneValueKernelKey(kernel_key));
    // A winner that keeps one value (uniform_values) does not answer for values that differ,
    // wherever it is stored (a build before OneValueKernelKey kept it under the kernel's key).
    bool one_value_winner = false;
    if (one_value == false) {
      key.kernel = OneValueKernelKey(kernel_key);
      one_value_winner = db->FindWinner(key, request.calls).has_value();
    }
    for (const std::string& kernel : kernel_keys) {
      key.kernel = kernel;
      auto winner = db->FindWinner(key, request.calls);
      if (!winner) continue;
      if (one_value == false &&
          ParseScheduleText(winner->schedule.canonical_json, "stored winner").uniform_values) {
        one_value_winner = true;
        continue;
      }
      answer.hit = true;
      answer.winner_json = winner->schedule.canonical_json;
      answer.winner_ms = winner->time_ms;
      answer.fixed_csr_ms = winner->fixed_csr_ms;
      answer.calls = winner->calls;
      answer.prepare_ms = winner->prepare_ms;
      answer.updated_at = winner->updated_at;
      return answer;
    }
    if (one_value_winner)
      answer.passed_over =
          "the stored winner keeps one value for every entry (it was tuned on an operand of this "
          "pattern whose values were all equal), and " +
          (request.path.empty() ? std::string("the operand") : request.path) + "'s values differ";
  }
  if (request.fallback_heuristic) AnswerWithHeuristic(request, tensor.get(), db.get(), answer);
  return answer;
}

}  // namespace sparsetune
