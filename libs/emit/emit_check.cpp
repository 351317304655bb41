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
  const double rtol = dtype == DType::kF32 ? 2e-4 : 1e-10;
  int64_t mismatches = 0;
  std::string first;
  for (int64_t q = 0; q < output.size(); ++q) {
    const double scale = std::max(1.0, ref.magnitudes[q]);
    const double error = std::fabs(output.Get(q) - ref.values[q]);
    if (!std::isfinite(output.Get(q)) || error > rtol * scale) {
      if (mismatches++ == 0) {
        first = "element " + std::to_string(q) + ": got " + std::to_string(output.Get(q)) +
                ", expected " + std::to_string(ref.values[q]);
      }
    } else {
      *max_error = std::max(*max_error, error / scale);
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

EmittedCheck CompiledEmittedKernel::Check(const Expression& expression, const IndexSizes& sizes,
                                          DType dtype, const CooTensor& tensor) const {
  EmittedCheck check;
  check.compile_ms = compile_ms_;
  if (!failure_.empty()) {
    check.reason = failure_;
    return check;
  }
  using PackFn = void* (*)(const int64_t*, int64_t, const int32_t* const*, const void*);
  using UpdateFn = int (*)(void*, const void*);
  using WideFn = int (*)(const void*);
  using FreeFn = void (*)(void*);
  using ErrorFn = const char* (*)();
  const EmittedInterface interface = DescribeEmittedInterface("", expression);
  auto pack = reinterpret_cast<PackFn>(Symbol("_pack_coo"));
  auto update = reinterpret_cast<UpdateFn>(Symbol("_update_values"));
  auto wide = reinterpret_cast<WideFn>(Symbol("_wide_coordinates"));
  void* compute = Symbol("_compute");
  void* compute_tuned = Symbol("_compute_tuned_order");
  void* output_size = Symbol("_output_size");
  auto release = reinterpret_cast<FreeFn>(Symbol("_free"));
  auto last_error = reinterpret_cast<ErrorFn>(Symbol("_last_error"));
  std::vector<void*> to_tuned, from_tuned;
  bool complete =
      pack && update && wide && compute && compute_tuned && output_size && release && last_error;
  for (const auto& conversion : interface.conversions) {
    to_tuned.push_back(Symbol("_to_tuned_order_" + conversion.name));
    from_tuned.push_back(Symbol("_from_tuned_order_" + conversion.name));
    complete = complete && to_tuned.back() && from_tuned.back();
  }
  if (!complete) {
    check.reason = name_ + " lacks a function of the C ABI";
    return check;
  }
  const std::vector<int64_t> dense_sizes = SizesOf(interface.dense_indices, sizes);
  if (dense_sizes.size() > 4) {
    check.reason = "the check calls kernels with up to 4 dense sizes, not " +
                   std::to_string(dense_sizes.size());
    return check;
  }

  // The entries shuffled, as a user may give them: values then go through the packer's
  // position of each entry.
  const int64_t nnz = tensor.nnz();
  std::vector<int64_t> shuffled(nnz);
  std::iota(shuffled.begin(), shuffled.end(), 0);
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(11));
  std::vector<std::vector<int32_t>> coords(tensor.order(), std::vector<int32_t>(nnz));
  for (int m = 0; m < tensor.order(); ++m) {
    for (int64_t r = 0; r < nnz; ++r) coords[m][r] = tensor.coords[m][shuffled[r]];
  }
  std::vector<const int32_t*> coord_pointers;
  for (const auto& mode : coords) coord_pointers.push_back(mode.data());
  auto values_in_given_order = [&](const CooTensor& t) {
    ValueBuffer values(dtype, nnz);
    for (int64_t r = 0; r < nnz; ++r) values.Set(r, t.values[shuffled[r]]);
    return values;
  };
  std::unique_ptr<void, FreeFn> operand(
      pack(tensor.dims.data(), nnz, coord_pointers.data(), values_in_given_order(tensor).data()),
      release);
  if (!operand) {
    check.reason = std::string("the emitted packer refused the matrix: ") + last_error();
    return check;
  }
  check.wide_coordinates = wide(operand.get()) == 1;

  const std::vector<ValueBuffer> inputs = MakeDenseInputs(expression, sizes, dtype);
  std::vector<const void*> dense_inputs;
  for (size_t t = 1; t < expression.tensors.size(); ++t) {
    if (static_cast<int>(t) != expression.sparse) dense_inputs.push_back(inputs[t].data());
  }
  const int64_t size = CallSized<int64_t>(output_size, operand.get(), dense_sizes);
  if (size < 0) {
    check.reason = std::string("output_size refused: ") + last_error();
    return check;
  }
  auto compute_default = [&](ValueBuffer& output) {
    return CallSized<int>(compute, operand.get(), dense_sizes,
                          static_cast<const void* const*>(dense_inputs.data()), output.data());
  };
  ValueBuffer output(dtype, size);
  output.Fill(std::nan(""));
  if (compute_default(output) != 0) {
    check.reason = std::string("compute failed: ") + last_error();
    return check;
  }
  if (!SameAsReference(output, ComputeReference(expression, tensor, sizes, inputs), dtype,
                       "compute", &check.reason, &check.max_error))
    return check;

  // Other values for the same entries, without packing again.
  CooTensor updated = tensor;
  for (int64_t e = 0; e < nnz; ++e) updated.values[e] = 0.5 - tensor.values[e] * 0.75 + e % 3;
  if (update(operand.get(), values_in_given_order(updated).data()) != 0) {
    check.reason = std::string("update_values failed: ") + last_error();
    return check;
  }
  const ReferenceResult ref = ComputeReference(expression, updated, sizes, inputs);
  output.Fill(std::nan(""));
  if (compute_default(output) != 0) {
    check.reason = std::string("compute after update_values failed: ") + last_error();
    return check;
  }
  if (!SameAsReference(output, ref, dtype, "compute after update_values", &check.reason,
                       &check.max_error))
    return check;

  // The tuned order: operands converted once, the kernel called on them, the output back.
  std::vector<ValueBuffer> tuned_inputs(inputs.begin(), inputs.end());
  ValueBuffer tuned_output(dtype, size);
  tuned_output.Fill(std::nan(""));
  for (size_t c = 0; c < interface.conversions.size(); ++c) {
    const auto& conversion = interface.conversions[c];
    if (conversion.tensor == 0) continue;
    const int status =
        CallSized<int>(to_tuned[c], operand.get(), SizesOf(conversion.dense_indices, sizes),
                       inputs[conversion.tensor].data(), tuned_inputs[conversion.tensor].data());
    if (status != 0) {
      check.reason = "to_tuned_order_" + conversion.name + " failed: " + last_error();
      return check;
    }
  }
  std::vector<const void*> tuned_pointers;
  for (size_t t = 1; t < expression.tensors.size(); ++t) {
    if (static_cast<int>(t) != expression.sparse) tuned_pointers.push_back(tuned_inputs[t].data());
  }
  if (CallSized<int>(compute_tuned, operand.get(), dense_sizes,
                     static_cast<const void* const*>(tuned_pointers.data()),
                     tuned_output.data()) != 0) {
    check.reason = std::string("compute_tuned_order failed: ") + last_error();
    return check;
  }
  output.Fill(std::nan(""));
  bool output_converted = false;
  for (size_t c = 0; c < interface.conversions.size(); ++c) {
    const auto& conversion = interface.conversions[c];
    if (conversion.tensor != 0) continue;
    output_converted = true;
    if (CallSized<int>(from_tuned[c], operand.get(), SizesOf(conversion.dense_indices, sizes),
                       static_cast<const void*>(tuned_output.data()), output.data()) != 0) {
      check.reason = "from_tuned_order_" + conversion.name + " failed: " + last_error();
      return check;
    }
  }
  if (!SameAsReference(output_converted ? output : tuned_output, ref, dtype, "compute_tuned_order",
                       &check.reason, &check.max_error))
    return check;
  check.ok = true;
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
