// Opens the LibTorch module on first use: commands that never score a schedule never pay
// LibTorch's start-up cost.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "base/errors.hpp"
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

// $SPARSETUNE_COSTMODEL_MODULE, else beside the executable (the build puts it there), else in
// ../lib/sparsetune of an installed tree, else where this build made it.
std::string ModulePath() {
  if (const char* env = std::getenv("SPARSETUNE_COSTMODEL_MODULE")) return env;
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    for (const fs::path& candidate :
         {exe.parent_path() / kModuleFile, exe.parent_path() / "../lib/sparsetune" / kModuleFile}) {
      if (fs::is_regular_file(candidate, error)) return candidate.string();
    }
  }
  return SPARSETUNE_COSTMODEL_MODULE_PATH;
}

const Module& LoadModule() {
  static Module module;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path = ModulePath();
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

nlohmann::json TrainCostModel(const TrainOptions& options) {
  nlohmann::json metrics;
  ModuleError error;
  if (!LoadModule().train(options, &metrics, &error)) Rethrow(error);
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
