#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/expression.hpp"
#include "ir/schedule.hpp"
#include "sparseauto/polynomial.hpp"

namespace sparsetune {

// SparseAuto (Dias et al., OOPSLA 2024): enumerate the branched iteration graphs of an
// expression and prune them in five stages.
//   generated  every distinct BIG (counted, not materialized; unknown when too many to count)
//   stage 1    temporaries of order <= 2, applied while generating
//   stage 2    Pareto-minimal (loop depth, memory depth)
//   stage 3    Z3: drop a class of equal (time, memory) polynomials when another class is never
//              worse in either over the allowed region and strictly worse somewhere
//   stage 4    concrete sizes: minimum time among schedules whose temporaries fit in half of
//              the last-level cache (ties: less memory)
//   stage 5    cache tie-break: fewest strided accesses at the innermost loops, then loop
//              orders that follow the tensors' index order (both from the paper), then fewest
//              dense loops around the sparse operand's level loops (each traverses that level
//              again), then the first in enumeration order
//
// Stage 3's region is R ∧ I ∧ U over real-valued variables (see CostVariables):
//   R (default ranges, for every variable no user constraint names):
//       1000 <= x <= 10^7 for the sparse operand's dimensions, 8 <= x <= 256 for the other
//       dimensions, 1 <= xpos <= 1000 for fiber lengths;
//   I (always): x >= 1 for dimensions, 0 < xpos <= x for fiber lengths;
//   U: the user's constraints.
// Removing a class needs an UNSAT proof that it is never better in time or in memory; a
// solver timeout or `unknown` keeps both classes.
struct SparseAutoOptions {
  std::vector<std::string> constraints;  // e.g. "10*j < k", "8 <= l <= 64"
  // Concrete values for stages 4 and 5 by constraint name ("i", "jpos"); missing dimensions of
  // the sparse operand default to 100000, other dimensions to 16, fiber lengths to 16 for
  // matrices and 8 for higher orders.
  std::map<std::string, long double> values;
  int64_t llc_bytes = 0;  // 0: DetectLlcBytes()
  int value_bytes = 4;    // bytes per temporary element
  unsigned solver_timeout_ms = 500;
  int max_memory_depth = 2;
  // Stage-1 classes are counted only for spaces up to this many trees (it costs a polynomial
  // sum per pair of sub-tree classes); beyond, they are reported as unknown (-1).
  uint64_t stage1_classes_limit = 1000000;
  // Work allowed for counting the whole (generated) space (see BigSpace::CountAll); beyond it
  // the count is reported as unknown.
  size_t count_budget = 4000000;
};

struct SparseAutoStage {
  std::string name;
  unsigned __int128 count = 0;
  int64_t classes = -1;  // distinct (time, memory) pairs; -1: not computed
  double ms = 0;
  bool count_known = true;  // false: the whole space was too large to count in the budget
};

struct SparseAutoCandidate {
  std::string notation;
  Schedule schedule;
  Polynomial time, memory;
  std::string time_text, memory_text;
  int loop_depth = 0, memory_depth = 0;
  int class_id = 0;              // survivors with equal (time, memory) share it
  long double time_value = 0;    // at the concrete sizes
  long double memory_bytes = 0;  // temporaries at the concrete sizes
  long double cache_cost = 0;    // stage 5: strided elements at the innermost loops
  int order_mismatches = 0;      // stage 5: loop orders against tensor index order
  int restreams = 0;             // stage 5: dense loops around sparse level loops
  bool stage4 = false;           // survived stage 4
  // TACO's linear default, kept for stages 4 and 5 although stage 2 removed it: depths alone
  // cannot tell that fusion saves nothing at the concrete sizes (short fibers).
  bool baseline = false;
};

struct SparseAutoResult {
  std::string expression;
  std::vector<SparseAutoStage> stages;
  std::vector<SparseAutoCandidate> survivors;  // after stage 3, best first at concrete sizes
  int chosen = -1;                             // index into survivors
  std::vector<std::string> variables;          // constraint names
  std::vector<std::string> constraints;        // the region: R, I and U as text
  std::map<std::string, long double> values;   // concrete values used in stages 4 and 5
  int64_t llc_bytes = 0;
  int64_t memory_limit_bytes = 0;
  int solver_queries = 0;   // Z3 checks run
  int solver_unknowns = 0;  // of which timed out or unknown
};

// Runs the five stages. Throws InputError for a constraint that does not parse, names an
// unknown variable or contradicts the others (Z3 proves the region empty).
SparseAutoResult RunSparseAuto(const Expression& expression, const SparseAutoOptions& options);

// The last-level cache of this machine in bytes: the largest cache that cpu0 reports in sysfs
// (the slice a core shares), else sysconf, else 32 MiB.
int64_t DetectLlcBytes();

// Concrete values for stages 4 and 5: the sparse operand's dimensions and average fiber lengths
// (prefix_nnz as in PatternStats: distinct coordinate prefixes per level; the fiber length of
// level l is prefix_nnz[l] over prefix_nnz[l-1], the root counting as its dimension) and the
// sizes of the other indices.
std::map<std::string, long double> ConcreteValues(const Expression& expression,
                                                  const std::vector<int64_t>& dims,
                                                  const std::vector<int64_t>& prefix_nnz,
                                                  const std::map<std::string, int64_t>& dense);

}  // namespace sparsetune
