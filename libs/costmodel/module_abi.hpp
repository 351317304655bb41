// The entry points of the LibTorch module (libsparsetune_costmodel_torch.so), opened with
// dlopen by loader.cpp. Errors come back as a code (2: bad input, 3: internal) and a message,
// never as exceptions across the module boundary.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/cost_model.hpp"
#include "costmodel/training.hpp"

namespace sparsetune {

struct ModuleError {
  int code = 0;
  std::string message;
};

using OpenCostModelFn = CostModel* (*)(const std::string& dir, const std::string& kernel,
                                       ModuleError* error);
using TrainCostModelFn = bool (*)(const TrainOptions& options, const TrainingSet& set,
                                  nlohmann::json* metrics, ModuleError* error);

using SelfCheckFn = bool (*)(nlohmann::json* result, ModuleError* error);

constexpr const char* kSelfCheckSymbol = "sparsetune_cost_model_self_check";
constexpr const char* kOpenCostModelSymbol = "sparsetune_open_cost_model";
constexpr const char* kTrainCostModelSymbol = "sparsetune_train_cost_model";

}  // namespace sparsetune
