#pragma once

#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "ir/loop_nest.hpp"
#include "tensor/format.hpp"

namespace sparsetune {

enum class CodegenMode {
  // Split sizes, chunk and thread count are read from st_args, so one compiled object serves
  // every schedule that shares the loop structure and formats.
  kRuntimeParameters,
  // Split sizes and chunk are compile-time constants (for emitted kernels): the compiler can
  // unroll blocks. The thread count still comes from st_args (0: OpenMP's).
  kBaked,
};

// C++17/OpenMP source defining `extern "C" int sparsetune_kernel(const st_args*)`, or, when
// `entry` is given, `static int <entry>(const st_args*)` (an emitted file holds several). The
// kernel reads each compressed level's coordinates as `encodings` says (one per level, as the
// packed operand stores them: PackedTensor::encodings()); empty means 32-bit absolute everywhere.
std::string GenerateKernelSource(const LoopNest& nest, DType dtype, CodegenMode mode,
                                 const std::vector<CoordinateEncoding>& encodings = {},
                                 const std::string& entry = "");

}  // namespace sparsetune
