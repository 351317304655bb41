// Every stored winner of the given matrices, as a user gets it: `query --emit`'s files,
// compiled by the system compiler alone (c++ -O3 -fopenmp), packed from the matrix's COO
// entries through the C ABI and checked against the reference, at `run`'s tolerance.
//
// Usage: emitted_winners --db F --kernel K [--kernel K...] FILE|DIR...
// Prints one line per matrix and kernel (checked, or why not) and a count; exits 1 when an
// emitted kernel fails to compile or differs from the reference. A matrix without a stored
// winner for this machine is listed as a miss and does not count as a failure.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emit/emit.hpp"
#include "emit/emit_check.hpp"
#include "io/read.hpp"
#include "ir/kernels.hpp"
#include "ir/schedule.hpp"
#include "tune/query.hpp"
#include "tune/tune.hpp"

namespace fs = std::filesystem;
using namespace sparsetune;

int main(int argc, char** argv) {
  std::string db;
  std::vector<std::string> kernels, inputs;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--db" && a + 1 < argc) {
      db = argv[++a];
    } else if (arg == "--kernel" && a + 1 < argc) {
      kernels.push_back(argv[++a]);
    } else if (!arg.empty() && arg[0] != '-') {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr,
                   "usage: emitted_winners --db F --kernel K [--kernel K...] FILE|DIR...\n");
      return 2;
    }
  }
  if (db.empty() || kernels.empty() || inputs.empty()) {
    std::fprintf(stderr, "usage: emitted_winners --db F --kernel K [--kernel K...] FILE|DIR...\n");
    return 2;
  }
  std::vector<std::string> files;
  for (const auto& input : inputs) {
    if (fs::is_directory(input)) {
      for (const auto& entry : fs::directory_iterator(input)) {
        if (entry.path().extension() == ".mtx" || entry.path().extension() == ".tns")
          files.push_back(entry.path().string());
      }
    } else {
      files.push_back(input);
    }
  }
  std::sort(files.begin(), files.end());
  const fs::path scratch =
      fs::temp_directory_path() / ("emitted-winners-" + std::to_string(getpid()));
  int checked = 0, misses = 0, failures = 0;
  double compile_total_ms = 0, worst_error = 0;
  for (const auto& file : files) {
    const std::string name = fs::path(file).stem().string();
    try {
      const CooTensor tensor = ReadTensorFile(file);
      for (const auto& kernel : kernels) {
        const KernelDef* def = FindKernel(kernel);
        if (!def) {
          std::fprintf(stderr, "emitted_winners: unknown kernel %s\n", kernel.c_str());
          return 2;
        }
        const Expression e = KernelExpression(kernel);
        if (static_cast<int>(tensor.dims.size()) !=
            static_cast<int>(e.sparse_input().indices.size()))
          continue;
        QueryRequest request;
        request.path = file;
        request.kernel = kernel;
        request.expression = e;
        request.dense = def->dense_defaults;
        request.db_path = db;
        const QueryAnswer answer = Query(request);
        if (!answer.hit) {
          std::printf("%-28s %-7s miss\n", name.c_str(), kernel.c_str());
          ++misses;
          continue;
        }
        const Schedule winner =
            Schedule::FromJson(nlohmann::json::parse(answer.winner_json), "winner");
        const IndexSizes sizes = ResolveIndexSizes(e, tensor.dims, def->dense_defaults);
        const fs::path dir = scratch / (name + "-" + kernel);
        EmitKernel(dir.string(), kernel, e, sizes, request.dtype, winner, &tensor);
        const EmittedCheck check =
            CheckEmittedKernel(dir.string(), kernel, e, sizes, request.dtype, tensor);
        compile_total_ms += check.compile_ms;
        ++checked;
        if (check.ok) {
          worst_error = std::max(worst_error, check.max_error);
          std::printf("%-28s %-7s ok   compile %6.0f ms  pack %8.1f ms  max relative error %.2e\n",
                      name.c_str(), kernel.c_str(), check.compile_ms, check.pack_in_order_ms,
                      check.max_error);
          fs::remove_all(dir);
        } else {
          ++failures;
          std::printf("%-28s %-7s FAIL %s (files kept in %s)\n", name.c_str(), kernel.c_str(),
                      check.reason.c_str(), dir.c_str());
        }
        std::fflush(stdout);
      }
    } catch (const std::exception& error) {
      ++failures;
      std::printf("%-28s error %s\n", name.c_str(), error.what());
    }
  }
  std::printf(
      "%d emitted kernels compiled and checked: %d reproduce the reference, %d fail; %d misses; "
      "compile %.1f s in all; largest relative error %.2e\n",
      checked, checked - failures, failures, misses, compile_total_ms / 1000, worst_error);
  if (failures == 0) fs::remove_all(scratch);
  return failures == 0 ? 0 : 1;
}
