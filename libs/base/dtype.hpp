#pragma once

#include <cstddef>
#include <string>

namespace sparsetune {

// Element type of every value array of a kernel (sparse values, dense operands, outputs).
// Complex values are (real, imaginary) pairs of the real type, as std::complex and C's
// _Complex store them.
enum class DType { kF32, kF64, kC64, kC128 };

inline bool IsComplex(DType dtype) {
  return dtype == DType::kC64 || dtype == DType::kC128;
}
// The type of one real or imaginary part.
inline DType RealPart(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kC64 ? DType::kF32 : DType::kF64;
}
inline const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kC64:
      return "c64";
    case DType::kC128:
      return "c128";
  }
  return "f32";
}
// The C++ type of generated kernels and baselines.
inline const char* DTypeCName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float";
    case DType::kF64:
      return "double";
    case DType::kC64:
      return "std::complex<float>";
    case DType::kC128:
      return "std::complex<double>";
  }
  return "float";
}
// The C type of one real or imaginary part, as emitted headers' C ABI passes values.
inline const char* DTypeScalarCName(DType dtype) {
  return RealPart(dtype) == DType::kF32 ? "float" : "double";
}
inline size_t DTypeSize(DType dtype) {
  return (RealPart(dtype) == DType::kF32 ? 4 : 8) * (IsComplex(dtype) ? 2 : 1);
}
// The dtype of a name ("f32", "f64", "c64", "c128"); false for anything else.
inline bool ParseDTypeName(const std::string& name, DType* dtype) {
  for (DType d : {DType::kF32, DType::kF64, DType::kC64, DType::kC128}) {
    if (name == DTypeName(d)) {
      *dtype = d;
      return true;
    }
  }
  return false;
}

}  // namespace sparsetune
