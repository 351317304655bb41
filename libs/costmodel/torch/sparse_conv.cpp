#include "costmodel/torch/sparse_conv.hpp"

#include <algorithm>

namespace sparsetune {

namespace {

uint64_t Key(int64_t r, int64_t c) {
  return (uint64_t(uint32_t(r)) << 32) | uint64_t(uint32_t(c));
}

// Open addressing: site key -> index, for the lookups of every offset.
class SiteTable {
 public:
  explicit SiteTable(const SparseSites& sites) {
    size_t capacity = 16;
    while (capacity < 2 * static_cast<size_t>(sites.size()) + 1) capacity *= 2;
    mask_ = capacity - 1;
    keys_.assign(capacity, kEmpty);
    values_.assign(capacity, -1);
    for (int64_t s = 0; s < sites.size(); ++s) {
      const uint64_t key = Key(sites.coords[2 * s], sites.coords[2 * s + 1]);
      size_t slot = Hash(key) & mask_;
      while (keys_[slot] != kEmpty && keys_[slot] != key) slot = (slot + 1) & mask_;
      keys_[slot] = key;
      values_[slot] = s;
    }
  }
  int64_t Find(int64_t r, int64_t c) const {
    if (r < 0 || c < 0) return -1;
    const uint64_t key = Key(r, c);
    size_t slot = Hash(key) & mask_;
    while (keys_[slot] != kEmpty) {
      if (keys_[slot] == key) return values_[slot];
      slot = (slot + 1) & mask_;
    }
    return -1;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static uint64_t Hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  size_t mask_ = 0;
  std::vector<uint64_t> keys_;
  std::vector<int64_t> values_;
};

}  // namespace

ConvMaps BuildConvMaps(const SparseSites& input, int kernel, int stride) {
  ConvMaps maps;
  if (stride == 1) {
    maps.output = input;
  } else {
    std::vector<uint64_t> keys(input.size());
    for (int64_t s = 0; s < input.size(); ++s)
      keys[s] = Key(input.coords[2 * s] / stride, input.coords[2 * s + 1] / stride);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    maps.output.coords.reserve(2 * keys.size());
    for (uint64_t k : keys) {
      maps.output.coords.push_back(static_cast<int32_t>(k >> 32));
      maps.output.coords.push_back(static_cast<int32_t>(k & 0xffffffffu));
    }
  }
  const SiteTable table(input);
  const int h = kernel / 2;
  for (int dr = -h; dr <= h; ++dr) {
    for (int dc = -h; dc <= h; ++dc) {
      std::vector<int64_t> in, out;
      for (int64_t o = 0; o < maps.output.size(); ++o) {
        const int64_t i = table.Find(int64_t(maps.output.coords[2 * o]) * stride + dr,
                                     int64_t(maps.output.coords[2 * o + 1]) * stride + dc);
        if (i < 0) continue;
        in.push_back(i);
        out.push_back(o);
      }
      if (in.empty()) {
        maps.input_index.emplace_back();
        maps.output_index.emplace_back();
        continue;
      }
      maps.input_index.push_back(
          torch::from_blob(in.data(), {int64_t(in.size())}, torch::kLong).clone());
      maps.output_index.push_back(
          torch::from_blob(out.data(), {int64_t(out.size())}, torch::kLong).clone());
    }
  }
  return maps;
}

SparseConv2dImpl::SparseConv2dImpl(int in_channels, int out_channels, int kernel_size)
    : kernel(kernel_size) {
  weight = register_parameter("weight",
                              torch::empty({kernel_size * kernel_size, in_channels, out_channels}));
  // Kaiming normal (fan out, ReLU), as WACO's layers.
  const double fan_out = double(out_channels) * kernel_size * kernel_size;
  torch::NoGradGuard no_grad;
  weight.normal_(0.0, std::sqrt(2.0 / fan_out));
}

torch::Tensor SparseConv2dImpl::forward(const torch::Tensor& features, const ConvMaps& maps) {
  torch::Tensor out = torch::zeros({maps.output.size(), weight.size(2)}, features.options());
  for (size_t k = 0; k < maps.input_index.size(); ++k) {
    if (!maps.input_index[k].defined()) continue;
    out = out.index_add(0, maps.output_index[k],
                        features.index_select(0, maps.input_index[k]).mm(weight[k]));
  }
  return out;
}

}  // namespace sparsetune
