// The module's entry point: the libraries' kernels for one set of operands.
#include "baselines/baseline.hpp"
#include "baselines/libraries/baselines_internal.hpp"

extern "C" void sparsetune_make_baselines(const sparsetune::BaselineOperands& operands,
                                          std::vector<std::unique_ptr<sparsetune::Baseline>>* out) {
  using sparsetune::Baseline;
  auto add = [&](std::unique_ptr<Baseline> b) {
    if (b) out->push_back(std::move(b));
  };
  add(sparsetune::MakeRsbBaseline(operands, false));
  add(sparsetune::MakeRsbBaseline(operands, true));
  add(sparsetune::MakeGraphBlasBaseline(operands));
}
