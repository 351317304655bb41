// RunSparseAuto: the input checked first (constraints, region, concrete sizes), then the five
// stages in order (stages.hpp).

#include "sparseauto/sparseauto.hpp"

#include "sparseauto/constraints.hpp"
#include "sparseauto/region.hpp"
#include "sparseauto/space.hpp"
#include "sparseauto/stages.hpp"

namespace sparsetune {

namespace {

// The concrete value of every cost variable for stages 4 and 5 (see
// SparseAutoOptions::values), recorded in `used` by constraint name.
std::vector<long double> ConcretePoint(const Expression& e, const CostVariables& vars,
                                       const SparseAutoOptions& options,
                                       std::map<std::string, long double>* used) {
  std::vector<long double> point(vars.size());
  for (int v = 0; v < vars.size(); ++v) {
    auto it = options.values.find(vars.names[v]);
    if (it != options.values.end()) {
      point[v] = it->second;
    } else if (vars.is_fiber[v]) {
      point[v] = e.sparse_input().indices.size() == 2 ? 16 : 8;
    } else {
      point[v] = e.IsSparseIndex(e.indices[vars.index_of[v]]) ? 100000 : 16;
    }
    (*used)[vars.names[v]] = point[v];
  }
  return point;
}

}  // namespace

std::map<std::string, long double> ConcreteValues(const Expression& e,
                                                  const std::vector<int64_t>& dims,
                                                  const std::vector<int64_t>& prefix_nnz,
                                                  const std::map<std::string, int64_t>& dense) {
  std::map<std::string, long double> values;
  const auto& modes = e.sparse_input().indices;
  for (size_t m = 0; m < modes.size() && m < dims.size(); ++m) {
    values[modes[m]] = static_cast<long double>(dims[m]);
    if (m == 0 || m >= prefix_nnz.size()) continue;
    const long double above =
        m == 1 ? static_cast<long double>(dims[0]) : static_cast<long double>(prefix_nnz[m - 1]);
    values[modes[m] + "pos"] = above > 0 ? prefix_nnz[m] / above : 0;
  }
  for (const auto& [index, size] : dense) {
    if (e.IndexId(index) >= 0 && !e.IsSparseIndex(index)) {
      values[index] = static_cast<long double>(size);
    }
  }
  return values;
}

SparseAutoResult RunSparseAuto(const Expression& e, const SparseAutoOptions& options) {
  using namespace sparseauto_internal;
  SparseAutoResult result;
  result.expression = e.text;
  BigSpace space(e, options.max_memory_depth);
  const CostVariables& vars = space.variables();
  result.variables = vars.names;

  // Everything about the input is checked before the enumeration runs.
  std::vector<Constraint> user;
  for (const auto& text : options.constraints) user.push_back(ParseConstraint(text, vars));
  std::vector<bool> sparse_mode(vars.size(), false);
  for (int v = 0; v < vars.size(); ++v) {
    sparse_mode[v] = !vars.is_fiber[v] && e.IsSparseIndex(e.indices[vars.index_of[v]]);
  }
  Region region(vars, sparse_mode, user, options.solver_timeout_ms);
  region.CheckSatisfiable(user);
  result.constraints = region.texts();

  const std::vector<long double> point = ConcretePoint(e, vars, options, &result.values);
  std::map<std::string, long double> index_size;
  for (size_t x = 0; x < e.indices.size(); ++x) index_size[e.indices[x]] = point[vars.dim[x]];

  result.stages.push_back(CountGenerated(space, options));
  std::vector<BigSpace::DepthCount> depths;
  result.stages.push_back(Stage1MemoryDepth(space, options, &depths));
  ComplexityClasses classes;
  result.stages.push_back(Stage2DepthPoset(space, depths, &classes));
  result.stages.push_back(Stage3Smt(space, region, classes, &result));
  result.solver_queries = region.queries();
  result.solver_unknowns = region.unknowns();
  result.stages.push_back(Stage4TimeMemory(point, options, &result));
  result.stages.push_back(Stage5Cache(e, index_size, &result));
  return result;
}

}  // namespace sparsetune
