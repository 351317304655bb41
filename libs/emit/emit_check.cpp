#include "emit/emit_check.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>

#include "base/compiler.hpp"
#include "base/elapsed.hpp"
#include "emit/emit.hpp"
#include "measure/reference.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

// Runs `command`, returning its exit status and combined output.
int RunCapturing(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output->append(buffer, n);
  return pclose(pipe);
}

// Calls fn(a, sizes..., rest...): the emitted calls take one int64_t per dense size between the
// operand and their arrays.
template <class R, class... Rest>
R CallSized(void* fn, const void* a, const std::vector<int64_t>& s, Rest... rest) {
  switch (s.size()) {
    case 0:
      return reinterpret_cast<R (*)(const void*, Rest...)>(fn)(a, rest...);
    case 1:
      return reinterpret_cast<R (*)(const void*, int64_t, Rest...)>(fn)(a, s[0], rest...);
    case 2:
      return reinterpret_cast<R (*)(const void*, int64_t, int64_t, Rest...)>(fn)(a, s[0], s[1],
                                                                                 rest...);
    case 3:
      return reinterpret_cast<R (*)(const void*, int64_t, int64_t, int64_t, Rest...)>(fn)(
          a, s[0], s[1], s[2], rest...);
    case 4:
      return reinterpret_cast<R (*)(const void*, int64_t, int64_t, int64_t, int64_t, Rest...)>(fn)(
          a, s[0], s[1], s[2], s[3], rest...);
  }
  return R(-1);
}

std::vector<int64_t> SizesOf(const std::vector<std::string>& indices, const IndexSizes& sizes) {
  std::vector<int64_t> out;
  for (const auto& index : indices) out.push_back(sizes.at(index));
  return out;
}

// Compares an emitted output with the reference; on a mismatch, says where in *reason.
bool SameAsReference(const ValueBuffer& output, const ReferenceResult& ref, DType dtype,
                     const std::string& what, std::string* reason, double* max_error) {
  if (output.size() != static_cast<int64_t>(ref.values.size())) {
    *reason = what + ": the output holds " + std::to_string(output.size()) +
              " values, the reference " + std::to_string(ref.values.size());
    return false;
  }
  int64_t mismatches = 0;
  std::string first;
  for (int64_t q = 0; q < output.size(); ++q) {
    // Relative to the terms' magnitudes, at least 1.
    const double magnitude = std::max(1.0, ref.magnitudes[q]);
    double error = 0;
    if (!MatchesReference(output.GetComplex(q), ReferenceValue(ref, q), magnitude, dtype, &error)) {
      if (mismatches++ == 0) {
        first = "element " + std::to_string(q) + ": got " + ValueText(output.GetComplex(q), dtype) +
                ", expected " + ValueText(ReferenceValue(ref, q), dtype);
      }
    } else {
      *max_error = std::max(*max_error, error);
    }
  }
  if (mismatches == 0) return true;
  *reason = what + ": " + std::to_string(mismatches) + " values differ from the reference; first " +
            first;
  return false;
}

}  // namespace

CompiledEmittedKernel::CompiledEmittedKernel(const std::string& dir, const std::string& kernel,
                                             const std::vector<std::string>& compiler_arguments)
    : name_(EmittedName(kernel)) {
  const std::string source = (fs::path(dir) / (name_ + ".cpp")).string();
  const std::string object = (fs::path(dir) / (name_ + ".so")).string();
  std::string command = "c++ -O3 -fopenmp -std=c++17 -shared -fPIC -Werror=all -o " +
                        ShellQuote(object) + " " + ShellQuote(source);
  for (const auto& argument : compiler_arguments) command += " " + ShellQuote(argument);
  const auto start = std::chrono::steady_clock::now();
  std::string compiler_output;
  const int status = RunCapturing(command, &compiler_output);
  compile_ms_ = MsSince(start);
  if (status != 0) {
    failure_ = "c++ failed on " + source + ": " + compiler_output;
    return;
  }
  // RTLD_LOCAL: two checked kernels of the same name must not resolve to each other's symbols.
  handle_ = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) failure_ = std::string("cannot load ") + object + ": " + dlerror();
}

CompiledEmittedKernel::~CompiledEmittedKernel() {
  if (handle_) dlclose(handle_);
}

void* CompiledEmittedKernel::Symbol(const std::string& suffix) const {
  return handle_ ? dlsym(handle_, (name_ + suffix).c_str()) : nullptr;
}

namespace {

// The functions of an emitted kernel's C ABI.
struct EmittedAbi {
  using PackFn = void* (*)(const int64_t*, int64_t, const int32_t* const*, const void*);
  using UpdateFn = int (*)(void*, const void*);
  using WideFn = int (*)(const void*);
  using FreeFn = void (*)(void*);
  using ErrorFn = const char* (*)();
  PackFn pack = nullptr;
  UpdateFn update = nullptr;
  WideFn wide = nullptr;
  void* compute = nullptr;
  void* compute_tuned = nullptr;
  void* output_size = nullptr;
  FreeFn release = nullptr;
  ErrorFn last_error = nullptr;
  std::vector<void*> to_tuned, from_tuned;  // per conversion of the interface
  bool complete = false;
};

EmittedAbi FindAbi(const CompiledEmittedKernel& kernel, const EmittedInterface& interface) {
  EmittedAbi abi;
  abi.pack = reinterpret_cast<EmittedAbi::PackFn>(kernel.Symbol("_pack_coo"));
  abi.update = reinterpret_cast<EmittedAbi::UpdateFn>(kernel.Symbol("_update_values"));
  abi.wide = reinterpret_cast<EmittedAbi::WideFn>(kernel.Symbol("_wide_coordinates"));
  abi.compute = kernel.Symbol("_compute");
  abi.compute_tuned = kernel.Symbol("_compute_tuned_order");
  abi.output_size = kernel.Symbol("_output_size");
  abi.release = reinterpret_cast<EmittedAbi::FreeFn>(kernel.Symbol("_free"));
  abi.last_error = reinterpret_cast<EmittedAbi::ErrorFn>(kernel.Symbol("_last_error"));
  abi.complete = abi.pack && abi.update && abi.wide && abi.compute && abi.compute_tuned &&
                 abi.output_size && abi.release && abi.last_error;
  for (const auto& conversion : interface.conversions) {
    abi.to_tuned.push_back(kernel.Symbol("_to_tuned_order_" + conversion.name));
    abi.from_tuned.push_back(kernel.Symbol("_from_tuned_order_" + conversion.name));
    abi.complete = abi.complete && abi.to_tuned.back() && abi.from_tuned.back();
  }
  return abi;
}

// The entries shuffled, as a user may give them: values then go through the packer's position
// of each entry.
struct ShuffledEntries {
  explicit ShuffledEntries(const CooTensor& tensor) : order(tensor.nnz()) {
    const int64_t nnz = tensor.nnz();
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(11));
    coords.assign(tensor.order(), std::vector<int32_t>(nnz));
    for (int m = 0; m < tensor.order(); ++m) {
      for (int64_t r = 0; r < nnz; ++r) coords[m][r] = tensor.coords[m][order[r]];
    }
    for (const auto& mode : coords) pointers.push_back(mode.data());
  }
  ValueBuffer Values(const CooTensor& t, DType dtype) const {
    ValueBuffer values(dtype, static_cast<int64_t>(order.size()));
    for (size_t r = 0; r < order.size(); ++r)
      values.SetComplex(r, {t.values[order[r]], t.Imag(order[r])});
    return values;
  }
  std::vector<int64_t> order;
  std::vector<std::vector<int32_t>> coords;
  std::vector<const int32_t*> pointers;
};

// The dense inputs' arrays in the order the emitted calls take them.
std::vector<const void*> DensePointers(const Expression& expression,
                                       const std::vector<ValueBuffer>& inputs) {
  std::vector<const void*> pointers;
  for (size_t t = 1; t < expression.tensors.size(); ++t) {
    if (static_cast<int>(t) != expression.sparse) pointers.push_back(inputs[t].data());
  }
  return pointers;
}

// The tuned order: operands converted once, the kernel called on them, the output back;
// compared with `ref`.
bool CheckTunedOrder(const EmittedAbi& abi, void* operand, const EmittedInterface& interface,
                     const Expression& expression, const IndexSizes& sizes, DType dtype,
                     const std::vector<ValueBuffer>& inputs, int64_t size,
                     const ReferenceResult& ref, EmittedCheck& check) {
  const std::vector<int64_t> dense_sizes = SizesOf(interface.dense_indices, sizes);
  std::vector<ValueBuffer> tuned_inputs(inputs.begin(), inputs.end());
  ValueBuffer tuned_output(dtype, size);
  tuned_output.Fill(std::nan(""));
  for (size_t c = 0; c < interface.conversions.size(); ++c) {
    const auto& conversion = interface.conversions[c];
    if (conversion.tensor == 0) continue;
    const int status =
        CallSized<int>(abi.to_tuned[c], operand, SizesOf(conversion.dense_indices, sizes),
                       inputs[conversion.tensor].data(), tuned_inputs[conversion.tensor].data());
    if (status != 0) {
      check.reason = "to_tuned_order_" + conversion.name + " failed: " + abi.last_error();
      return false;
    }
  }
  const std::vector<const void*> tuned_pointers = DensePointers(expression, tuned_inputs);
  if (CallSized<int>(abi.compute_tuned, operand, dense_sizes,
                     static_cast<const void* const*>(tuned_pointers.data()),
                     tuned_output.data()) != 0) {
    check.reason = std::string("compute_tuned_order failed: ") + abi.last_error();
    return false;
  }
  ValueBuffer output(dtype, size);
  output.Fill(std::nan(""));
  bool output_converted = false;
  for (size_t c = 0; c < interface.conversions.size(); ++c) {
    const auto& conversion = interface.conversions[c];
    if (conversion.tensor != 0) continue;
    output_converted = true;
    if (CallSized<int>(abi.from_tuned[c], operand, SizesOf(conversion.dense_indices, sizes),
                       static_cast<const void*>(tuned_output.data()), output.data()) != 0) {
      check.reason = "from_tuned_order_" + conversion.name + " failed: " + abi.last_error();
      return false;
    }
  }
  return SameAsReference(output_converted ? output : tuned_output, ref, dtype,
                         "compute_tuned_order", &check.reason, &check.max_error);
}

}  // namespace

EmittedCheck CompiledEmittedKernel::Check(const Expression& expression, const IndexSizes& sizes,
                                          DType dtype, const CooTensor& tensor) const {
  EmittedCheck check;
  check.compile_ms = compile_ms_;
  if (!failure_.empty()) {
    check.reason = failure_;
    return check;
  }
  const EmittedInterface interface = DescribeEmittedInterface("", expression);
  const EmittedAbi abi = FindAbi(*this, interface);
  if (!abi.complete) {
    check.reason = name_ + " lacks a function of the C ABI";
    return check;
  }
  const std::vector<int64_t> dense_sizes = SizesOf(interface.dense_indices, sizes);
  if (dense_sizes.size() > 4) {
    check.reason = "the check calls kernels with up to 4 dense sizes, not " +
                   std::to_string(dense_sizes.size());
    return check;
  }

  const ShuffledEntries entries(tensor);
  std::unique_ptr<void, EmittedAbi::FreeFn> operand(
      abi.pack(tensor.dims.data(), tensor.nnz(), entries.pointers.data(),
               entries.Values(tensor, dtype).data()),
      abi.release);
  if (!operand) {
    check.reason = std::string("the emitted packer refused the matrix: ") + abi.last_error();
    return check;
  }
  check.wide_coordinates = abi.wide(operand.get()) == 1;

  const std::vector<ValueBuffer> inputs = MakeDenseInputs(expression, sizes, dtype);
  const std::vector<const void*> dense_inputs = DensePointers(expression, inputs);
  const int64_t size = CallSized<int64_t>(abi.output_size, operand.get(), dense_sizes);
  if (size < 0) {
    check.reason = std::string("output_size refused: ") + abi.last_error();
    return check;
  }
  auto compute_default = [&](ValueBuffer& output) {
    return CallSized<int>(abi.compute, operand.get(), dense_sizes,
                          static_cast<const void* const*>(dense_inputs.data()), output.data());
  };
  ValueBuffer output(dtype, size);
  output.Fill(std::nan(""));
  if (compute_default(output) != 0) {
    check.reason = std::string("compute failed: ") + abi.last_error();
    return check;
  }
  const ReferenceResult given_ref = ComputeReference(expression, tensor, sizes, inputs);
  if (!SameAsReference(output, given_ref, dtype, "compute", &check.reason, &check.max_error))
    return check;

  // Other values for the same entries, set without packing again (update_values).
  CooTensor updated = tensor;
  for (int64_t e = 0; e < tensor.nnz(); ++e)
    updated.values[e] = 0.5 - tensor.values[e] * 0.75 + e % 3;
  if (IsComplex(dtype)) {
    updated.imag.resize(tensor.nnz());
    for (int64_t e = 0; e < tensor.nnz(); ++e) updated.imag[e] = 0.25 * (e % 5) - tensor.Imag(e);
  }
  const ReferenceResult ref = ComputeReference(expression, updated, sizes, inputs);

  // The entries in canonical order, as from CSR: packed in place, without a ranking (or, renumbered
  // by rows only, copied row by row); then updated.
  {
    std::vector<const int32_t*> in_order;
    for (const auto& mode : tensor.coords) in_order.push_back(mode.data());
    ValueBuffer values(dtype, tensor.nnz());
    for (int64_t e = 0; e < tensor.nnz(); ++e)
      values.SetComplex(e, {tensor.values[e], tensor.Imag(e)});
    const auto pack_start = std::chrono::steady_clock::now();
    std::unique_ptr<void, EmittedAbi::FreeFn> packed_in_order(
        abi.pack(tensor.dims.data(), tensor.nnz(), in_order.data(), values.data()), abi.release);
    check.pack_in_order_ms = MsSince(pack_start);
    if (!packed_in_order) {
      check.reason =
          std::string("the emitted packer refused the entries in order: ") + abi.last_error();
      return check;
    }
    output.Fill(std::nan(""));
    if (CallSized<int>(abi.compute, packed_in_order.get(), dense_sizes,
                       static_cast<const void* const*>(dense_inputs.data()), output.data()) != 0) {
      check.reason = std::string("compute on the entries in order failed: ") + abi.last_error();
      return check;
    }
    if (!SameAsReference(output, given_ref, dtype, "compute on the entries in order", &check.reason,
                         &check.max_error))
      return check;
    for (int64_t e = 0; e < tensor.nnz(); ++e)
      values.SetComplex(e, {updated.values[e], updated.Imag(e)});
    output.Fill(std::nan(""));
    if (abi.update(packed_in_order.get(), values.data()) != 0 ||
        CallSized<int>(abi.compute, packed_in_order.get(), dense_sizes,
                       static_cast<const void* const*>(dense_inputs.data()), output.data()) != 0) {
      check.reason =
          std::string("update_values on the entries in order failed: ") + abi.last_error();
      return check;
    }
    if (!SameAsReference(output, ref, dtype, "compute after update_values on the entries in order",
                         &check.reason, &check.max_error))
      return check;
  }

  // The shuffled entries' operand, updated.
  if (abi.update(operand.get(), entries.Values(updated, dtype).data()) != 0) {
    check.reason = std::string("update_values failed: ") + abi.last_error();
    return check;
  }
  output.Fill(std::nan(""));
  if (compute_default(output) != 0) {
    check.reason = std::string("compute after update_values failed: ") + abi.last_error();
    return check;
  }
  if (!SameAsReference(output, ref, dtype, "compute after update_values", &check.reason,
                       &check.max_error))
    return check;
  check.ok = CheckTunedOrder(abi, operand.get(), interface, expression, sizes, dtype, inputs, size,
                             ref, check);
  return check;
}

EmittedCheck CheckEmittedKernel(const std::string& dir, const std::string& kernel,
                                const Expression& expression, const IndexSizes& sizes, DType dtype,
                                const CooTensor& tensor,
                                const std::vector<std::string>& compiler_arguments) {
  const CompiledEmittedKernel compiled(dir, kernel, compiler_arguments);
  return compiled.Check(expression, sizes, dtype, tensor);
}

}  // namespace sparsetune
