// Checks of the module's own arithmetic against LibTorch's dense reference, run by the tests:
// the sparse convolution against torch::conv2d (values at the active sites, gradients of the
// weights and of the inputs), and the plain-C++ head against the LibTorch head.
#include <unistd.h>

#include <filesystem>
#include <random>

#include "costmodel/head.hpp"
#include "costmodel/torch/networks.hpp"

namespace sparsetune {

namespace {

// Max absolute differences of one random layer: values, weight gradients, input gradients.
std::vector<double> CheckLayer(int kernel, int stride, int in_channels, int out_channels,
                               uint64_t seed) {
  torch::manual_seed(seed);
  std::mt19937_64 rng(seed);
  const int size = 24;
  SparseSites sites;
  for (int r = 0; r < size; ++r)
    for (int c = 0; c < size; ++c)
      if (rng() % 5 == 0) {
        sites.coords.push_back(r);
        sites.coords.push_back(c);
      }
  const ConvMaps maps = BuildConvMaps(sites, kernel, stride);
  SparseConv2d conv(in_channels, out_channels, kernel);
  torch::Tensor features = torch::randn({sites.size(), in_channels}).requires_grad_(true);
  const torch::Tensor sparse_out = conv->forward(features, maps);

  // The same on a dense image: zeros off the active sites; conv2d is a cross-correlation with
  // weight[out, in, kr, kc] = ours[kr * kernel + kc][in][out].
  std::vector<int64_t> cells;
  for (int64_t s = 0; s < sites.size(); ++s)
    cells.push_back(int64_t(sites.coords[2 * s]) * size + sites.coords[2 * s + 1]);
  torch::Tensor weight = conv->weight.detach().clone().requires_grad_(true);
  torch::Tensor dense_features = features.detach().clone().requires_grad_(true);
  const torch::Tensor dense_in = torch::zeros({in_channels, size * size})
                                     .index_add(1, torch::tensor(cells), dense_features.t())
                                     .reshape({1, in_channels, size, size});
  const torch::Tensor w =
      weight.reshape({kernel, kernel, in_channels, out_channels}).permute({3, 2, 0, 1});
  const torch::Tensor dense_out =
      torch::conv2d(dense_in, w, {}, stride, kernel / 2).squeeze(0);  // out x H x W
  std::vector<int64_t> rows, cols;
  for (int64_t o = 0; o < maps.output.size(); ++o) {
    rows.push_back(maps.output.coords[2 * o]);
    cols.push_back(maps.output.coords[2 * o + 1]);
  }
  const torch::Tensor r = torch::tensor(rows), c = torch::tensor(cols);
  const torch::Tensor dense_at_sites =
      dense_out.index({torch::indexing::Slice(), r, c}).t();  // sites x out
  const torch::Tensor upstream = torch::randn_like(sparse_out);
  (sparse_out * upstream).sum().backward();
  (dense_at_sites * upstream).sum().backward();
  return {(sparse_out - dense_at_sites).abs().max().item<double>(),
          (conv->weight.grad() - weight.grad()).abs().max().item<double>(),
          (features.grad() - dense_features.grad()).abs().max().item<double>()};
}

}  // namespace

nlohmann::json SelfCheckInModule() {
  nlohmann::json out;
  double value = 0, weight = 0, input = 0;
  int layer = 0;
  for (const auto& [kernel, stride, cin, cout] : std::vector<std::tuple<int, int, int, int>>{
           {5, 1, 1, 4}, {3, 2, 3, 5}, {3, 1, 2, 2}, {3, 2, 4, 4}}) {
    const auto e = CheckLayer(kernel, stride, cin, cout, 17 + layer++);
    value = std::max(value, e[0]);
    weight = std::max(weight, e[1]);
    input = std::max(input, e[2]);
  }
  out["conv_value_error"] = value;
  out["conv_weight_gradient_error"] = weight;
  out["conv_input_gradient_error"] = input;

  // The head: LibTorch's forward against MlpHead on the same weights.
  torch::manual_seed(5);
  Head head;
  std::vector<std::pair<std::vector<float>, std::vector<float>>> layers;
  std::vector<std::pair<int, int>> shapes;
  for (torch::nn::Linear* l : {&head->l1, &head->l2, &head->l3}) {
    const torch::Tensor wt = (*l)->weight.detach().contiguous();
    const torch::Tensor b = (*l)->bias.detach().contiguous();
    layers.emplace_back(std::vector<float>(wt.data_ptr<float>(), wt.data_ptr<float>() + wt.numel()),
                        std::vector<float>(b.data_ptr<float>(), b.data_ptr<float>() + b.numel()));
    shapes.emplace_back(int(wt.size(0)), int(wt.size(1)));
  }
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("sparsetune-head-check-" + std::to_string(getpid())))
                              .string();
  std::filesystem::create_directories(dir);
  MlpHead::Write(dir + "/head.bin", layers, shapes);
  const MlpHead plain = MlpHead::Load(dir);
  std::filesystem::remove_all(dir);
  const torch::Tensor m = torch::randn({1, 128}), s = torch::randn({16, 128});
  torch::Tensor expected;
  {
    torch::NoGradGuard no_grad;
    expected = head->forward(m, s).contiguous();
  }
  const torch::Tensor mc = m.contiguous(), sc = s.contiguous();
  double head_error = 0;
  for (int k = 0; k < 16; ++k) {
    const float got = plain.Score(mc.data_ptr<float>(), sc.data_ptr<float>() + k * 128);
    head_error = std::max(head_error, std::abs(double(got) - expected[k].item<double>()));
  }
  out["head_error"] = head_error;
  return out;
}

}  // namespace sparsetune
