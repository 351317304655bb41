// The module's C entry points (module_abi.hpp): every error becomes a code and a message.
#include "base/errors.hpp"
#include "costmodel/module_abi.hpp"
#include "costmodel/torch/torch_model.hpp"

namespace sparsetune {
nlohmann::json TrainInModule(const TrainOptions& options, const TrainingSet& set);
nlohmann::json SelfCheckInModule();
}  // namespace sparsetune

using sparsetune::ModuleError;

extern "C" sparsetune::CostModel* sparsetune_open_cost_model(const std::string& dir,
                                                             const std::string& kernel,
                                                             ModuleError* error) {
  try {
    return new sparsetune::TorchCostModel(dir, kernel);
  } catch (const sparsetune::InputError& e) {
    *error = {2, e.what()};
  } catch (const std::exception& e) {
    *error = {3, e.what()};
  }
  return nullptr;
}

extern "C" bool sparsetune_train_cost_model(const sparsetune::TrainOptions& options,
                                            const sparsetune::TrainingSet& set,
                                            nlohmann::json* metrics, ModuleError* error) {
  try {
    *metrics = sparsetune::TrainInModule(options, set);
    return true;
  } catch (const sparsetune::InputError& e) {
    *error = {2, e.what()};
  } catch (const std::exception& e) {
    *error = {3, e.what()};
  }
  return false;
}

extern "C" bool sparsetune_cost_model_self_check(nlohmann::json* result, ModuleError* error) {
  try {
    *result = sparsetune::SelfCheckInModule();
    return true;
  } catch (const std::exception& e) {
    *error = {3, e.what()};
  }
  return false;
}
