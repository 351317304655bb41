#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/expression.hpp"

namespace sparsetune {

// A named kernel: its expression, which tensor is sparse, whether the output is sparse, and
// the default sizes of its dense-only indices (WACO's and SparseAuto's settings).
struct KernelDef {
  std::string name;
  std::string expression;
  std::string sparse;
  bool sparse_output = false;
  std::map<std::string, int64_t> dense_defaults;
  std::string description;
};

const std::vector<KernelDef>& KernelLibrary();
// nullptr when unknown.
const KernelDef* FindKernel(const std::string& name);
// The kernel's expression built; throws InputError listing the known kernels when unknown.
Expression KernelExpression(const std::string& name);
std::string KnownKernelNames();

}  // namespace sparsetune
