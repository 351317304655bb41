// Opens the libraries' module on first use: GraphBLAS and librsb take about 8 ms to load and
// relocate, which `sparsetune query` and every other command that never benchmarks would pay
// at start-up.
#include "baselines/baseline.hpp"

#include <dlfcn.h>

#include <mutex>

#include "base/errors.hpp"
#include "base/module.hpp"
#include "baselines/contenders.hpp"

namespace sparsetune {

namespace {

using MakeBaselinesFn = void (*)(const BaselineOperands&, std::vector<std::unique_ptr<Baseline>>*);

MakeBaselinesFn LoadModule() {
  static MakeBaselinesFn make = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path =
        FindModule("libsparsetune_baselines_libraries.so", "SPARSETUNE_BASELINES_MODULE",
                   SPARSETUNE_BASELINES_MODULE_PATH);
    // The module stays loaded: the baselines it makes live in its code.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = "cannot load the library baselines module " + path + ": " + dlerror() +
              " (point SPARSETUNE_BASELINES_MODULE at it)";
      return;
    }
    make = reinterpret_cast<MakeBaselinesFn>(dlsym(handle, "sparsetune_make_baselines"));
    if (!make) error = path + " is not a sparsetune baselines module";
  });
  if (!error.empty()) throw InternalError(error);
  return make;
}

}  // namespace

bool HasBaselines(const std::string& kernel) {
  return kernel == "spmv" || kernel == "spmm" || kernel == "sddmm" || kernel == "sddmm_nt";
}

std::vector<std::unique_ptr<Baseline>> MakeBaselines(const BaselineOperands& operands) {
  std::vector<std::unique_ptr<Baseline>> out;
  auto add = [&](std::unique_ptr<Baseline> b) {
    if (b) out.push_back(std::move(b));
  };
  add(MakeJitBaseline(operands, "hand"));
  add(MakeJitBaseline(operands, "hand_dynamic"));
  add(MakeJitBaseline(operands, "eigen"));
  LoadModule()(operands, &out);
  add(MakeTorchBaseline(operands));
  return out;
}

}  // namespace sparsetune
