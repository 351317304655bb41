#pragma once

#include <dlfcn.h>

#include <chrono>
#include <memory>
#include <string>

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

// nullptr when the library has no such kernel.
std::unique_ptr<Baseline> MakeRsbBaseline(const BaselineOperands& operands, bool tuned);
std::unique_ptr<Baseline> MakeGraphBlasBaseline(const BaselineOperands& operands);

}  // namespace sparsetune
