#include "train/train.hpp"

#include "base/errors.hpp"

namespace sparsetune {

nlohmann::json TrainFromDatabase(const TrainingDataOptions& data, const TrainOptions& options) {
  auto waco = WacoTemplate::ForKernel(options.kernel);
  if (!waco)
    throw InputError("train: " + options.kernel + " has no SuperSchedule template to model");
  const TrainingSet set = LoadTrainingSet(data, *waco);
  if (options.log) {
    options.log("train " + options.kernel + ": " + std::to_string(set.train.size()) +
                " training, " + std::to_string(set.selection.size()) + " epoch-selection and " +
                std::to_string(set.validation.size()) + " validation patterns (" +
                std::to_string(set.dropped_rows) + " measurements outside the template or over " +
                std::to_string(int(data.max_ms)) + " ms dropped)");
  }
  return TrainCostModel(options, set);
}

}  // namespace sparsetune
