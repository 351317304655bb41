#pragma once

// WACO SuperSchedule templates: the format-and-schedule spaces that WACO samples to collect
// training data, the encoding its cost model consumes, and the mapping to and from the
// schedules that sparsetune lowers and stores.
//
// Every index of the kernel is split once, i -> (i1 outer, i0 inner), by a power of two (1 means
// unsplit). A point of the space picks the split sizes, an order of all split variables
// (x1 always before x0), U or C for each level of the sparse operand A, the parallel variable
// and the OpenMP chunk (a power of two). A's level order is the loop order restricted to A's
// variables (a concordant traversal), so it is not a separate choice. The thread count is not
// searched: it is the machine's hardware thread count (WACO fixed it at its 48).
//
// The spaces follow what WACO's artifact samples (sparse splits up to half the dimension, at
// most 2^16; dense splits up to half the dense size, at most 128):
//   spmv   y(i) = A(i,k) x(k)          variables i1 i0 k1 k0, parallel i1, chunk 1..256.
//   spmm   C(i,j) = A(i,k) B(k,j)      variables i1 i0 k1 k0 j1 j0; j0 innermost, j1 after i1,
//                                      j1 j0 the two innermost when the j split is below 8;
//                                      parallel i1, chunk 1..256. 32% of the samples come from
//                                      the artifact's CSR-like sub-space: i, k split by 1..32,
//                                      order i1 k1 j1 i0 k0 j0, i0 U, k1 C, k0 U.
//   sddmm  D(i,j) = A(i,j) B(i,k) C(k,j)  variables i1 i0 j1 j0 k1 k0; k0 innermost, k1 k0 the
//                                      two innermost when the k split is below 8; A not all U;
//                                      parallel on whichever of i1 and j1 comes first; chunk
//                                      1..32. 68% come from the artifact's sub-space: i, j split
//                                      by 1..32, one of the orders i1 j1 k1 i0 j0 k0,
//                                      j1 i1 k1 j0 i0 k0, i1 j1 k1 j0 i0 k0, j1 i1 k1 i0 j0 k0,
//                                      i0 and j0 U.
//   mttkrp D(i,j) = A(i,k,l) B(k,j) C(l,j)  (not published by WACO; this design follows its
//                                      SpMM template, with A's three modes in place of two)
//                                      variables i1 i0 k1 k0 l1 l0 j1 j0: i, k, l and j each
//                                      split once; j0 innermost, j1 after i1, j1 j0 the two
//                                      innermost when the j split is below 8 (always with the
//                                      default j = 16 unless j is split by 8); U or C for each
//                                      of A's six levels, not all U (a dense tensor). Parallel
//                                      on i1 always: D is indexed by i, so no two threads
//                                      update the same row and no atomics are needed, whatever
//                                      loops come before i1. Chunk 1..256. 32% of the samples
//                                      come from a blocked-CSF sub-space: i, k, l split by
//                                      1..32, order i1 k1 l1 i0 k0 l0 j1 j0, k1 and l1 C,
//                                      i0 k0 l0 U (dense blocks under a CSF of blocks).
// Other points of the full space are drawn uniformly: each split uniformly among its powers of
// two, then a loop order uniformly among the valid ones, each level's format, the chunk.
// Draws that do not lower are redrawn; formats that packing refuses (padding cap) are not
// detected here, so a caller records them as failures.
//
// Normal form: when an index is unsplit, its x0 is a loop of one iteration, so the schedule
// does not depend on where x0 sits or on its format. A SuperSchedule in normal form places x0
// right after x1 and stores it U. Then SuperSchedule <-> canonical Schedule is one-to-one, and
// FromSchedule is the deterministic inverse of ToSchedule.
//
// Beyond WACO, each point also picks what makes generated code compete with library kernels:
//   threads      1 or every hardware thread (small inputs lose more to starting threads than
//                they gain); 1 with probability 1/4;
//   partition    OpenMP dynamic chunks, or one contiguous range per thread balanced by
//                nonzeros (chunk is then 1); even odds;
//   unroll       1, 2, 4 or 8 independent partial sums of a reduction over a compressed loop
//                (normal form: 1 when the loop nest has no such reduction); uniform;
//   narrow       coordinates in the fewest bytes (CoordinateEncoding): always on in samples;
//                off only for schedules taken from outside the space (FixedCSR).
// SDDMM reads C(k,j) through a transposed copy in half of its samples (its k0 loop is then
// contiguous; the copy costs one pass over C per call).
// SpMV also draws a quarter of its samples from the sliced family (SELL-C, LevelKind::kSliced):
// i split by 2 to 32 lanes, k whole, order i1 k i0, A stored i1:U k:S i0:U.
//
// Encoding for the model (fixed size per kernel, as WACO's embedder): categorical ids
//   log2 split of each index (17 values for A's modes, 8 for dense ones),
//   each of A's level formats (C = 0, U = 1, the artifact's convention; S = 2),
//   the parallel variable's id, log2 chunk (9 values, 6 for sddmm),
//   threads (0: one, 1: all), partition (0: dynamic, 1: balanced), log2 unroll (4 values),
//   coordinates (0: 32-bit, 1: narrow), and for SDDMM transpose_C (0: as given, 1: transposed);
// and the loop order as an n x n permutation matrix with perm[id(order[pos]), pos] = 1, where
// id numbers the variables as listed above. Unsplit indices keep their slots (split id 0, x0
// right after x1).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/expression.hpp"
#include "ir/schedule.hpp"
#include "tensor/format.hpp"

namespace sparsetune {

struct SuperSchedule {
  std::map<std::string, int64_t> splits;  // every index of the kernel; powers of two
  std::vector<std::string> order;         // every split variable, outer to inner
  std::vector<LevelKind> formats;         // per variable of A, in the template's variable order
  std::string parallel;                   // a split variable
  int64_t chunk = 1;                      // dynamic partitions only (1 when balanced)
  int threads = 0;                        // 1, or every hardware thread (0 or their count)
  Partition partition = Partition::kDynamic;
  int unroll = 1;           // partial sums of a compressed reduction: 1, 2, 4 or 8
  bool narrow = true;       // narrow coordinates (every sample); false: TACO's 32-bit ones
  bool transposed = false;  // SDDMM: C read through a transposed copy

  bool operator==(const SuperSchedule& o) const {
    return splits == o.splits && order == o.order && formats == o.formats &&
           parallel == o.parallel && chunk == o.chunk && threads == o.threads &&
           partition == o.partition && unroll == o.unroll && narrow == o.narrow &&
           transposed == o.transposed;
  }
  bool operator!=(const SuperSchedule& o) const { return !(*this == o); }
  // {"splits": {...}, "order": [...], "formats": {"i1": "U", ...}, "parallel": ..., ...}
  nlohmann::json ToJson() const;
};

struct WacoSampleOptions {
  // Threads written into every sample; 0 picks the machine's hardware thread count.
  int threads = 0;
  // Draw the artifact's sub-space share (spmm, sddmm, mttkrp); false samples the full space
  // uniformly.
  bool subspaces = true;
};

// Names and sizes of the categorical inputs, in encoding order.
struct EncodingLayout {
  std::vector<std::string> names;  // "split_i", ..., "format_i1", ..., "parallel", "chunk"
  std::vector<int> cardinalities;
  int order_size = 0;  // n: the order matrix is n x n
};

struct ScheduleEncoding {
  std::vector<int> categorical;  // ids, in EncodingLayout order
  std::vector<float> order;      // n * n, row-major: order[id * n + pos]
  // The artifact's flat row: split ids, the order matrix, format ids, parallel id, chunk id.
  std::vector<float> Flat(int num_splits) const;
};

class WacoTemplate {
 public:
  // The template of a named kernel, or nullptr when WACO has none for it.
  static std::unique_ptr<WacoTemplate> ForKernel(const std::string& kernel);
  static const std::vector<std::string>& Kernels();  // spmv spmm sddmm mttkrp

  ~WacoTemplate();

  const std::string& kernel() const { return kernel_; }
  // Changes whenever the space or its encoding changes: a model trained on another version
  // cannot read this template's encodings.
  static int Version();
  const Expression& expression() const { return expression_; }
  // Indices in encoding order: A's modes, then the dense ones.
  const std::vector<std::string>& indices() const { return indices_; }
  // Split variables: x1, x0 of each index in encoding order.
  const std::vector<std::string>& variables() const { return variables_; }
  // A's variables (the first 2 * order of variables()).
  const std::vector<std::string>& level_variables() const { return level_variables_; }

  // Largest log2 split of an index for these sizes (0: it cannot be split).
  int MaxLog2Split(const std::string& index, const std::map<std::string, int64_t>& sizes) const;

  // One valid point (it lowers), in normal form. Sizes of every index are needed.
  SuperSchedule Sample(const std::map<std::string, int64_t>& sizes, std::mt19937_64& rng,
                       const WacoSampleOptions& options = {}) const;
  // Up to `count` samples whose canonical schedules differ from each other and from `exclude`
  // (canonical JSON); fewer when the space runs out (small tensors).
  std::vector<SuperSchedule> SampleDistinct(const std::map<std::string, int64_t>& sizes, int count,
                                            std::mt19937_64& rng,
                                            const WacoSampleOptions& options = {},
                                            const std::set<std::string>& exclude = {}) const;

  // Empty when the point belongs to the template for these sizes (the full space or one of the
  // sub-spaces, in normal form), else why not.
  std::string CheckMember(const SuperSchedule& s,
                          const std::map<std::string, int64_t>& sizes) const;
  // Puts a structurally complete point into normal form.
  void Normalize(SuperSchedule& s) const;

  // The members of the template one move away from `s` for these sizes, each in normal form and
  // lowering, none equal to `s` or to each other. A move halves, doubles, quarters or quadruples
  // one split (an unsplit index split by two or four), doubles one split while halving another
  // (a tile of the same size, reshaped), swaps two adjacent loops, flips one level
  // of A between U and C, switches the partition, divides or multiplies the chunk by four,
  // halves or doubles the partial sums, switches between one thread and all, or reads SDDMM's
  // C the other way. A tune's second round measures the most promising of them around its best
  // schedules: the best schedule is often one such move from a good one. With `moves`, each
  // neighbour's kind of move, in the same order: "split <index> up" or "down", "reshape", "order",
  // "format", "partition", "chunk", "unroll", "threads", "transpose" (the classes whose
  // success rates RefinementMoveWeights learns).
  std::vector<SuperSchedule> Neighbours(const SuperSchedule& s,
                                        const std::map<std::string, int64_t>& sizes,
                                        std::vector<std::string>* moves = nullptr) const;

  // The canonical schedule of a point.
  Schedule ToSchedule(const SuperSchedule& s) const;
  // The point (normal form) of a schedule over this template's variables, or nullopt with the
  // reason when the schedule is not expressible: splits not powers of two or out of the
  // encoding's range, a level order that is not the loop order, serial, a chunk out of range.
  std::optional<SuperSchedule> FromSchedule(const Schedule& schedule, std::string* error) const;

  EncodingLayout Layout() const;
  ScheduleEncoding Encode(const SuperSchedule& s) const;

 private:
  struct Spec;
  explicit WacoTemplate(const Spec& spec);
  int VarId(const std::string& var) const;
  bool IsDense(const std::string& index) const;
  int SplitCardinality(const std::string& index) const;
  bool FullOrderAllowed(const std::vector<int>& position,
                        const std::map<std::string, int64_t>& splits) const;
  const std::vector<std::vector<int>>& ValidOrders(
      const std::map<std::string, int64_t>& splits) const;
  std::string ParallelFor(const std::vector<std::string>& order) const;
  SuperSchedule SampleFull(const std::map<std::string, int64_t>& sizes, std::mt19937_64& rng,
                           int threads) const;
  // A point of the sliced family (SELL-C SpMV).
  SuperSchedule SampleSliced(const std::map<std::string, int64_t>& sizes, std::mt19937_64& rng,
                             int threads) const;
  std::string CheckSliced(const SuperSchedule& s,
                          const std::map<std::string, int64_t>& sizes) const;
  // Draws threads, partition and partial sums; narrow coordinates.
  void SampleCodeChoices(SuperSchedule& s, std::mt19937_64& rng, int threads) const;
  // Whether the point's loop nest has a reduction over a compressed loop (unroll matters).
  bool HasPartialSums(const SuperSchedule& s) const;
  SuperSchedule SampleSubspace(const std::map<std::string, int64_t>& sizes, std::mt19937_64& rng,
                               int threads) const;
  std::string CheckFull(const SuperSchedule& s, const std::map<std::string, int64_t>& sizes) const;
  std::string CheckSubspace(const SuperSchedule& s,
                            const std::map<std::string, int64_t>& sizes) const;

  std::unique_ptr<Spec> spec_;
  std::string kernel_;
  Expression expression_;
  std::vector<std::string> indices_;
  std::vector<std::string> variables_;
  std::vector<std::string> level_variables_;
  int max_log2_chunk_ = 8;
  mutable std::mutex orders_mutex_;
  mutable std::map<std::string, std::vector<std::vector<int>>> orders_;  // by split pattern
};

}  // namespace sparsetune
