// Sparse convolution over the active sites of a 2-D grid, in LibTorch with autograd: sites are
// hashed, each kernel offset gets its pairs of (input site, output site), and a layer is a
// gather - matrix multiply - scatter per offset. Stride 1 is submanifold (outputs at the input
// sites); stride 2 outputs at the input sites snapped to the coarser grid, as MinkowskiEngine.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace sparsetune {

struct SparseSites {
  std::vector<int32_t> coords;  // row, col per site, at this layer's resolution
  int64_t size() const { return static_cast<int64_t>(coords.size() / 2); }
};

// The pairs one layer needs, per kernel offset.
struct ConvMaps {
  SparseSites output;
  std::vector<torch::Tensor> input_index, output_index;  // per offset (int64), empty if none
};

ConvMaps BuildConvMaps(const SparseSites& input, int kernel, int stride);

class SparseConv2dImpl : public torch::nn::Module {
 public:
  SparseConv2dImpl(int in_channels, int out_channels, int kernel);
  // features: input.size() x in_channels; returns output sites x out_channels.
  torch::Tensor forward(const torch::Tensor& features, const ConvMaps& maps);
  torch::Tensor weight;  // kernel*kernel x in x out; offset (dr, dc) is (dr+h)*kernel + (dc+h)
  int kernel = 0;
};
TORCH_MODULE(SparseConv2d);

}  // namespace sparsetune
