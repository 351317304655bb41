// Throughput of the synthetic generators and of the tensor writer.
// Usage: gen_throughput [NNZ] [OUTPUT_DIR]   (default 10M nonzeros, no writing)
// Prints, per generator, the seconds to generate and, with OUTPUT_DIR, to write .mtx and
// .mtx.gz, with the rates in million nonzeros per second.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "io/write.hpp"
#include "tensor/generate.hpp"

namespace {

double Seconds(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sparsetune;
  const int64_t nnz = argc > 1 ? ParseCount(argv[1], "NNZ") : 10000000;
  const std::string dir = argc > 2 ? argv[2] : "";
  const int64_t n = std::max<int64_t>(1000, nnz / 25);  // about 25 nonzeros per row

  struct Case {
    std::string name;
    std::function<CooTensor()> make;
  };
  std::vector<Case> cases;
  cases.push_back({"uniform", [&] {
                     UniformParams p;
                     p.rows = p.cols = n;
                     p.nnz = nnz;
                     return GenerateUniform(p);
                   }});
  cases.push_back({"powerlaw", [&] {
                     PowerLawParams p;
                     p.rows = p.cols = n;
                     p.nnz = nnz;
                     return GeneratePowerLaw(p);
                   }});
  cases.push_back({"banded", [&] {
                     BandedParams p;
                     p.rows = p.cols = n;
                     p.bandwidth = 24;
                     p.fill = 0.5;
                     return GenerateBanded(p);
                   }});
  cases.push_back({"blocked", [&] {
                     BlockedParams p;
                     p.rows = p.cols = n;
                     p.block = 8;
                     p.nnz = nnz;
                     p.fill = 0.8;
                     return GenerateBlocked(p);
                   }});
  cases.push_back({"stencil3d", [&] {
                     StencilParams p;
                     p.nx = p.ny = p.nz = std::llround(std::cbrt(double(nnz) / 7));
                     return GenerateStencil3d(p);
                   }});
  cases.push_back({"diagonal-heavy", [&] {
                     DiagonalHeavyParams p;
                     p.rows = n;
                     p.nnz = nnz;
                     return GenerateDiagonalHeavy(p);
                   }});
  cases.push_back({"dnn", [&] {
                     DnnParams p;
                     p.rows = p.cols = std::llround(std::sqrt(double(nnz) / 0.1));
                     p.density = 0.1;
                     return GenerateDnn(p);
                   }});
  cases.push_back({"tensor3-powerlaw", [&] {
                     TensorParams p;
                     p.dims = {n, n / 2, n / 4};
                     p.nnz = nnz;
                     return GenerateTensorPowerLaw(p);
                   }});

  std::printf("%-18s %12s %9s %9s %9s %9s\n", "generator", "nnz", "gen_s", "Mnnz/s", "write_s",
              "gz_s");
  for (const auto& c : cases) {
    CooTensor t;
    const double gen_s = Seconds([&] { t = c.make(); });
    double write_s = NAN, gz_s = NAN;
    if (!dir.empty()) {
      const std::string path = dir + "/gen_throughput" + (t.order() == 2 ? ".mtx" : ".tns");
      write_s = Seconds([&] { WriteTensorFile(t, path); });
      std::remove(path.c_str());
      if (c.name == "uniform") {
        gz_s = Seconds([&] { WriteTensorFile(t, path + ".gz"); });
        std::remove((path + ".gz").c_str());
      }
    }
    std::printf("%-18s %12lld %9.2f %9.1f %9.2f %9.2f\n", c.name.c_str(),
                static_cast<long long>(t.nnz()), gen_s, t.nnz() / gen_s / 1e6, write_s, gz_s);
    std::fflush(stdout);
  }
  return 0;
}
