#include "baselines/baseline.hpp"

#include "baselines/baselines_internal.hpp"

namespace sparsetune {

bool HasBaselines(const std::string& kernel) {
  return kernel == "spmv" || kernel == "spmm" || kernel == "sddmm";
}

std::vector<std::unique_ptr<Baseline>> MakeBaselines(const BaselineOperands& operands) {
  std::vector<std::unique_ptr<Baseline>> out;
  auto add = [&](std::unique_ptr<Baseline> b) {
    if (b) out.push_back(std::move(b));
  };
  add(MakeEigenBaseline(operands));
  add(MakeRsbBaseline(operands, false));
  add(MakeRsbBaseline(operands, true));
  add(MakeGraphBlasBaseline(operands));
  return out;
}

}  // namespace sparsetune
