// libFuzzer target: schedule JSON, the one way schedules come in from files, the database,
// imports and model sets (ParseScheduleText). Refusals are one InputError line; an accepted
// schedule keeps ScheduleLimits, its canonical text reads back to itself, and lowering it
// against several kernels and packing a small operand in the format it asks for either works
// or refuses: no crash, leak, undefined behaviour, hang or runaway allocation.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "ir/schedule.hpp"
#include "tensor/coo.hpp"
#include "tensor/pack.hpp"

namespace {

using namespace sparsetune;

CooTensor SmallOperand(int order) {
  CooTensor t;
  t.dims.assign(order, 7);
  t.coords.resize(order);
  for (int e = 0; e < 9; ++e) {
    for (int m = 0; m < order; ++m) t.coords[m].push_back((e * (m + 2) + m) % 7);
    t.values.push_back(1.0 + e);
  }
  t.Canonicalize();
  return t;
}

void OneLine(const std::string& message) {
  if (message.empty() || message.find('\n') != std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<Expression> kernels = {
      KernelExpression("spmv"), KernelExpression("spmm"), KernelExpression("sddmm"),
      KernelExpression("sddmm_spmm"), KernelExpression("mttkrp")};
  static const CooTensor matrix = SmallOperand(2), tensor = SmallOperand(3);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Schedule s;
  try {
    s = ParseScheduleText(text, "fuzz.json");
  } catch (const InputError& e) {
    OneLine(e.what());
    return 0;
  }
  if (!s.LimitViolation().empty()) std::abort();
  // The canonical text is a schedule again, and a fixed point.
  const std::string canonical = s.CanonicalJson();
  Schedule back;
  try {
    back = ParseScheduleText(canonical, "canonical");
  } catch (const InputError&) {
    std::abort();
  }
  if (back.CanonicalJson() != canonical) std::abort();
  s.Summary();
  for (const Expression& e : kernels) {
    const LowerOutcome lowered = Lower(e, s);
    if (!lowered.nest) {
      OneLine(lowered.error);
      continue;
    }
    lowered.nest->ToString();
    const CooTensor& operand = e.sparse_input().indices.size() == 2 ? matrix : tensor;
    const PackOutcome packed = Pack(operand, lowered.nest->storage, DType::kF32);
    if (!packed.packed) OneLine(packed.refusal);
  }
  return 0;
}
