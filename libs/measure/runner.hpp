#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "ir/expression.hpp"
#include "ir/schedule.hpp"
#include "jit/jit.hpp"
#include "measure/operands.hpp"
#include "measure/reference.hpp"
#include "measure/timing.hpp"
#include "tensor/coo.hpp"
#include "tensor/pack.hpp"

namespace sparsetune {

struct RunOptions {
  bool verify = true;
  bool time = true;
  int threads = -1;  // >= 0 overrides the schedule's thread count
  CodegenMode mode = CodegenMode::kRuntimeParameters;
  double padding_cap = kDefaultPaddingCap;
  TimingOptions timing;
};

// Why a run did not produce a verified time.
enum class RunStatus {
  kOk,
  kInvalidSchedule,  // lowering rejected it (reason in message)
  kFormatRefused,    // packing refused it (padding cap)
  kWrongResult,      // verification failed
  kTimedOut,
};
const char* RunStatusName(RunStatus status);

struct RunResult {
  RunStatus status = RunStatus::kOk;
  std::string message;
  std::string schedule_json;  // canonical
  bool verified = false;
  double max_relative_error = 0;
  TimingResult time;
  double pack_ms = 0;
  double compile_ms = 0;
  bool compile_cached = false;
  std::string source_path;
  std::string nest;  // the loop nest, printed
  bool ok() const { return status == RunStatus::kOk; }
};

// Runs schedules of one expression on one sparse tensor: lowers, packs, generates, compiles,
// verifies against the reference and times. Dense operands and the reference are built once.
class KernelRunner {
 public:
  KernelRunner(Expression expression, const CooTensor& sparse, IndexSizes sizes, DType dtype,
               Jit& jit);
  ~KernelRunner();

  RunResult Run(const Schedule& schedule, const RunOptions& options);

  const Expression& expression() const { return expression_; }
  const IndexSizes& sizes() const { return sizes_; }
  DType dtype() const { return dtype_; }
  // Computed on first use.
  const ReferenceResult& reference();

 private:
  const PackedTensor* PackFor(const StorageFormat& format, double cap, std::string* refusal,
                              double* pack_ms);
  bool Verify(const ValueBuffer& output, const PackedTensor& packed, int output_levels,
              std::string* message, double* max_error);

  Expression expression_;
  const CooTensor& sparse_;
  IndexSizes sizes_;
  DType dtype_;
  Jit& jit_;
  std::vector<ValueBuffer> inputs_;
  std::unique_ptr<ReferenceResult> reference_;
  // The most recently packed formats, reused across schedules that share them.
  struct PackEntry {
    std::string key;
    std::unique_ptr<PackedTensor> packed;
  };
  std::vector<PackEntry> packs_;
};

// For bulk measurement: verifies first and times only when the verifying run stayed under
// options.timing.max_ms_per_run, so a schedule far too slow costs one run instead of two.
RunResult VerifyThenTime(KernelRunner& runner, const Schedule& schedule, const RunOptions& options);

}  // namespace sparsetune
