#pragma once

#include <cstddef>
#include <string>

namespace sparsetune {

// Element type of every value array of a kernel (sparse values, dense operands, outputs).
enum class DType { kF32, kF64 };

inline const char* DTypeName(DType dtype) {
  return dtype == DType::kF32 ? "f32" : "f64";
}
inline const char* DTypeCName(DType dtype) {
  return dtype == DType::kF32 ? "float" : "double";
}
inline size_t DTypeSize(DType dtype) {
  return dtype == DType::kF32 ? 4 : 8;
}

}  // namespace sparsetune
