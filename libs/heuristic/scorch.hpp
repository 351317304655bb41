// Scorch's millisecond autoscheduler (Yan et al., "Fast Autoscheduling for Sparse ML
// Frameworks"), over sparsetune's loop-nest IR: loop ordering by sparse filters with greedy
// pushes priced by a structural cost, a priority topological sort of the operands' storage
// orders (transposing only where they conflict), workspace insertion (where nodes with scalar
// or dense temporaries, chosen by the same cost), tiling of dense loops that are not parents of
// sparse ones, and format inference for the sparse operand's levels, the output and the
// temporaries. It looks at no more than the shapes and, when given, the measured number of
// distinct coordinate prefixes per level, so it answers in microseconds without a model or a
// compiler: the fallback of `query` and an always-measured candidate of `tune`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/expression.hpp"
#include "ir/schedule.hpp"

namespace sparsetune {

// Scorch's constants (fitted by Bayesian optimization in the paper; the values of its public
// implementation). rho is the occupancy of a sparse level when nothing is measured.
struct ScorchConstants {
  double alpha = 2.975;             // computation
  double beta = 0.1005;             // workspaces
  double gamma = 43.55;             // transpositions
  double c_insert = 85.34;          // per workspace insertion and dimension
  double c_sort = 1.741;            // per workspace entry sorted before write-back
  double c_trans = 40.61;           // per entry of a transposed operand
  double rho = 0.0014;              // below the first level; the first level is assumed full
  int64_t default_dim_size = 1024;  // sparse modes of unknown size
  int64_t tile = 32;                // the tile of dense loops
};

struct HeuristicInput {
  // Sizes of every index; sparse modes missing here get default_dim_size.
  std::map<std::string, int64_t> sizes;
  // Distinct coordinate prefixes of the sparse operand per mode (PatternStats::prefix_nnz);
  // empty: Scorch's prior rho for every level.
  std::vector<int64_t> prefix_nnz;
  ScorchConstants constants;
};

struct HeuristicResult {
  Schedule schedule;                       // canonical; always lowers for the expression
  std::vector<std::string> initial_order;  // filters first (Algorithm 1's sort)
  std::vector<std::string> pushed_order;   // after the greedy pushes
  std::vector<std::string> final_order;    // after the storage-order topological sort
  // One line per decision, in the order they were taken, for `schedules --heuristic`.
  std::vector<std::string> explain;
  double cost = 0;  // the chosen plan's structural cost (iterations, weighted)
  double microseconds = 0;
};

// Always returns a schedule that lowers: when a step's result does not lower, the step is
// undone and `explain` says why.
HeuristicResult ScorchSchedule(const Expression& expression, const HeuristicInput& input);

}  // namespace sparsetune
