#pragma once

#include <dlfcn.h>

#include <chrono>
#include <complex>
#include <memory>
#include <string>
#include <type_traits>

#include "base/elapsed.hpp"
#include "baselines/baseline.hpp"

namespace sparsetune {

// "prebuilt /path/to/library.so": the shared object `symbol` was loaded from, for a library
// that sparsetune does not compile.
inline std::string PrebuiltFrom(const void* symbol) {
  Dl_info info;
  if (dladdr(symbol, &info) == 0 || !info.dli_fname) return "prebuilt";
  return std::string("prebuilt ") + info.dli_fname;
}

// A library's value of type V (float, double or std::complex of them, which C's _Complex types
// match) from a real and an imaginary part: real types drop the imaginary one (a complex file
// under f32), as sparsetune's kernels do.
template <class V>
V FromParts(std::complex<double> value) {
  if constexpr (std::is_floating_point_v<V>) {
    return static_cast<V>(value.real());
  } else {
    return V(static_cast<typename V::value_type>(value.real()),
             static_cast<typename V::value_type>(value.imag()));
  }
}
template <class V>
std::complex<double> ToComplex(V value) {
  return std::complex<double>(value);
}

// nullptr when the library has no such kernel.
std::unique_ptr<Baseline> MakeRsbBaseline(const BaselineOperands& operands, bool tuned);
std::unique_ptr<Baseline> MakeGraphBlasBaseline(const BaselineOperands& operands);

}  // namespace sparsetune
