// WACONet, the schedule embedder, the head and the summary-feature network (WACO, section 2
// of the digest): the layers and sizes of the artifact.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "costmodel/pattern_features.hpp"
#include "costmodel/torch/sparse_conv.hpp"
#include "superschedule/waco_template.hpp"

namespace sparsetune {

// The maps of all 14 layers of one pattern: they depend on the pattern only, not on weights.
struct WacoNetMaps {
  std::vector<ConvMaps> layers;
};
WacoNetMaps BuildWacoNetMaps(const PatternGrid& grid);

// 5x5 submanifold layer, then 13 strided 3x3 layers, 32 channels, ReLU; every layer's global
// average pool concatenated (448), a side MLP on the standardized side inputs (WACO's rows,
// columns and nonzeros, or the summary statistics: n-64-32), then 480-256-128: the matrix
// embedding.
class WacoNetImpl : public torch::nn::Module {
 public:
  explicit WacoNetImpl(int side_inputs = 3);
  // features: sites x 1; side: the standardized side inputs. Returns 1 x 128.
  torch::Tensor forward(const torch::Tensor& features, const WacoNetMaps& maps,
                        const torch::Tensor& side);
  std::vector<SparseConv2d> convs;
  torch::nn::Linear side1{nullptr}, side2{nullptr}, out1{nullptr}, out2{nullptr};
};
TORCH_MODULE(WacoNet);

// Summary features (standardized) to a 128-d embedding: the comparison model.
class SummaryNetImpl : public torch::nn::Module {
 public:
  explicit SummaryNetImpl(int features);
  torch::Tensor forward(const torch::Tensor& features);  // 1 x features -> 1 x 128
  torch::nn::Linear l1{nullptr}, l2{nullptr};
};
TORCH_MODULE(SummaryNet);

// One Embedding(cardinality, 32) per categorical input, Linear(n*n, 32) for the loop order,
// then Linear(k*32, 128)-ReLU-Linear(128, 128).
class ScheduleEmbedderImpl : public torch::nn::Module {
 public:
  explicit ScheduleEmbedderImpl(const EncodingLayout& layout);
  torch::Tensor forward(const std::vector<ScheduleEncoding>& schedules);  // B x 128
  std::vector<torch::nn::Embedding> embeddings;
  torch::nn::Linear order{nullptr}, l1{nullptr}, l2{nullptr};
  int order_size = 0;
};
TORCH_MODULE(ScheduleEmbedder);

// Linear(256,128)-ReLU-Linear(128,64)-ReLU-Linear(64,1): the score (higher: slower).
class HeadImpl : public torch::nn::Module {
 public:
  HeadImpl();
  torch::Tensor forward(const torch::Tensor& matrix, const torch::Tensor& schedules);  // B
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
};
TORCH_MODULE(Head);

// Pairwise hinge ranking loss within one matrix (MarginRankingLoss, margin 1) over every pair
// whose times differ by more than the timing noise (3%).
torch::Tensor PairwiseRankingLoss(const torch::Tensor& scores, const std::vector<double>& times);

}  // namespace sparsetune
