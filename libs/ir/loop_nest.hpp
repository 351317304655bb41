#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/expression.hpp"
#include "ir/schedule.hpp"
#include "tensor/format.hpp"

namespace sparsetune {

// The loop-nest IR that every schedule lowers into, whether a WACO SuperSchedule (one chain of
// split loops) or a SparseAuto branched iteration graph (a tree of loop chains joined by where
// nodes). It is still index-level: codegen decides how addresses are computed.

// A loop variable after splitting: index i, or its parts i1 = i / s and i0 = i % s.
struct LoopVar {
  std::string name;
  std::string index;
  SplitPart part = SplitPart::kWhole;
};

enum class LoopKind {
  kDense,   // a plain range over the variable
  kLevelU,  // a U level of the sparse operand: a range that also advances its position
  kLevelC,  // a C level of the sparse operand: pos/crd iteration
  kLevelS,  // an S (sliced) level: its slots; the coordinate is read per lane, one loop down
  kLevelQ,  // a Q (singleton) level: no loop, the one coordinate at the parent's position
};

// A dense temporary of a where node (a scalar when it has no indices).
struct Temporary {
  std::string name;
  std::vector<std::string> indices;
  bool per_thread = false;  // declared inside a parallel loop: one copy per thread
  bool scalar() const { return indices.empty(); }
};

// What a compute reads or writes: an expression tensor or a temporary, with its indices.
struct NestAccess {
  int tensor = -1;  // Expression::tensors id, or -1 for a temporary
  int temp = -1;    // LoopNest::temps id
  std::vector<std::string> indices;
};

struct NestNode {
  enum class Kind { kLoop, kWhere, kReduce, kCompute };
  Kind kind = Kind::kCompute;

  // kLoop
  LoopVar var;
  LoopKind loop_kind = LoopKind::kDense;
  int level = -1;  // sparse level for kLevelU / kLevelC / kLevelS
  // The lanes of a sliced level (the U level right below it): this loop also defines the
  // sliced level's index, whose coordinate is stored per lane.
  int sliced_level = -1;
  bool parallel = false;  // OpenMP work-sharing loop
  bool balanced = false;  // parallel loops: one range per thread, balanced by nonzeros
  bool simd = false;      // innermost loop: #pragma omp simd
  // A dense loop that sums a product into a register and whose varying factors are all dense
  // and contiguous along it: several vector partial sums, the invariant factors applied once.
  bool vector_reduction = false;
  // Compressed loops: over a reduction into a register, independent partial sums; over a
  // vector reduction, that many nonzeros at a time sharing each load of the factors that do
  // not depend on them (unroll-and-jam).
  int unroll = 1;
  // Compressed loops that gather dense rows through their coordinate: prefetch the rows of the
  // nonzero this many positions ahead (0: none).
  int prefetch = 0;
  // Coordinate lists batched four at a time: a batch of one output element stores once.
  bool merge_runs = false;
  int group = 1;  // grouped compressed levels: segments are multiples of this
  // Register tiling: this reduction loop accumulates the output slice that `tile_loop` (a
  // split-inner dense loop under it, over the output's last index) ranges over in registers,
  // and adds it to the output once after the loop instead of on every iteration.
  const NestNode* tile_loop = nullptr;
  // The tile's loop reads some operand that varies with it non-contiguously (a gather through
  // a sliced level's coordinates, or the sparse values): the tile is an array updated by a
  // SIMD loop rather than vectors updated by contiguous loads.
  bool tile_gathers = false;
  // The tile holds the whole reduction of its output slice (no reduction loop encloses this
  // one): the slice is stored once, not added to a cleared output.
  bool tile_complete = false;
  // A tile over rows too: this loop, over the inner part of a split output index between the
  // reduction and `tile_loop` (the rows of a block row, a U level of the sparse operand), holds
  // one slice per row, so each load of the gathered operand serves every row of the block.
  const NestNode* tile_rows = nullptr;
  // A complete tile under loops that visit every output row (dense or U levels, no compressed
  // ones that skip empty rows): with whole slices it writes every element of the output.
  bool tile_covers_output = false;
  std::vector<int> thread_temps;  // parallel loops: temporaries allocated per thread
  std::vector<int> reductions;    // parallel loops: accumulators declared outside, summed inside
  // > 0: at the start of each iteration, clear the output slice whose first `zero_prefix`
  // indices the enclosing loops fix (only this iteration writes it), instead of clearing the
  // whole output up front: the slice is then still in cache when it is accumulated.
  int zero_prefix = 0;
  // With zero_prefix: this loop runs over the outer part of the next output index, so each
  // iteration clears its block of that index's split (the rows of a row block).
  bool zero_block = false;

  // kWhere: children[0] is the producer, children[1] the consumer.
  int temp = -1;

  // kReduce (sums its body into accumulator `accumulator`, then updates `lhs`) and kCompute
  // (updates `lhs`, or adds into `accumulator` when that is set).
  NestAccess lhs;
  std::vector<NestAccess> factors;  // kCompute only
  int accumulator = -1;
  bool assign = false;  // overwrite instead of accumulate (each element written once)
  bool atomic = false;  // several threads may update the same element

  std::vector<std::unique_ptr<NestNode>> children;
};

struct LoopNest {
  Expression expression;
  Schedule schedule;                      // canonical
  std::map<std::string, int64_t> splits;  // every index, 1 when unsplit
  StorageFormat storage;                  // how the sparse operand must be packed
  std::vector<LoopVar> level_vars;        // per storage level
  std::vector<Temporary> temps;
  int num_accumulators = 0;
  bool zero_output = true;       // the kernel clears its output before accumulating
  std::vector<bool> transposed;  // per tensor: a dense input read through a transposed copy

  // The indices of a dense tensor in memory order (row-major): reversed when transposed.
  std::vector<std::string> StorageIndices(int tensor) const;
  std::unique_ptr<NestNode> root;

  // Indented text of the nest, for --explain and tests.
  std::string ToString() const;
};

// Lowering succeeds or gives the reason the schedule is invalid for the expression.
struct LowerOutcome {
  std::unique_ptr<LoopNest> nest;
  std::string error;
};

LowerOutcome Lower(const Expression& expression, const Schedule& schedule);

// Whether `n` walks a coordinate list whose entries each update the output: a sequential
// compressed loop over every entry (the level above a singleton) with the singleton's loop
// right below it and one compute under that, adding into the output itself (no register
// sum, no atomics). Such a loop takes the schedule's unroll as the entries handled together.
bool IsCoordinateListScatter(const NestNode& n);

}  // namespace sparsetune
