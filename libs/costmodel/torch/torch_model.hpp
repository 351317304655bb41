// The LibTorch implementation of CostModel.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "costmodel/cost_model.hpp"
#include "costmodel/head.hpp"
#include "costmodel/model_files.hpp"
#include "costmodel/torch/networks.hpp"

namespace sparsetune {

// The standardized side inputs and grid of a pattern, as WACONet takes them.
struct WacoNetInput {
  torch::Tensor features;  // sites x 1
  torch::Tensor side;      // the model's side inputs
  WacoNetMaps maps;
};
WacoNetInput MakeWacoNetInput(const CooTensor& pattern, const ModelManifest& manifest);

// Loads <dir>/<file> into a LibTorch module (WACONet or the embedder); InputError naming the
// file when it is truncated or belongs to another model.
template <class Module>
void LoadModuleWeights(Module& module, const std::string& dir, const char* file) {
  const std::string path = dir + "/" + file;
  try {
    torch::load(module, path);
  } catch (const std::exception& e) {
    throw InputError(path, 0,
                     std::string("cannot load the weights (truncated or from another model?): ") +
                         std::string(e.what()).substr(0, 200));
  }
}

class TorchCostModel : public CostModel {
 public:
  TorchCostModel(const std::string& dir, const std::string& kernel);
  const std::string& kernel() const override { return manifest_.kernel; }
  int embedding_size() const override { return manifest_.embedding_size; }
  std::vector<float> EmbedMatrix(const CooTensor& pattern) override;
  std::vector<float> EmbedSchedules(const std::vector<ScheduleEncoding>& schedules) override;
  void SetMatrix(const CooTensor& pattern) override;
  void Enqueue(const ScheduleEncoding& schedule, float* score_out) override;
  void EvaluateCosts() override;
  const std::vector<SuperSchedule>& schedule_set() const override { return schedules_; }
  const std::string& directory() const override { return dir_; }

 private:
  std::string dir_;
  ModelManifest manifest_;
  std::unique_ptr<WacoTemplate> waco_;
  WacoNet waconet_{nullptr};
  ScheduleEmbedder embedder_{nullptr};
  MlpHead head_;
  std::vector<SuperSchedule> schedules_;
  std::vector<float> matrix_embedding_;
  std::vector<ScheduleEncoding> queue_;
  std::vector<float*> outputs_;
};

}  // namespace sparsetune
