#include "costmodel/torch/networks.hpp"

#include <algorithm>

namespace sparsetune {

namespace {
constexpr int kChannels = 32;
constexpr int kStridedLayers = 13;
}  // namespace

WacoNetMaps BuildWacoNetMaps(const PatternGrid& grid) {
  WacoNetMaps maps;
  SparseSites sites;
  sites.coords = grid.coords;
  maps.layers.push_back(BuildConvMaps(sites, 5, 1));
  for (int l = 0; l < kStridedLayers; ++l)
    maps.layers.push_back(BuildConvMaps(maps.layers.back().output, 3, 2));
  return maps;
}

WacoNetImpl::WacoNetImpl(int side_inputs) {
  convs.push_back(register_module("conv0", SparseConv2d(1, kChannels, 5)));
  for (int l = 0; l < kStridedLayers; ++l)
    convs.push_back(
        register_module("conv" + std::to_string(l + 1), SparseConv2d(kChannels, kChannels, 3)));
  side1 = register_module("side1", torch::nn::Linear(side_inputs, 64));
  side2 = register_module("side2", torch::nn::Linear(64, 32));
  out1 = register_module("out1", torch::nn::Linear((kStridedLayers + 1) * kChannels + 32, 256));
  out2 = register_module("out2", torch::nn::Linear(256, 128));
}

torch::Tensor WacoNetImpl::forward(const torch::Tensor& features, const WacoNetMaps& maps,
                                   const torch::Tensor& side) {
  std::vector<torch::Tensor> pooled;
  torch::Tensor x = features;
  for (size_t l = 0; l < convs.size(); ++l) {
    x = torch::relu(convs[l]->forward(x, maps.layers[l]));
    pooled.push_back(x.mean(0));
  }
  pooled.push_back(side2->forward(torch::relu(side1->forward(side))));
  torch::Tensor h = torch::cat(pooled).unsqueeze(0);
  return out2->forward(torch::relu(out1->forward(h)));
}

SummaryNetImpl::SummaryNetImpl(int features) {
  l1 = register_module("l1", torch::nn::Linear(features, 64));
  l2 = register_module("l2", torch::nn::Linear(64, 128));
}

torch::Tensor SummaryNetImpl::forward(const torch::Tensor& features) {
  return l2->forward(torch::relu(l1->forward(features)));
}

ScheduleEmbedderImpl::ScheduleEmbedderImpl(const EncodingLayout& layout)
    : order_size(layout.order_size) {
  for (size_t k = 0; k < layout.cardinalities.size(); ++k)
    embeddings.push_back(register_module("embedding" + std::to_string(k),
                                         torch::nn::Embedding(layout.cardinalities[k], 32)));
  order = register_module("order", torch::nn::Linear(order_size * order_size, 32));
  l1 = register_module("l1", torch::nn::Linear(int64_t(embeddings.size() + 1) * 32, 128));
  l2 = register_module("l2", torch::nn::Linear(128, 128));
}

torch::Tensor ScheduleEmbedderImpl::forward(const std::vector<ScheduleEncoding>& schedules) {
  const int64_t b = static_cast<int64_t>(schedules.size());
  const int64_t k = static_cast<int64_t>(embeddings.size());
  std::vector<int64_t> ids(b * k);
  std::vector<float> orders(b * order_size * order_size);
  for (int64_t s = 0; s < b; ++s) {
    for (int64_t c = 0; c < k; ++c) ids[s * k + c] = schedules[s].categorical[c];
    std::copy(schedules[s].order.begin(), schedules[s].order.end(),
              orders.begin() + s * order_size * order_size);
  }
  const torch::Tensor id = torch::from_blob(ids.data(), {b, k}, torch::kLong).clone();
  std::vector<torch::Tensor> parts;
  for (int64_t c = 0; c < k; ++c) parts.push_back(embeddings[c]->forward(id.select(1, c)));
  parts.push_back(order->forward(
      torch::from_blob(orders.data(), {b, int64_t(order_size) * order_size}).clone()));
  return l2->forward(torch::relu(l1->forward(torch::cat(parts, 1))));
}

HeadImpl::HeadImpl() {
  l1 = register_module("l1", torch::nn::Linear(256, 128));
  l2 = register_module("l2", torch::nn::Linear(128, 64));
  l3 = register_module("l3", torch::nn::Linear(64, 1));
}

torch::Tensor HeadImpl::forward(const torch::Tensor& matrix, const torch::Tensor& schedules) {
  const torch::Tensor m = matrix.expand({schedules.size(0), matrix.size(1)});
  torch::Tensor h = torch::cat({m, schedules}, 1);
  h = torch::relu(l1->forward(h));
  h = torch::relu(l2->forward(h));
  return l3->forward(h).squeeze(1);
}

constexpr double kRankingMinRatio = 1.03;

torch::Tensor PairwiseRankingLoss(const torch::Tensor& scores, const std::vector<double>& times) {
  std::vector<int64_t> first, second;
  std::vector<float> target;
  for (size_t a = 0; a < times.size(); ++a) {
    for (size_t b = a + 1; b < times.size(); ++b) {
      // Pairs closer than the timing noise (a few percent between repeated medians) would
      // teach an order that the next measurement may reverse.
      if (std::max(times[a], times[b]) < kRankingMinRatio * std::min(times[a], times[b])) continue;
      first.push_back(int64_t(a));
      second.push_back(int64_t(b));
      target.push_back(times[a] > times[b] ? 1.0f : -1.0f);  // a slower: a scores higher
    }
  }
  if (first.empty()) return scores.sum() * 0;
  const int64_t n = static_cast<int64_t>(first.size());
  const torch::Tensor x1 =
      scores.index_select(0, torch::from_blob(first.data(), {n}, torch::kLong).clone());
  const torch::Tensor x2 =
      scores.index_select(0, torch::from_blob(second.data(), {n}, torch::kLong).clone());
  const torch::Tensor y = torch::from_blob(target.data(), {n}).clone();
  return torch::margin_ranking_loss(x1, x2, y, 1.0);
}

}  // namespace sparsetune
