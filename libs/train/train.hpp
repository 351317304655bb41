// `sparsetune train`: a cost model from the measurements in a schedule database.
#pragma once

#include <nlohmann/json.hpp>

#include "costmodel/training.hpp"
#include "train/training_data.hpp"

namespace sparsetune {

// Loads the kernel's training data (LoadTrainingSet), then fits the models on it
// (TrainCostModel) and returns metrics.json. Throws InputError when the data cannot train a
// model (a kernel without a template, no measurements, a pattern file missing).
nlohmann::json TrainFromDatabase(const TrainingDataOptions& data, const TrainOptions& options);

}  // namespace sparsetune
