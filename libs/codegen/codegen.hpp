#pragma once

#include <string>

#include "base/dtype.hpp"
#include "ir/loop_nest.hpp"

namespace sparsetune {

enum class CodegenMode {
  // Split sizes, chunk and thread count are read from st_args, so one compiled object serves
  // every schedule that shares the loop structure and formats.
  kRuntimeParameters,
  // They are compile-time constants (for emitted kernels): the compiler can unroll blocks.
  kBaked,
};

// C++17/OpenMP source defining `extern "C" int sparsetune_kernel(const st_args*)`.
std::string GenerateKernelSource(const LoopNest& nest, DType dtype, CodegenMode mode);

}  // namespace sparsetune
