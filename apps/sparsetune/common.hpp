#pragma once

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/dtype.hpp"
#include "ir/expression.hpp"
#include "ir/schedule.hpp"

namespace sparsetune::cli {

// The kernel a command works on: a named kernel or an index-notation expression.
struct KernelOptions {
  std::string kernel;
  std::string expr;
  std::string sparse;
  bool sparse_output = false;
  std::vector<std::string> dense;
  std::string dtype = "f32";
};

void AddKernelOptions(CLI::App* sub, KernelOptions& options, bool required = true);

struct ResolvedKernel {
  std::string name;  // kernel name, or "expr" for --expr
  Expression expression;
  std::map<std::string, int64_t> dense_sizes;  // defaults overridden by --dense
  DType dtype = DType::kF32;
};

ResolvedKernel ResolveKernel(const KernelOptions& options);

// Reads a JSON file; syntax errors name the file, line and cause.
nlohmann::json ReadJsonFile(const std::string& path);

// "default" (FixedCSR) or a JSON file.
Schedule LoadSchedule(const std::string& spec, const Expression& expression);

}  // namespace sparsetune::cli
