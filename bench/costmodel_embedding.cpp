// The cost model's matrix embedding (featurization, convolution maps, WACONet forward pass) on
// generated patterns of about 1M nonzeros: the time a tune spends before its search, which
// should stay under 0.5 s on a 2-core machine.
//
// Usage: costmodel_embedding [MODEL_DIR] [--kernel K] [--nnz N] [--reps R]
//   K is spmv (default), spmm, sddmm or mttkrp; MODEL_DIR defaults to models/K of the source
//   tree ($SPARSETUNE_MODELS/K if set). MTTKRP's model embeds third-order tensors.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "costmodel/cost_model.hpp"
#include "costmodel/model_files.hpp"
#include "costmodel/pattern_features.hpp"
#include "tensor/generate.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Pattern {
  std::string name;
  sparsetune::CooTensor tensor;
};

std::vector<Pattern> TensorPatterns(int64_t nnz) {
  using namespace sparsetune;
  TensorParams params;
  params.dims = {20000, 20000, 20000};
  params.nnz = nnz;
  params.pattern = true;
  std::vector<Pattern> out;
  out.push_back({"uniform 20k^3", GenerateTensorUniform(params)});
  out.push_back({"power law 20k^3", GenerateTensorPowerLaw(params)});
  return out;
}

std::vector<Pattern> MatrixPatterns(int64_t nnz) {
  using namespace sparsetune;
  std::vector<Pattern> out;
  UniformParams uniform;
  uniform.rows = uniform.cols = 200000;
  uniform.nnz = nnz;
  uniform.pattern = true;
  out.push_back({"uniform 200k x 200k", GenerateUniform(uniform)});
  PowerLawParams power;
  power.rows = power.cols = 1 << 18;
  power.nnz = nnz;
  power.pattern = true;
  out.push_back({"power law 262k x 262k", GeneratePowerLaw(power)});
  BandedParams banded;
  banded.rows = banded.cols = nnz / 16;
  banded.bandwidth = 8;
  banded.fill = 16.0 / 17.0;
  banded.pattern = true;
  out.push_back({"banded, 17 wide", GenerateBanded(banded)});
  BlockedParams blocked;
  blocked.rows = blocked.cols = 60000;
  blocked.block = 8;
  blocked.nnz = nnz;
  blocked.fill = 1.0;
  blocked.pattern = true;
  out.push_back({"8x8 blocks 60k x 60k", GenerateBlocked(blocked)});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir;
  std::string kernel = "spmv";
  int64_t nnz = 1000000;
  int reps = 5;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--kernel" && a + 1 < argc) {
      kernel = argv[++a];
    } else if (arg == "--nnz" && a + 1 < argc) {
      nnz = std::atoll(argv[++a]);
    } else if (arg == "--reps" && a + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++a]));
    } else if (!arg.empty() && arg[0] != '-') {
      model_dir = arg;
    } else {
      std::fprintf(stderr,
                   "usage: costmodel_embedding [MODEL_DIR] [--kernel K] [--nnz N] [--reps R]\n");
      return 2;
    }
  }
  if (model_dir.empty()) model_dir = sparsetune::DefaultModelsDirectory() + "/" + kernel;
  try {
    const auto load_start = Clock::now();
    const auto manifest = sparsetune::ReadModelManifest(model_dir, kernel);
    auto model = sparsetune::LoadCostModel(model_dir, kernel);
    std::printf("model %s loaded in %.2f s (grid budget: %lld sites, %lld per side)\n",
                model_dir.c_str(), Seconds(load_start),
                static_cast<long long>(manifest.grid.max_sites),
                static_cast<long long>(manifest.grid.max_extent));
    std::printf("%-24s %9s %9s %11s %11s %9s\n", "pattern", "nnz", "sites", "featurize", "embed",
                "vs 0.5 s");
    const auto patterns = kernel == "mttkrp" ? TensorPatterns(nnz) : MatrixPatterns(nnz);
    for (const Pattern& p : patterns) {
      std::vector<double> featurize, embed;
      int64_t sites = 0;
      model->EmbedMatrix(p.tensor);  // warm-up: allocator, thread pool
      for (int r = 0; r < reps; ++r) {
        auto start = Clock::now();
        sites = sparsetune::Featurize(p.tensor, manifest.grid).sites();
        featurize.push_back(Seconds(start));
        start = Clock::now();
        model->EmbedMatrix(p.tensor);
        embed.push_back(Seconds(start));
      }
      const double e = Median(embed);
      std::printf("%-24s %9lld %9lld %9.3f s %9.3f s %8.2fx\n", p.name.c_str(),
                  static_cast<long long>(p.tensor.nnz()), static_cast<long long>(sites),
                  Median(featurize), e, e / 0.5);
    }
  } catch (const sparsetune::InputError& e) {
    std::fprintf(stderr, "costmodel_embedding: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "costmodel_embedding: %s\n", e.what());
    return 3;
  }
  return 0;
}
