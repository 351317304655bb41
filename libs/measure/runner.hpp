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
  // Call a renumbered schedule in its tuned order, as an iterative method that converts its
  // operands once calls it (the emitted _compute_tuned_order): the dense inputs are handed over
  // renumbered and the output comes back so, with no permutation per call. Verified that way
  // too. Schedules that renumber nothing are called as they are.
  bool tuned_order = false;
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
  // Renumbering the rows and columns (computing the ordering and permuting the entries),
  // before packing; counted once per ordering and runner, like packing.
  double ordering_ms = 0;
  double compile_ms = 0;
  double verify_run_ms = 0;  // the verifying call alone
  bool compile_cached = false;
  std::string source_path;
  std::string nest;  // the loop nest, printed
  bool ok() const { return status == RunStatus::kOk; }
};

// A schedule lowered, packed, compiled and (unless RunOptions::verify is false) verified: ready
// to be called and timed beside other contenders (TimeInterleaved). It owns its packed operand
// and output, so it stays valid however many others are prepared after it.
class PreparedKernel {
 public:
  // Status, schedule, verification, pack and compile times; no time yet.
  const RunResult& result() const { return result_; }
  bool ok() const { return result_.ok(); }
  // Runs the kernel once on the runner's operands. Only when ok().
  void Call() const;
  // Bytes it holds: the packed operand (possibly shared with other kernels) and the output.
  int64_t bytes() const;
  // What the kernel last wrote (the output tensor's values, or the sparse output's values by
  // position of the packed format).
  const ValueBuffer& output() const { return *output_; }
  // Later calls write into `buffer`, which is of the output's type and size and may be shared
  // by other kernels: contenders that run one after another need one output between them
  // (bytes() still counts it for each). False, and nothing changes, when the buffer does not
  // fit. Only after verification: the buffer's values are the last caller's.
  bool WriteOutputTo(std::shared_ptr<ValueBuffer> buffer);
  // The buffer its calls write, to give to others' WriteOutputTo.
  std::shared_ptr<ValueBuffer> output_buffer() const { return output_; }

 private:
  friend class KernelRunner;
  RunResult result_;
  std::shared_ptr<const PackedTensor> packed_;
  std::shared_ptr<ValueBuffer> output_;
  // The dense inputs in the tuned order (RunOptions::tuned_order), when it renumbers any.
  std::shared_ptr<const std::vector<ValueBuffer>> tuned_inputs_;
  st_args args_{};
  st_kernel_fn function_ = nullptr;
};

// Runs schedules of one expression on one sparse tensor: lowers, packs, generates, compiles,
// verifies against the reference and times. Dense operands and the reference are built once.
class KernelRunner {
 public:
  KernelRunner(Expression expression, const CooTensor& sparse, IndexSizes sizes, DType dtype,
               Jit& jit);
  ~KernelRunner();

  // The kernel source a schedule generates for this operand (it packs to learn the coordinate
  // encodings), so that many can be compiled at once; "" with the reason in `error` when the
  // schedule does not lower or the format is refused.
  std::string Source(const Schedule& schedule, const RunOptions& options, std::string* error);
  // Everything but the timing (options.time is ignored).
  PreparedKernel Prepare(const Schedule& schedule, const RunOptions& options);
  // Renumbers (when the schedule orders rows) and packs the operand for `schedule` once more,
  // on fresh memory as a caller's first preparation runs (the packs before it keep their
  // freed memory for the next: see bulk_memory), and gives the two times; the ordering itself
  // is not computed again, its time is the one its computation took. False when the
  // schedule does not lower or its format is refused.
  bool TimePreparationOnFreshMemory(const Schedule& schedule, double* ordering_ms, double* pack_ms);
  // Prepare, then time it alone with TimeRepeated when options.time.
  RunResult Run(const Schedule& schedule, const RunOptions& options);
  // The dense inputs by tensor id (empty buffers for the output and the sparse operand): the
  // same operands every contender, library or generated, must use.
  const std::vector<ValueBuffer>& inputs() const { return inputs_; }
  const CooTensor& sparse() const { return sparse_; }

  const Expression& expression() const { return expression_; }
  const IndexSizes& sizes() const { return sizes_; }
  DType dtype() const { return dtype_; }
  // Computed on first use.
  const ReferenceResult& reference();

 private:
  std::shared_ptr<const PackedTensor> PackFor(const StorageFormat& format,
                                              const PackOptions& pack_options, std::string* refusal,
                                              double* pack_ms, double* ordering_ms);
  // The operand renumbered by `kind` (computed once per kind); null with the reason when the
  // ordering does not apply to it.
  struct Reordering {
    std::shared_ptr<const MatrixOrdering> ordering;
    // Rows and columns: a renumbered copy. Rows only: SELL takes the rows in their new order as
    // it packs them; other formats pack the rows renumbered, the entries where they are, made
    // when one first needs them.
    std::shared_ptr<const CooTensor> tensor;
    std::shared_ptr<const RenumberedRows> rows;
    double ms = 0;       // computing the ordering (and the renumbered copy)
    double rows_ms = 0;  // renumbering the rows, once made
  };
  // Packs the operand, renumbered when `reordering` is not null; *renumbering_ms: the time the
  // renumbered rows this packing read took to make (0 when it read none).
  PackOutcome PackOperand(Reordering* reordering, const StorageFormat& format,
                          const PackOptions& pack_options, double* renumbering_ms) const;
  Reordering* ReorderingFor(OrderingKind kind, std::string* refusal);
  // Renumbers the operand by the ordering of `kind` (which must apply), computed the first
  // time only; ms: the computation's time, then, plus permuting the entries now.
  Reordering Renumber(OrderingKind kind);
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
    std::shared_ptr<const PackedTensor> packed;
    double ordering_ms = 0;  // the ordering and any renumbering this packing needed
  };
  std::vector<PackEntry> packs_;
  std::vector<std::pair<OrderingKind, Reordering>> reorderings_;
  // Every ordering computed, with the time its computation took: small beside the renumbered
  // copies that reorderings_ limits, and slow to compute again for each contest's packing
  // (Louvain took 49 s on a graph of 14M nonzeros, RCM 3.4 s).
  struct ComputedOrdering {
    std::shared_ptr<const MatrixOrdering> ordering;
    double ms = 0;
  };
  std::vector<std::pair<OrderingKind, ComputedOrdering>> orderings_;
};

// For bulk measurement: verifies first and times only when the verifying run stayed under
// options.timing.max_ms_per_run, so a schedule far too slow costs one run instead of two.
RunResult VerifyThenTime(KernelRunner& runner, const Schedule& schedule, const RunOptions& options);

}  // namespace sparsetune
