// Opens the LibTorch module on first use: commands that never score a schedule never pay
// LibTorch's start-up cost.
#include <dlfcn.h>

#include <mutex>

#include "base/errors.hpp"
#include "base/module.hpp"
#include "costmodel/model_files.hpp"
#include "costmodel/module_abi.hpp"

namespace sparsetune {

namespace {

struct Module {
  OpenCostModelFn open = nullptr;
  TrainCostModelFn train = nullptr;
  SelfCheckFn self_check = nullptr;
};

constexpr const char* kModuleFile = "libsparsetune_costmodel_torch.so";

const Module& LoadModule() {
  static Module module;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path =
        FindModule(kModuleFile, "SPARSETUNE_COSTMODEL_MODULE", SPARSETUNE_COSTMODEL_MODULE_PATH);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = "cannot load the cost-model module " + path + ": " + dlerror() +
              " (build it with scripts/build.sh sparsetune_costmodel_torch, or point "
              "SPARSETUNE_COSTMODEL_MODULE at it)";
      return;
    }
    module.open = reinterpret_cast<OpenCostModelFn>(dlsym(handle, kOpenCostModelSymbol));
    module.train = reinterpret_cast<TrainCostModelFn>(dlsym(handle, kTrainCostModelSymbol));
    module.self_check = reinterpret_cast<SelfCheckFn>(dlsym(handle, kSelfCheckSymbol));
    if (!module.open || !module.train || !module.self_check)
      error = path + " is not a sparsetune cost-model module";
  });
  if (!error.empty()) throw InternalError(error);
  return module;
}

[[noreturn]] void Rethrow(const ModuleError& e) {
  if (e.code == 2) throw InputError(e.message);
  throw InternalError(e.message);
}

}  // namespace

std::unique_ptr<CostModel> LoadCostModel(const std::string& model_dir, const std::string& kernel) {
  ReadModelManifest(model_dir, kernel);  // the plain checks first, without LibTorch
  ModuleError error;
  CostModel* model = LoadModule().open(model_dir, kernel, &error);
  if (!model) Rethrow(error);
  return std::unique_ptr<CostModel>(model);
}

nlohmann::json TrainCostModel(const TrainOptions& options, const TrainingSet& set) {
  nlohmann::json metrics;
  ModuleError error;
  if (!LoadModule().train(options, set, &metrics, &error)) Rethrow(error);
  return metrics;
}

}  // namespace sparsetune

namespace sparsetune {

nlohmann::json CostModelSelfCheck() {
  nlohmann::json result;
  ModuleError error;
  if (!LoadModule().self_check(&result, &error)) Rethrow(error);
  return result;
}

}  // namespace sparsetune
