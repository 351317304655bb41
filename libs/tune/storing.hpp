// What a tune or a collection stores: its results as database rows, keyed alike.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "db/database.hpp"
#include "ir/expression.hpp"
#include "measure/runner.hpp"
#include "tensor/coo.hpp"
#include "tensor/stats.hpp"
#include "tune/candidates.hpp"

namespace sparsetune {

// The database key of a kernel: its name, or "expr:" and the canonical expression.
std::string KernelKey(const std::string& kernel, const Expression& expression);
// The database key of a kernel called in its tuned order (tune --tuned-order): its KernelKey
// and "@tuned-order". Those times skip the permutations of every call, so they and their
// winner are kept apart from the kernel's (and from its training data).
std::string TunedOrderKernelKey(const std::string& kernel_key);
// The database key of a kernel tuned on an operand whose values are all equal (a pattern
// file's): its key and "@one-value". Most of its candidates keep one value
// (Schedule::uniform_values) and take no operand whose values differ, so its winner is kept
// apart from the one tuned on the same pattern with values that differ, and both stay stored.
std::string OneValueKernelKey(const std::string& kernel_key);

// The matrix row of an operand: its shape and statistics, and where it came from.
MatrixRecord MatrixRecordOf(const std::string& fingerprint, const std::string& name,
                            const CooTensor& tensor, const PatternStats& stats,
                            const std::string& source);

// The row of a schedule that did not measure; `reason` is "status: message".
FailureRecord FailureOf(const TuningKey& key, const std::string& expression,
                        const std::string& schedule_json, const std::string& reason);

// "status: message" of a result that did not measure.
std::string FailureReason(const RunResult& result);

// Stores one candidate's result: its times when it ran and was verified (the preparation time
// counts ordering and packing), else why it did not. Returns the schedule's id.
int64_t StoreResult(Database& db, const TuningKey& key, const std::string& expression,
                    const TuneCandidate& candidate, const RunResult& result);

// Stores what a tune found: the matrix, every candidate's result and, when `winner` is one of
// them (not -1), that candidate as the key's winner beside FixedCSR's time (results[0]): the
// winner per call (calls 0) or the one for `calls` calls, with its preparation time.
void StoreTune(Database& db, const TuningKey& key, const std::string& expression,
               const MatrixRecord& matrix, const std::vector<TuneCandidate>& candidates,
               const std::vector<RunResult>& results, int winner, int64_t calls = 0);

}  // namespace sparsetune
