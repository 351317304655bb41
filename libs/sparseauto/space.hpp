#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/expression.hpp"
#include "ir/schedule.hpp"
#include "sparseauto/polynomial.hpp"

namespace sparsetune {

// The symbolic variables of SparseAuto's cost model: one dimension per index (constraint name
// "i", printed "I") and one average fiber length per non-root level of the sparse operand
// ("jpos": nonzeros of the level divided by the nonzeros of the level above, the root counting
// as its dimension, so that nnz(B_ij) = I*jpos and nnz(B_ijk) = I*jpos*kpos). Variables are
// ordered with the sparse operand's modes first, each fiber length right after its dimension,
// then the other indices in order of appearance.
struct CostVariables {
  std::vector<std::string> names;    // constraint names: "i", "jpos"
  std::vector<std::string> display;  // polynomial names: "I", "jpos"
  std::vector<int> dim;              // per expression index id: its dimension variable
  std::vector<int> fiber;            // per expression index id: its fiber variable or -1
  std::vector<bool> is_fiber;        // per variable
  std::vector<int> index_of;         // per variable: its expression index id
  int root_index = 0;                // expression index id of the sparse operand's first mode
  int size() const { return static_cast<int>(names.size()); }
  int Find(const std::string& name) const;  // -1 when unknown
};

CostVariables MakeCostVariables(const Expression& e);

// The sparse operand's levels for every enumerated schedule, as in TACO's default: CSR (i:U,
// j:C) for matrices, CSF (every level compressed) for higher orders; mode order.
std::vector<std::pair<std::string, LevelKind>> SparseAutoFormat(const Expression& e);

// The space of branched iteration graphs (BIGs) of an expression: every loop tree reachable
// by reordering loops and recursive fission/fusion with dense temporaries (Algorithm 1 of the
// paper, both polarities, fused and unfused), such that
//   - loops over the sparse operand's modes follow its level order on the path to the compute
//     that reads it, and a sparse output's leading indices are looped first;
//   - a split happens in a section with more than two factors; its producer multiplies a
//     non-empty proper subset of them (a lone temporary is not copied again); its fused loops F
//     are the longest common prefix of the producer's and consumer's loop orders under some
//     valid order of the section, and the temporary carries the shared indices outside F;
//   - producer and consumer each keep a loop of their own (a side without loops only
//     multiplies values the fused loops fix; merging it into the other side gives a tree with
//     fewer iterations and no more memory, which the space holds);
//   - a temporary's indices are visited in the same relative order by its producer and its
//     consumer (the paper's second validity rule).
//
// The recursion runs over factor subsets, not factor permutations: a where node is identified
// by the set of factors its producer multiplies, so each BIG is produced exactly once and no
// deduplication of permuted duplicates is needed. Sub-problems (a left-hand side and factors
// with the fused outer indices removed) are memoized, and every split is made once per fused
// index set with its valid fused orders grouped. CountAll() counts the whole space by this
// recursion without materializing trees; Stage1Depths() counts the trees whose temporaries
// have order <= max_memory_depth (Stage 1, applied while generating) by depths; Materialize()
// builds only the trees within given depth bounds.
class BigSpace {
 public:
  BigSpace(const Expression& expression, int max_memory_depth = 2);
  ~BigSpace();
  BigSpace(const BigSpace&) = delete;
  BigSpace& operator=(const BigSpace&) = delete;

  const Expression& expression() const;
  const CostVariables& variables() const;

  // Distinct BIGs in the whole space (saturates at 2^128 - 1), or only those whose temporaries
  // have order <= max_temporary_order; nothing when that takes more than `budget` steps (loop
  // orders, splits and combinations of sub-problem signatures; kernel 2 of the paper takes
  // 1.4 million, in about half a second).
  std::optional<unsigned __int128> CountAll(int max_temporary_order = 16, size_t budget = 4000000);

  // The Stage-1 trees (every temporary of order <= max_memory_depth), counted without
  // materializing them: how many trees have each (loop depth, memory depth).
  struct DepthCount {
    int loop_depth = 0, memory_depth = 0;
    unsigned __int128 count = 0;
  };
  std::vector<DepthCount> Stage1Depths();
  // Distinct (time, memory) pairs among the Stage-1 trees, or -1 when computing them would
  // combine more than `budget` pairs of sub-tree classes.
  int64_t Stage1Classes(size_t budget = 4000000);

  // Materializes the Stage-1 trees with loop depth <= max_loop_depth and memory depth <=
  // max_memory_depth (at most 2) and returns their handles (stable across calls; a tree
  // materialized twice keeps its handle). Throws InputError when more than `limit` new nodes
  // would be needed.
  std::vector<size_t> Materialize(int max_loop_depth, int max_memory_depth, size_t limit = 5000000);

  size_t size() const;  // trees materialized so far
  int loop_depth(size_t tree) const;
  int memory_depth(size_t tree) const;
  int time_id(size_t tree) const;
  int memory_id(size_t tree) const;
  const Polynomial& polynomial(int id) const;

  // The tree as a schedule that Lower() accepts: format as SparseAutoFormat(), the root's
  // outermost loop parallel (chunk 16); for an unfused root, the first loop when both top-level
  // nests start with it; serial otherwise.
  Schedule ToSchedule(size_t tree) const;

  size_t problem_count() const;  // memoized sub-problems
  size_t node_count() const;     // materialized nodes, sub-trees included

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The compact notation of a schedule tree, as in the paper's Table 2:
//   i,j' <t; k: t += B(i,j)*C(i,k)*D(j,k) | l: A(i,l) += t*E(j,l)>
// Loops over compressed levels of the sparse operand below its root are marked with '.
// Temporaries are renamed in pre-order (scalars t, t2, ...; dense T, T2, ...) and the factors
// of each compute ordered by the first expression tensor they contain, so that equal trees
// have equal notation whatever names and factor order the schedule used.
std::string ScheduleNotation(const Expression& expression, const Schedule& schedule);

// SparseAuto's costs of a schedule tree (loops over whole indices, no splits): iteration time
// (per leaf, the product of its enclosing loops: a dimension, or a fiber length for a non-root
// level of the sparse operand on the path to the compute that reads it), auxiliary memory
// (dense temporaries' sizes; scalars count 0), loop depth and memory depth.
struct ScheduleCosts {
  Polynomial time, memory;
  int loop_depth = 0, memory_depth = 0;
};
ScheduleCosts CostOfSchedule(const Expression& expression, const Schedule& schedule);

// Decimal text of a 128-bit count.
std::string CountText(unsigned __int128 count);

}  // namespace sparsetune
