#include "measure/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/bulk_allocator.hpp"
#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "ir/footprint.hpp"
#include "ir/loop_nest.hpp"
#include "ordering/ordering.hpp"

namespace sparsetune {

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kOk:
      return "ok";
    case RunStatus::kInvalidSchedule:
      return "invalid_schedule";
    case RunStatus::kFormatRefused:
      return "format_refused";
    case RunStatus::kWrongResult:
      return "wrong_result";
    case RunStatus::kTimedOut:
      return "timed_out";
  }
  return "unknown";
}

KernelRunner::KernelRunner(Expression expression, const CooTensor& sparse, IndexSizes sizes,
                           DType dtype, Jit& jit)
    : expression_(std::move(expression)),
      sparse_(sparse),
      sizes_(std::move(sizes)),
      dtype_(dtype),
      jit_(jit) {
  CheckRunFitsInMemory(expression_, sparse_, sizes_, dtype_);
  inputs_ = MakeDenseInputs(expression_, sizes_, dtype_);
}

KernelRunner::~KernelRunner() = default;

const ReferenceResult& KernelRunner::reference() {
  if (!reference_) {
    reference_ =
        std::make_unique<ReferenceResult>(ComputeReference(expression_, sparse_, sizes_, inputs_));
  }
  return *reference_;
}

namespace {
std::string FormatKey(const StorageFormat& f) {
  std::string key;
  for (int64_t s : f.split) key += std::to_string(s) + ",";
  for (const auto& l : f.levels) {
    key += std::to_string(l.mode) + ":" + std::to_string(int(l.part)) + ":" +
           std::to_string(int(l.kind)) + ":" + std::to_string(l.group) + ";";
  }
  // One value or a value per position: the same levels, other value arrays.
  return key + "ordering" + OrderingName(f.ordering) + (f.uniform_values ? "one value" : "");
}

// Moves a dense tensor (row-major over `indices`) into the tuned order or back out of it:
// along each index the operand renumbers (old_of_new not null), element n of the tuned copy is
// element old_of_new[n] of the caller's.
void ConvertTunedOrder(const Expression& expression, const std::vector<std::string>& indices,
                       const IndexSizes& sizes, const int32_t* const* old_of_new,
                       const ValueBuffer& from, ValueBuffer& to, bool into_tuned) {
  const size_t order = indices.size();
  std::vector<int64_t> extent(order);
  std::vector<const int32_t*> map(order);
  for (size_t m = 0; m < order; ++m) {
    extent[m] = sizes.at(indices[m]);
    map[m] = old_of_new[expression.IndexId(indices[m])];
  }
  std::vector<int64_t> at(order, 0);  // the tuned coordinates of element t
  for (int64_t t = 0; t < from.size(); ++t) {
    int64_t old = 0;
    for (size_t m = 0; m < order; ++m) old = old * extent[m] + (map[m] ? map[m][at[m]] : at[m]);
    if (into_tuned)
      to.SetComplex(t, from.GetComplex(old));
    else
      to.SetComplex(old, from.GetComplex(t));
    for (size_t m = order; m-- > 0;) {
      if (++at[m] < extent[m]) break;
      at[m] = 0;
    }
  }
}

// Whether a tensor over `indices` is indexed by an index the operand renumbers.
bool Renumbered(const Expression& expression, const std::vector<std::string>& indices,
                const int32_t* const* old_of_new) {
  return std::any_of(indices.begin(), indices.end(), [&](const std::string& index) {
    return old_of_new[expression.IndexId(index)] != nullptr;
  });
}

}  // namespace

KernelRunner::Reordering* KernelRunner::ReorderingFor(OrderingKind kind, std::string* refusal) {
  for (auto& [k, r] : reorderings_) {
    if (k == kind) return &r;
  }
  *refusal = OrderingRefusal(sparse_, kind);
  if (!refusal->empty()) return nullptr;
  // The permutations are small; the renumbered copies of a large operand are not: keep two.
  if (reorderings_.size() >= 2) reorderings_.erase(reorderings_.begin());
  reorderings_.emplace_back(kind, Renumber(kind));
  return &reorderings_.back().second;
}

KernelRunner::Reordering KernelRunner::Renumber(OrderingKind kind) {
  auto known = std::find_if(orderings_.begin(), orderings_.end(),
                            [&](const auto& entry) { return entry.first == kind; });
  if (known == orderings_.end()) {
    const auto start = std::chrono::steady_clock::now();
    ComputedOrdering computed;
    computed.ordering = std::make_shared<const MatrixOrdering>(ComputeOrdering(sparse_, kind));
    computed.ms = MsSince(start);
    orderings_.emplace_back(kind, std::move(computed));
    known = orderings_.end() - 1;
  }
  const auto start = std::chrono::steady_clock::now();
  Reordering r;
  r.ordering = known->second.ordering;
  if (!r.ordering->cols.empty())
    r.tensor = std::make_shared<const CooTensor>(PermuteMatrix(sparse_, *r.ordering));
  r.ms = known->second.ms + MsSince(start);
  return r;
}

PackOutcome KernelRunner::PackOperand(Reordering* reordering, const StorageFormat& format,
                                      const PackOptions& pack_options,
                                      double* renumbering_ms) const {
  *renumbering_ms = 0;
  if (!reordering) return Pack(sparse_, format, dtype_, pack_options);
  if (reordering->tensor) return Pack(*reordering->tensor, format, dtype_, pack_options);
  // Rows only; the operand is canonical, as both need.
  if (PacksRowsInOrder(format))
    return PackRowsInOrder(sparse_, format, dtype_, pack_options, *reordering->ordering);
  if (!reordering->rows) {
    const auto start = std::chrono::steady_clock::now();
    reordering->rows =
        std::make_shared<const RenumberedRows>(RenumberRows(sparse_, *reordering->ordering));
    reordering->rows_ms = MsSince(start);
  }
  *renumbering_ms = reordering->rows_ms;
  return Pack(sparse_, format, dtype_, pack_options, reordering->rows.get());
}

std::shared_ptr<const PackedTensor> KernelRunner::PackFor(const StorageFormat& format,
                                                          const PackOptions& pack_options,
                                                          std::string* refusal, double* pack_ms,
                                                          double* ordering_ms) {
  const std::string key = FormatKey(format) + "cap" + std::to_string(pack_options.padding_cap) +
                          (pack_options.narrow_coordinates ? "narrow" : "wide");
  Reordering* reordering = nullptr;
  if (format.ordering != OrderingKind::kNone) {
    reordering = ReorderingFor(format.ordering, refusal);
    if (!reordering) return nullptr;
  }
  for (auto& entry : packs_) {
    if (entry.key == key) {
      *pack_ms = entry.packed->pack_ms;
      *ordering_ms = entry.ordering_ms;
      return entry.packed;
    }
  }
  double renumbering_ms = 0;
  PackOutcome outcome = PackOperand(reordering, format, pack_options, &renumbering_ms);
  // A format that packs the renumbered rows (not SELL) counts their making too.
  *ordering_ms = reordering ? reordering->ms + renumbering_ms : 0;
  if (!outcome.packed) {
    *refusal = outcome.refusal;
    return nullptr;
  }
  if (reordering) outcome.packed->ordering = reordering->ordering;
  *pack_ms = outcome.packed->pack_ms;
  constexpr size_t kKeep = 3;
  if (packs_.size() >= kKeep) packs_.erase(packs_.begin());
  packs_.push_back(
      {key, std::shared_ptr<const PackedTensor>(std::move(outcome.packed)), *ordering_ms});
  return packs_.back().packed;
}

void PreparedKernel::Call() const {
  function_(&args_);
}

int64_t PreparedKernel::bytes() const {
  return (packed_ ? packed_->bytes() : 0) +
         (output_ ? output_->size() * int64_t(DTypeSize(output_->dtype())) : 0);
}

bool PreparedKernel::WriteOutputTo(std::shared_ptr<ValueBuffer> buffer) {
  if (!output_ || !buffer || buffer->dtype() != output_->dtype() ||
      buffer->size() != output_->size())
    return false;
  output_ = std::move(buffer);
  args_.output = output_->data();
  return true;
}

std::string KernelRunner::Source(const Schedule& input_schedule, const RunOptions& options,
                                 std::string* error) {
  Schedule schedule = input_schedule;
  schedule.Canonicalize();
  LowerOutcome lowered = Lower(expression_, schedule);
  if (!lowered.nest) {
    *error = std::string(RunStatusName(RunStatus::kInvalidSchedule)) + ": " + lowered.error;
    return "";
  }
  PackOptions pack_options;
  pack_options.padding_cap = options.padding_cap;
  pack_options.narrow_coordinates = schedule.narrow_coordinates;
  std::string refusal;
  double pack_ms = 0;
  double ordering_ms = 0;
  auto packed = PackFor(lowered.nest->storage, pack_options, &refusal, &pack_ms, &ordering_ms);
  if (!packed) {
    *error = std::string(RunStatusName(RunStatus::kFormatRefused)) + ": " + refusal;
    return "";
  }
  return GenerateKernelSource(*lowered.nest, dtype_, options.mode, packed->encodings());
}

bool KernelRunner::TimePreparationOnFreshMemory(const Schedule& input_schedule, double* ordering_ms,
                                                double* pack_ms) {
  Schedule schedule = input_schedule;
  schedule.Canonicalize();
  LowerOutcome lowered = Lower(expression_, schedule);
  if (!lowered.nest) return false;
  const StorageFormat& format = lowered.nest->storage;
  PackOptions pack_options;
  pack_options.narrow_coordinates = schedule.narrow_coordinates;
  bulk_memory::ReleaseKept();
  Reordering renumbered;
  if (format.ordering != OrderingKind::kNone) {
    if (!OrderingRefusal(sparse_, format.ordering).empty()) return false;
    renumbered = Renumber(format.ordering);
  }
  double renumbering_ms = 0;
  const PackOutcome outcome =
      PackOperand(format.ordering != OrderingKind::kNone ? &renumbered : nullptr, format,
                  pack_options, &renumbering_ms);
  *ordering_ms = renumbered.ms + renumbering_ms;
  if (!outcome.packed) return false;
  *pack_ms = outcome.packed->pack_ms;
  return true;
}

PreparedKernel KernelRunner::Prepare(const Schedule& input_schedule, const RunOptions& options) {
  PreparedKernel prepared;
  RunResult& result = prepared.result_;
  Schedule schedule = input_schedule;
  if (options.threads >= 0) schedule.threads = options.threads;
  schedule.Canonicalize();
  result.schedule_json = schedule.CanonicalJson();

  LowerOutcome lowered = Lower(expression_, schedule);
  if (!lowered.nest) {
    result.status = RunStatus::kInvalidSchedule;
    result.message = lowered.error;
    return prepared;
  }
  const LoopNest& nest = *lowered.nest;
  result.nest = nest.ToString();

  std::string refusal;
  PackOptions pack_options;
  pack_options.padding_cap = options.padding_cap;
  pack_options.narrow_coordinates = schedule.narrow_coordinates;
  prepared.packed_ =
      PackFor(nest.storage, pack_options, &refusal, &result.pack_ms, &result.ordering_ms);
  if (!prepared.packed_) {
    result.status = RunStatus::kFormatRefused;
    result.message = refusal;
    return prepared;
  }
  const PackedTensor& packed = *prepared.packed_;

  const std::string source = GenerateKernelSource(nest, dtype_, options.mode, packed.encodings());
  CompiledKernel kernel = jit_.Compile(source);
  result.compile_ms = kernel.compile_ms;
  result.compile_cached = kernel.cached;
  result.source_path = kernel.source_path;
  prepared.function_ = kernel.function;

  st_args& args = prepared.args_;
  std::memset(&args, 0, sizeof(args));
  for (size_t k = 0; k < expression_.indices.size(); ++k) {
    args.dims[k] = sizes_.at(expression_.indices[k]);
    args.splits[k] = nest.splits.at(expression_.indices[k]);
  }
  for (size_t l = 0; l < packed.levels.size(); ++l) {
    const PackedLevel& level = packed.levels[l];
    args.levels[l] = {level.extent, level.positions, level.pos.empty() ? nullptr : level.pos.data(),
                      level.crd_data(), level.base_data()};
  }
  args.sparse_values = packed.values_data();
  for (size_t t = 1; t < expression_.tensors.size(); ++t) {
    if (static_cast<int>(t) != expression_.sparse) args.inputs[t] = inputs_[t].data();
  }
  args.chunk = schedule.chunk;
  args.threads = schedule.threads;
  if (packed.ordering) {
    const auto& modes = expression_.sparse_input().indices;
    const std::vector<int32_t>* old_of_new[2] = {&packed.ordering->old_rows,
                                                 &packed.ordering->old_cols};
    const std::vector<int32_t>* new_of_old[2] = {&packed.ordering->rows, &packed.ordering->cols};
    for (int m = 0; m < 2; ++m) {
      if (old_of_new[m]->empty()) continue;
      args.old_of_new[expression_.IndexId(modes[m])] = old_of_new[m]->data();
      args.new_of_old[expression_.IndexId(modes[m])] = new_of_old[m]->data();
    }
  }

  int output_levels = 0;
  while (output_levels < static_cast<int>(nest.storage.levels.size()) &&
         nest.storage.levels[output_levels].mode < expression_.sparse_output_prefix) {
    ++output_levels;
  }
  int64_t output_size = 1;
  if (expression_.sparse_output_prefix > 0) {
    output_size = output_levels == 0 ? 1 : packed.levels[output_levels - 1].positions;
    const auto& out = expression_.tensors[0].indices;
    for (size_t k = expression_.sparse_output_prefix; k < out.size(); ++k)
      output_size *= sizes_.at(out[k]);
  } else {
    output_size = TensorElements(expression_.tensors[0], sizes_);
  }
  prepared.output_ = std::make_shared<ValueBuffer>(dtype_, output_size);
  args.output = prepared.output_->data();

  // In the tuned order, the dense inputs are converted once, as the caller would, and the
  // kernel skips its permutations; a dense output comes back renumbered.
  bool output_renumbered = false;
  if (options.tuned_order && packed.ordering) {
    // Only the renumbered inputs are copied; the others are read where they are.
    auto tuned = std::make_shared<std::vector<ValueBuffer>>(inputs_.size());
    for (size_t t = 1; t < expression_.tensors.size(); ++t) {
      const auto& indices = expression_.tensors[t].indices;
      if (static_cast<int>(t) == expression_.sparse ||
          !Renumbered(expression_, indices, args.old_of_new))
        continue;
      (*tuned)[t] = ValueBuffer(dtype_, inputs_[t].size());
      ConvertTunedOrder(expression_, indices, sizes_, args.old_of_new, inputs_[t], (*tuned)[t],
                        true);
      args.inputs[t] = (*tuned)[t].data();
    }
    prepared.tuned_inputs_ = std::move(tuned);
    args.tuned_order = 1;
    output_renumbered = expression_.sparse_output_prefix == 0 &&
                        Renumbered(expression_, expression_.tensors[0].indices, args.old_of_new);
  }

  if (options.verify) {
    // Elements the kernel fails to write stay NaN and fail verification.
    prepared.output_->Fill(std::nan(""));
    const auto start = std::chrono::steady_clock::now();
    prepared.Call();
    result.verify_run_ms = MsSince(start);
    ValueBuffer caller_output;
    if (output_renumbered) {
      caller_output = ValueBuffer(dtype_, output_size);
      ConvertTunedOrder(expression_, expression_.tensors[0].indices, sizes_, args.old_of_new,
                        *prepared.output_, caller_output, false);
    }
    if (!Verify(output_renumbered ? caller_output : *prepared.output_, packed, output_levels,
                &result.message, &result.max_relative_error)) {
      result.status = RunStatus::kWrongResult;
      return prepared;
    }
    result.verified = true;
  }
  return prepared;
}

RunResult KernelRunner::Run(const Schedule& schedule, const RunOptions& options) {
  PreparedKernel prepared = Prepare(schedule, options);
  RunResult result = prepared.result();
  if (!result.ok() || !options.time) return result;
  result.time = TimeRepeated([&] { prepared.Call(); }, options.timing);
  if (result.time.timed_out) {
    result.status = RunStatus::kTimedOut;
    result.message = "a run took " + std::to_string(result.time.median_ms) +
                     " ms, over the limit of " + std::to_string(options.timing.max_ms_per_run) +
                     " ms";
  }
  return result;
}

bool KernelRunner::Verify(const ValueBuffer& output, const PackedTensor& packed, int output_levels,
                          std::string* message, double* max_error) {
  const ReferenceResult& ref = reference();
  int64_t mismatches = 0;
  std::string first;
  // `where` names the element for the message; built only for the first mismatch, since
  // verification visits every output element of every measured schedule.
  auto check = [&](int64_t got_index, std::complex<double> expected, double magnitude,
                   const char* what, int64_t where) {
    const std::complex<double> got = output.GetComplex(got_index);
    double error = 0;
    const bool ok = MatchesReference(got, expected, magnitude, dtype_, &error);
    if (std::isfinite(error)) *max_error = std::max(*max_error, error);
    if (!ok) {
      if (mismatches == 0) {
        first = std::string(what) + " " + std::to_string(where) + ": got " +
                ValueText(got, dtype_) + ", expected " + ValueText(expected, dtype_);
      }
      ++mismatches;
    }
  };
  *max_error = 0;
  if (!ref.sparse) {
    for (int64_t q = 0; q < output.size(); ++q)
      check(q, ReferenceValue(ref, q), ref.magnitudes[q], "element", q);
  } else {
    // Walk the packed prefix levels; positions with a reference row must match it, padded
    // positions must hold zero.
    const int prefix = expression_.sparse_output_prefix;
    const int64_t rows =
        ref.prefix_coords.empty() ? 0 : static_cast<int64_t>(ref.prefix_coords[0].size());
    int64_t row = 0;
    std::vector<std::pair<std::vector<int64_t>, int64_t>> visited;
    // A renumbered operand's coordinates go back to the original numbering first.
    const MatrixOrdering* ordering = packed.ordering.get();
    ForEachPosition(packed, output_levels,
                    [&](int64_t position, const std::vector<int64_t>& modes) {
                      std::vector<int64_t> original(modes.begin(), modes.begin() + prefix);
                      if (ordering && prefix > 0 && !ordering->old_rows.empty())
                        original[0] = ordering->old_rows[original[0]];
                      if (ordering && prefix > 1 && !ordering->old_cols.empty())
                        original[1] = ordering->old_cols[original[1]];
                      visited.emplace_back(std::move(original), position);
                    });
    std::sort(visited.begin(), visited.end());
    for (const auto& [coords, position] : visited) {
      // Reference rows are sorted by coordinates too: advance to this prefix.
      auto less = [&](int64_t r) {
        for (int m = 0; m < prefix; ++m) {
          if (ref.prefix_coords[m][r] != coords[m]) return ref.prefix_coords[m][r] < coords[m];
        }
        return false;
      };
      while (row < rows && less(row)) ++row;
      bool match = row < rows;
      for (int m = 0; m < prefix && match; ++m) match = ref.prefix_coords[m][row] == coords[m];
      for (int64_t t = 0; t < ref.trailing; ++t) {
        const int64_t got_index = position * ref.trailing + t;
        if (match) {
          check(got_index, ReferenceValue(ref, row * ref.trailing + t),
                ref.magnitudes[row * ref.trailing + t], "position", position);
        } else {
          check(got_index, 0.0, 0.0, "padding position", position);
        }
      }
    }
  }
  if (mismatches > 0) {
    *message =
        std::to_string(mismatches) + " elements differ from the reference; first at " + first;
    return false;
  }
  return true;
}

RunResult VerifyThenTime(KernelRunner& runner, const Schedule& schedule,
                         const RunOptions& options) {
  RunOptions verify = options;
  verify.time = false;
  const auto start = std::chrono::steady_clock::now();
  RunResult checked = runner.Run(schedule, verify);
  const double ms = MsSince(start);
  if (!checked.ok()) return checked;
  // The pack time may be that of an earlier, cached pack: the estimate errs towards timing.
  const double run_ms = ms - checked.pack_ms;
  if (options.timing.max_ms_per_run > 0 && run_ms > options.timing.max_ms_per_run) {
    checked.status = RunStatus::kTimedOut;
    checked.message = "the verifying run took " + std::to_string(run_ms) +
                      " ms, over the limit of " + std::to_string(options.timing.max_ms_per_run) +
                      " ms";
    return checked;
  }
  RunOptions time = options;
  time.verify = false;
  RunResult timed = runner.Run(schedule, time);
  timed.verified = checked.verified;
  timed.max_relative_error = checked.max_relative_error;
  timed.pack_ms = checked.pack_ms;
  timed.compile_ms = checked.compile_ms;
  return timed;
}

}  // namespace sparsetune
