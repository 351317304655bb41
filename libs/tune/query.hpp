// The database-only answer that build scripts call: the stored winner for an operand, with no
// compiler and no cost model; on a miss, optionally Scorch's heuristic schedule.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/dtype.hpp"
#include "ir/expression.hpp"

namespace sparsetune {

struct QueryRequest {
  std::string path;         // a matrix file, or
  std::string fingerprint;  // its fingerprint
  std::string kernel;
  Expression expression;
  std::map<std::string, int64_t> dense;
  DType dtype = DType::kF32;
  std::string db_path;
  int64_t calls = 0;         // the winner per call (0) or the one stored for this many calls
  bool tuned_order = false;  // the winner tuned for calls in the tuned order (tune --tuned-order)
  // With a fingerprint: whether the operand's values are all equal, when the caller knows
  // (OneValueKernelKey). Unknown: the winner for values that differ, else the one for one value.
  std::optional<bool> one_value;
  // A miss answers with Scorch's heuristic schedule (never measured) instead of nothing.
  bool fallback_heuristic = false;
};

struct QueryAnswer {
  bool hit = false;
  std::string fingerprint;
  std::string kernel;
  std::string winner_json;
  double winner_ms = 0;
  std::optional<double> fixed_csr_ms;
  int64_t calls = 0;         // what the winner was chosen for (QueryRequest::calls)
  bool tuned_order = false;  // QueryRequest::tuned_order
  double prepare_ms = 0;     // with a call count: the winner's preparation
  std::string updated_at;
  // Why no stored winner answers for the operand ("": one does, or none is stored): the one
  // stored keeps one value for every entry (uniform_values), and the operand's values differ.
  std::string passed_over;
  // A miss answered by a fallback: "heuristic", what it looked at, and how long it took.
  std::string fallback;
  std::string heuristic_basis;
  double heuristic_us = 0;
  bool answered() const { return hit || !fallback.empty(); }
  nlohmann::json ToJson() const;
};

// The stored winner for this machine, kernel, dense sizes, dtype and pattern, from the
// database alone (no compiler, no cost model). A missing database is a miss, which
// fallback_heuristic answers with Scorch's heuristic schedule.
QueryAnswer Query(const QueryRequest& request);

}  // namespace sparsetune
