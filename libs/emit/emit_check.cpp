#include "emit/emit_check.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

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

struct LibraryCloser {
  void operator()(void* handle) const { dlclose(handle); }
};

}  // namespace

EmittedCheck CheckEmittedKernel(const std::string& dir, const std::string& kernel,
                                const Expression& expression, const IndexSizes& sizes, DType dtype,
                                const CooTensor& tensor) {
  EmittedCheck check;
  const std::string name = EmittedName(kernel);
  const std::string source = (fs::path(dir) / (name + ".cpp")).string();
  const std::string object = (fs::path(dir) / (name + ".so")).string();
  const auto start = std::chrono::steady_clock::now();
  std::string compiler_output;
  const int status = RunCapturing("c++ -O3 -fopenmp -std=c++17 -shared -fPIC -Werror=all -o " +
                                      ShellQuote(object) + " " + ShellQuote(source),
                                  &compiler_output);
  check.compile_ms = MsSince(start);
  if (status != 0) {
    check.reason = "c++ failed on " + source + ": " + compiler_output;
    return check;
  }
  // RTLD_LOCAL: two checked kernels of the same name must not resolve to each other's symbols.
  std::unique_ptr<void, LibraryCloser> handle(dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!handle) {
    check.reason = std::string("cannot load ") + object + ": " + dlerror();
    return check;
  }
  using PackFn = void* (*)(const int64_t*, int64_t, const int32_t* const*, const void*);
  using ComputeFn = int (*)(const void*, const void* const*, void*);
  using SizeFn = int64_t (*)(const void*);
  using FreeFn = void (*)(void*);
  using ErrorFn = const char* (*)();
  auto symbol = [&](const std::string& suffix) {
    return dlsym(handle.get(), (name + suffix).c_str());
  };
  auto pack = reinterpret_cast<PackFn>(symbol("_pack_coo"));
  auto compute = reinterpret_cast<ComputeFn>(symbol("_compute"));
  auto output_size = reinterpret_cast<SizeFn>(symbol("_output_size"));
  auto release = reinterpret_cast<FreeFn>(symbol("_free"));
  auto last_error = reinterpret_cast<ErrorFn>(symbol("_last_error"));
  if (!pack || !compute || !output_size || !release || !last_error) {
    check.reason = object + " lacks a function of the C ABI";
    return check;
  }

  ValueBuffer values(dtype, tensor.nnz());
  for (int64_t k = 0; k < tensor.nnz(); ++k) values.Set(k, tensor.values[k]);
  std::vector<const int32_t*> coords;
  for (const auto& mode : tensor.coords) coords.push_back(mode.data());
  std::unique_ptr<void, FreeFn> operand(
      pack(tensor.dims.data(), tensor.nnz(), coords.data(), values.data()), release);
  if (!operand) {
    check.reason = std::string("the emitted packer refused the matrix: ") + last_error();
    return check;
  }
  const std::vector<ValueBuffer> inputs = MakeDenseInputs(expression, sizes, dtype);
  std::vector<const void*> dense_inputs;
  for (size_t t = 1; t < expression.tensors.size(); ++t) {
    if (static_cast<int>(t) != expression.sparse) dense_inputs.push_back(inputs[t].data());
  }
  const ReferenceResult ref = ComputeReference(expression, tensor, sizes, inputs);
  const int64_t size = output_size(operand.get());
  if (size != static_cast<int64_t>(ref.values.size())) {
    check.reason = "the output holds " + std::to_string(size) + " values, the reference " +
                   std::to_string(ref.values.size());
    return check;
  }
  ValueBuffer output(dtype, size);
  output.Fill(std::nan(""));
  if (compute(operand.get(), dense_inputs.data(), output.data()) != 0) {
    check.reason = std::string("compute failed: ") + last_error();
    return check;
  }
  const double rtol = dtype == DType::kF32 ? 2e-4 : 1e-10;
  int64_t mismatches = 0;
  for (int64_t q = 0; q < size; ++q) {
    const double scale = std::max(1.0, ref.magnitudes[q]);
    const double error = std::fabs(output.Get(q) - ref.values[q]);
    if (!std::isfinite(output.Get(q)) || error > rtol * scale) {
      if (mismatches++ == 0) {
        check.reason = "element " + std::to_string(q) + ": got " + std::to_string(output.Get(q)) +
                       ", expected " + std::to_string(ref.values[q]);
      }
    } else {
      check.max_error = std::max(check.max_error, error / scale);
    }
  }
  if (mismatches > 0) {
    check.reason =
        std::to_string(mismatches) + " values differ from the reference; first " + check.reason;
    return check;
  }
  check.ok = true;
  return check;
}

}  // namespace sparsetune
