#pragma once

// Internals of BigSpace (space.hpp), one concern per source file:
//   subproblems.cpp     enumeration: memoized sub-problems, loop orders, splits (Algorithm 1)
//   space_count.cpp     counting the whole space without materializing it ("generated")
//   stage1_summary.cpp  Stage 1: trees with temporaries of order <= 2, by depths and classes
//   materialize.cpp     building the Stage-1 trees within depth bounds
//   render.cpp          a materialized tree as a Schedule
// Not part of the sparseauto interface.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/expression.hpp"
#include "ir/schedule.hpp"
#include "sparseauto/polynomial.hpp"
#include "sparseauto/space.hpp"

namespace sparsetune::sparseauto_internal {

using IndexSet = uint32_t;  // bit x: expression index x
using u128 = unsigned __int128;

inline int Count(uint32_t bits) {
  return __builtin_popcount(bits);
}

inline u128 SaturatingAdd(u128 a, u128 b) {
  const u128 s = a + b;
  return s < a ? ~u128(0) : s;
}

inline u128 SaturatingMul(u128 a, u128 b) {
  if (a == 0 || b == 0) return 0;
  if (a > ~u128(0) / b) return ~u128(0);
  return a * b;
}

// An operand of a sub-problem: an input of the expression, a temporary or the output, with the
// indices that enclosing fused loops have not fixed yet.
struct Operand {
  uint32_t mask = 0;  // expression inputs it combines: bit t-1 for tensor t; 0 for the output
  bool temp = false;
  std::vector<int8_t> indices;  // tensor order for inputs and the output, ascending for temps
  IndexSet set = 0;
};

// lhs += product of factors, summed over the indices absent from lhs.
struct Problem {
  Operand lhs;
  std::vector<Operand> factors;  // sorted by mask (masks are disjoint)
  IndexSet all = 0;
  int sparse = -1;                   // factor position of the sparse input, when present
  std::vector<int8_t> chain_sparse;  // its remaining modes, to be looped in this order
  std::vector<int8_t> chain_output;  // remaining sparse-output prefix: looped first, in order
  std::string key;
};

struct Split {
  int producer = -1, consumer = -1;  // problem ids
  IndexSet shared = 0;               // the temporary's indices
  uint32_t temp_mask = 0;
};

// A split of a problem: a producer factor set and a fused index set, with every valid order
// of the fused loops (each order is a different tree).
struct SplitCase {
  uint32_t pset = 0;
  IndexSet fused_set = 0, shared = 0;
  Split split;
  int temp_pos = 0;            // the temporary's factor position in the consumer
  std::vector<int> child_pos;  // per factor of q: its position in the child it goes to
  int fused_time = 0, temp_size = 0;
  std::vector<std::vector<int8_t>> orders;
  // The orders grouped by how they order each two-index temporary (all that the Stage-1
  // signature sees): a representative order and how many orders share it.
  std::vector<std::pair<std::vector<int8_t>, u128>> bit_groups;
};

// Interned polynomials: equal polynomials share an id (0 is the zero polynomial), and sums and
// products of ids are memoized.
class PolyTable {
 public:
  PolyTable() { Intern(Polynomial()); }
  int Intern(const Polynomial& p);
  const Polynomial& Get(int id) const { return polys_[id]; }
  int Add(int a, int b);
  int Mul(int a, int b);

 private:
  std::vector<Polynomial> polys_;
  std::unordered_map<Polynomial, int, PolynomialHash> ids_;
  std::unordered_map<uint64_t, int> add_, mul_;
};

// ---- enumeration (subproblems.cpp) -------------------------------------------------------

// The memoized sub-problems of an expression and the splits between them. Problems are
// interned in the order they are first met, the root first, and polynomials likewise: their
// ids depend only on the order of the calls, which the stages keep fixed.
class Subproblems {
 public:
  // Throws InputError when the expression is beyond the enumeration (indices, inputs, cost
  // variables).
  Subproblems(const Expression& expression, int max_memory_depth);

  const Expression& expression() const { return e_; }
  const CostVariables& variables() const { return vars_; }
  int max_memory_depth() const { return max_memory_depth_; }
  int root() const { return root_; }
  size_t size() const { return problems_.size(); }
  const Problem& problem(int id) const { return problems_[id]->problem; }
  PolyTable& polys() { return polys_; }
  const PolyTable& polys() const { return polys_; }

  // Every loop order of the problem's indices that respects its chains.
  void ForEachOrder(const Problem& q, const std::function<void(const std::vector<int8_t>&)>& f);

  // Every split of a problem, made once; the whole-space count walks all of them.
  const std::vector<SplitCase>& AllSplits(int id);
  // The splits whose temporary has order <= the memory-depth bound (Stage 1), made without the
  // sub-problems of larger temporaries unless the whole space was enumerated already.
  const std::vector<const SplitCase*>& Stage1Splits(int id);

  // Iteration time of looping over `loops` in q: a dimension, or a fiber length for a non-root
  // level of the sparse operand that q reads.
  int LoopProduct(const Problem& q, IndexSet loops);

  static int FactorPosition(const Problem& q, uint32_t mask, bool temp);
  // Position in the child problem of factor k of q (which the split sends to that child).
  static int ChildPosition(const Problem& q, int k, const Problem& child);

  // Stage-1 order signatures: one bit per two-index temporary, whether its indices are visited
  // in descending id order along the path to the compute. Bit 0: the left-hand side; bit
  // 1 + p: factor p.
  static uint32_t ComposeBit(const std::vector<int8_t>& fused, IndexSet set, uint32_t child_bit);
  static uint32_t LeafSig(const Problem& q, const std::vector<int8_t>& order);
  static uint32_t ComposeSig(const Problem& q, const SplitCase& sc,
                             const std::vector<int8_t>& fused, uint32_t psig, uint32_t csig);

 private:
  struct Entry {
    Problem problem;
    bool has_all_splits = false, has_stage1_splits = false;
    std::vector<SplitCase> all_splits;            // every split, for the whole-space count
    std::vector<SplitCase> own_stage1_splits;     // Stage-1 splits made without the others
    std::vector<const SplitCase*> stage1_splits;  // the splits within the memory-depth bound
  };

  std::vector<int8_t> IndicesOf(int tensor) const;
  static Operand MakeOperand(uint32_t mask, bool temp, std::vector<int8_t> indices);
  static Operand Strip(const Operand& o, IndexSet fused);
  bool IsSparseInput(const Operand& o) const;
  int Intern(Problem p);
  static bool CanPlace(const Problem& q, int x, IndexSet placed);
  void ForEachFused(const Problem& q, IndexSet prod, IndexSet cons,
                    const std::function<void(const std::vector<int8_t>&, IndexSet)>& f);
  Split MakeSplit(const Problem& q, uint32_t pset, IndexSet fused_set);
  static std::vector<uint32_t> ProducerSets(const Problem& q);
  int LoopVariable(const Problem& q, int x) const;
  int TempSize(IndexSet shared);
  std::vector<SplitCase> EnumerateSplits(int id, int max_shared);

  Expression e_;
  CostVariables vars_;
  int max_memory_depth_ = 2;
  int num_inputs_ = 0;
  std::vector<std::unique_ptr<Entry>> problems_;  // stable addresses
  std::unordered_map<std::string, int> problem_ids_;
  PolyTable polys_;
  int root_ = -1;
};

// ---- counting the whole space (space_count.cpp) ------------------------------------------

// Counts trees by recursion over the sub-problems, per order signature (how each temporary's
// indices are ordered on the paths to its writer and reader), within a work budget.
class SpaceCounter {
 public:
  explicit SpaceCounter(Subproblems& subproblems) : sub_(subproblems) {}
  // Trees whose temporaries have order <= max_temporary_order; nothing when that takes more
  // than `budget` steps.
  std::optional<u128> CountAll(int max_temporary_order, size_t budget);

 private:
  // Order of each temporary's indices along the path to the compute that writes (entry 0, the
  // left-hand side) or reads it (entry 1 + factor position), 4 bits per index (id + 1), outer
  // first in the low bits; 0 for non-temporaries.
  struct OrderSig {
    std::array<uint64_t, 9> order{};
    bool operator==(const OrderSig& o) const { return order == o.order; }
  };
  struct OrderSigHash {
    size_t operator()(const OrderSig& s) const;
  };
  using SigCounts = std::unordered_map<OrderSig, u128, OrderSigHash>;
  struct Data {
    std::map<int, SigCounts> counts;  // by the bound on temporary order counted under
    std::set<int> counting;
  };

  Data& DataOf(int id);
  void Charge(size_t work);
  const SigCounts& Counts(int id, int max_order);

  Subproblems& sub_;
  std::vector<std::unique_ptr<Data>> data_;  // by problem id; stable addresses
  size_t budget_ = 0;  // combination steps the count may still take
};

// ---- Stage 1: summaries (stage1_summary.cpp) ---------------------------------------------

// The Stage-1 trees (temporaries of order <= the memory-depth bound) summarized per Stage-1
// order signature without materializing them: how many have each (loop depth, memory depth),
// and their distinct (time, memory) polynomial pairs.
class Stage1Summary {
 public:
  explicit Stage1Summary(Subproblems& subproblems) : sub_(subproblems) {}
  // Per signature: trees by loop depth * 256 + memory depth.
  using DepthCounts = std::map<uint32_t, std::map<int, u128>>;
  // Per signature: (time id << 32 | memory id) of the trees.
  using Classes = std::map<uint32_t, std::unordered_set<uint64_t>>;

  const DepthCounts& Depths(int id);
  // False when more than `budget` pairs of sub-tree classes would have to be combined.
  bool ComputeClasses(int id, size_t& budget);
  const Classes& classes(int id) { return DataOf(id).classes; }

 private:
  struct Data {
    bool summarizing = false, summarized = false;
    DepthCounts depths;
    bool classifying = false, classified = false;
    Classes classes;
  };
  Data& DataOf(int id);

  Subproblems& sub_;
  std::vector<std::unique_ptr<Data>> data_;  // by problem id; stable addresses
};

// ---- materialized trees (materialize.cpp) ------------------------------------------------

// A materialized (sub-)tree. Temporaries here have at most two indices (Stage 1), so the order
// signature is one bit per temporary (Subproblems::ComposeBit).
struct Node {
  int32_t problem = -1;
  int32_t producer = -1, consumer = -1;  // -1: a leaf
  uint32_t producer_set = 0;             // factor positions multiplied by the producer
  uint64_t loops = 0;                    // 4 bits per loop, outer first
  uint8_t num_loops = 0;
  uint8_t loop_depth = 0, memory_depth = 0;
  uint32_t sig = 0;
  int32_t time = 0, memory = 0;
};

inline int LoopAt(const Node& n, int k) {
  return int((n.loops >> (4 * k)) & 0xF);
}

class TreeBuilder {
 public:
  explicit TreeBuilder(Subproblems& subproblems) : sub_(subproblems) {}
  // The root trees within the bounds, as handles (see BigSpace::Materialize).
  std::vector<size_t> Materialize(int max_loop_depth, int max_memory_depth, size_t limit);

  size_t tree_count() const { return trees_.size(); }
  const Node& tree(size_t handle) const { return nodes_[trees_.at(handle)]; }
  int32_t tree_node(size_t handle) const { return trees_.at(handle); }
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  // Node ids of a problem's trees by max loop depth * 256 + max memory depth.
  using Built = std::map<int, std::vector<int32_t>>;
  Built& BuiltOf(int id);
  const std::vector<int32_t>& Build(int id, int max_loop, int max_memory);

  Subproblems& sub_;
  std::vector<Node> nodes_;
  std::vector<std::unique_ptr<Built>> built_;  // by problem id; stable addresses
  size_t limit_ = 0;
  std::vector<int32_t> trees_;  // materialized root trees, in the order first materialized
  std::unordered_map<int32_t, size_t> tree_of_;
};

// ---- schedules (render.cpp) ----------------------------------------------------------------

// Materialized tree `node` as a schedule (see BigSpace::ToSchedule).
Schedule RenderSchedule(const Subproblems& subproblems, const std::vector<Node>& nodes,
                        int32_t node);

}  // namespace sparsetune::sparseauto_internal
