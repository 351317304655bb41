#include "costmodel/torch/torch_model.hpp"

#include <omp.h>

#include <filesystem>

#include "base/errors.hpp"

namespace sparsetune {
namespace {

// LibTorch lowers the calling thread's OpenMP thread count (its intra-op setup leaves
// omp_get_max_threads() at 1), and every kernel `tune` times afterwards with "all threads"
// would then run on one. Each call into LibTorch restores the caller's count on return.
class KeepOpenMpThreads {
 public:
  KeepOpenMpThreads() : threads_(omp_get_max_threads()) {}
  ~KeepOpenMpThreads() { omp_set_num_threads(threads_); }

 private:
  int threads_;
};

}  // namespace

WacoNetInput MakeWacoNetInput(const CooTensor& pattern, const ModelManifest& manifest) {
  WacoNetInput in;
  PatternGrid g = Featurize(pattern, manifest.grid);
  in.maps = BuildWacoNetMaps(g);
  in.features = torch::from_blob(g.features.data(), {g.sites(), 1}).clone();
  std::vector<float> side = SideInputValues(pattern, manifest.side_inputs);
  for (size_t k = 0; k < side.size(); ++k)
    side[k] = (side[k] - manifest.side_mean[k]) / manifest.side_std[k];
  in.side = torch::from_blob(side.data(), {int64_t(side.size())}).clone();
  return in;
}

TorchCostModel::TorchCostModel(const std::string& dir, const std::string& kernel)
    : dir_(dir), manifest_(ReadModelManifest(dir, kernel)), waco_(WacoTemplate::ForKernel(kernel)) {
  KeepOpenMpThreads keep;
  embedder_ = ScheduleEmbedder(manifest_.layout);
  waconet_ = WacoNet(SideInputCount(manifest_.side_inputs));
  LoadModuleWeights(waconet_, dir, kModelWacoNet);
  LoadModuleWeights(embedder_, dir, kModelEmbedder);
  waconet_->eval();
  embedder_->eval();
  head_ = MlpHead::Load(dir);
  if (head_.embedding_size() != manifest_.embedding_size)
    throw InputError((std::filesystem::path(dir) / kModelHead).string(), 0,
                     "head size does not match the manifest");
  schedules_ = ReadScheduleSet((std::filesystem::path(dir) / kModelSchedules).string(), *waco_);
}

std::vector<float> TorchCostModel::EmbedMatrix(const CooTensor& pattern) {
  KeepOpenMpThreads keep;
  torch::NoGradGuard no_grad;
  const WacoNetInput in = MakeWacoNetInput(pattern, manifest_);
  const torch::Tensor e = waconet_->forward(in.features, in.maps, in.side).contiguous();
  return std::vector<float>(e.data_ptr<float>(), e.data_ptr<float>() + e.numel());
}

std::vector<float> TorchCostModel::EmbedSchedules(const std::vector<ScheduleEncoding>& schedules) {
  KeepOpenMpThreads keep;
  torch::NoGradGuard no_grad;
  std::vector<float> out;
  out.reserve(schedules.size() * manifest_.embedding_size);
  constexpr size_t kBatch = 4096;
  for (size_t first = 0; first < schedules.size(); first += kBatch) {
    const std::vector<ScheduleEncoding> batch(
        schedules.begin() + first, schedules.begin() + std::min(schedules.size(), first + kBatch));
    const torch::Tensor e = embedder_->forward(batch).contiguous();
    out.insert(out.end(), e.data_ptr<float>(), e.data_ptr<float>() + e.numel());
  }
  return out;
}

void TorchCostModel::SetMatrix(const CooTensor& pattern) {
  matrix_embedding_ = EmbedMatrix(pattern);
  queue_.clear();
  outputs_.clear();
}

void TorchCostModel::Enqueue(const ScheduleEncoding& schedule, float* score_out) {
  queue_.push_back(schedule);
  outputs_.push_back(score_out);
}

void TorchCostModel::EvaluateCosts() {
  if (matrix_embedding_.empty()) throw InternalError("EvaluateCosts before SetMatrix");
  const std::vector<float> embeddings = EmbedSchedules(queue_);
  const std::vector<float> prepared = head_.PrepareMatrix(matrix_embedding_.data());
  const int e = manifest_.embedding_size;
  for (size_t k = 0; k < queue_.size(); ++k)
    *outputs_[k] = head_.Score(prepared, embeddings.data() + k * e);
  queue_.clear();
  outputs_.clear();
}

}  // namespace sparsetune
