#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/expression.hpp"
#include "tensor/format.hpp"

namespace sparsetune {

enum class Partition { kDynamic, kBalanced };
const char* PartitionName(Partition partition);  // "dynamic", "balanced"

// A linear section of a (branched) schedule tree: a chain of loops ending either in a compute
// statement or in a where node whose producer fills a dense temporary that its consumer reads.
// A linear schedule is a single section whose compute is the whole expression.
struct ScheduleNode {
  std::vector<std::string> loops;  // loop variables, outer to inner: "i", or "i1"/"i0" when split
  std::string compute;             // "t += B(i,j) * C(i,k)"; empty: the whole expression
  std::string temp;                // where nodes: "t" (scalar) or "T(l)" (dense, row-major)
  std::unique_ptr<ScheduleNode> producer;
  std::unique_ptr<ScheduleNode> consumer;

  ScheduleNode() = default;
  ScheduleNode(ScheduleNode&&) = default;
  ScheduleNode& operator=(ScheduleNode&&) = default;
  // Iterative: a tree of any depth is released without recursion.
  ~ScheduleNode();

  bool is_where() const { return producer != nullptr; }
  // Iterative as well.
  std::unique_ptr<ScheduleNode> Clone() const;
};

// The farthest a compressed loop may prefetch ahead, in nonzeros.
constexpr int kMaxPrefetchDistance = 256;

// What a schedule may hold, whatever its source (a file, the database, a model's schedule set,
// an import): bounds that the generated code, the packer and the model's encoding can hold, and
// that keep every walk over a schedule small. Schedule::FromJson and Lower check them
// (Schedule::LimitViolation), so nothing past the boundary meets larger values.
struct ScheduleLimits {
  // Split sizes and the OpenMP chunk are 32-bit in generated code and packed coordinates.
  static constexpr int64_t kMaxSplit = 2147483647;
  static constexpr int64_t kMaxChunk = 2147483647;
  static constexpr int kMaxThreads = 4096;
  static constexpr int kMaxUnroll = 16;
  // Structure: where nodes nested at most this deep, this many sections (loop chains) and
  // loops in all, this many loops in one section, levels, splits and transposed inputs.
  static constexpr int kMaxWhereDepth = 16;
  static constexpr int kMaxSections = 64;
  static constexpr int kMaxLoopsPerSection = 64;
  static constexpr int kMaxLoops = 256;
  static constexpr int kMaxEntries = 64;  // format levels, splits, transposed names
  static constexpr size_t kMaxNameBytes = 64;
  static constexpr size_t kMaxTextBytes = 1024;  // compute and temp text
  // Schedule JSON: nesting and text size.
  static constexpr int kMaxJsonDepth = 4 * kMaxWhereDepth + 16;
  static constexpr size_t kMaxJsonBytes = size_t(1) << 20;
};

// Format, loop structure and parallelization of one kernel, in plain JSON:
// {"splits": {"i": 8}, "tree": {"loops": ["i1","k","i0"]}, "format": ["i1:U","k:C","i0:U"],
//  "parallel": {"index": "i1", "chunk": 32, "threads": 0}}
// Split index i into i1 (outer) and i0 (inner); a split of 1 means no split. The format lists
// the sparse operand's levels, outer to inner. threads 0 means every hardware thread.
struct Schedule {
  std::map<std::string, int64_t> splits;
  ScheduleNode root;
  std::vector<std::pair<std::string, LevelKind>> format;
  // Grouped compressed levels (LevelSpec::group), by level variable: "k:G4" in the format.
  std::map<std::string, int> groups;
  std::string parallel;  // loop variable; empty means serial
  int64_t chunk = 1;
  int threads = 0;
  // How the parallel loop's iterations go to threads: OpenMP dynamic chunks of `chunk`
  // iterations, or one contiguous range per thread holding an equal share of the nonzeros
  // below the loop (chunk is then unused and canonically 1).
  Partition partition = Partition::kDynamic;
  // Independent partial sums for reductions over compressed loops: the loop is unrolled this
  // many times, so consecutive nonzeros do not wait on one chain of dependent additions.
  int unroll = 1;
  // Compressed levels store coordinates in the fewest bytes that hold them (8 or 16 bits,
  // absolute or relative to each segment's first): CoordinateEncoding. Off, every coordinate
  // is a 32-bit integer, as in TACO.
  bool narrow_coordinates = false;
  // Compressed loops that gather rows of a dense operand through their coordinate (SpMM's
  // B(k,:), SDDMM's C(j,:), SpMV's x(k)) prefetch the rows of the nonzero this many positions
  // ahead (into the next segments too, when coordinates are absolute); 0 leaves it to the
  // hardware, which cannot predict an indirect address.
  int prefetch = 0;
  // Coordinate lists read four entries at a time (unroll 4, 16-bit coordinates): a batch whose
  // four entries update one output element (a run of a long row's entries) adds them first and
  // stores once, where four stores to one address would each wait for the one before. A test
  // per batch that costs where runs are rare (4% on a Chung-Lu graph), so it is tuned.
  bool merge_runs = false;
  // Every value of the sparse operand is the same (a pattern matrix's 1): the kernel reads one
  // value instead of one per nonzero, four bytes a nonzero fewer. Not a choice to rank but a
  // fact of the operand that tune applies to every format that stores no padding zeros (which
  // a single value would fill); Pack refuses an operand whose values differ (an emitted kernel
  // takes it with a second variant that keeps a value per nonzero).
  bool uniform_values = false;
  // Matrices: rows (and columns, when square) renumbered for locality before packing; the
  // kernel permutes its dense operands on entry and its output on exit.
  OrderingKind ordering = OrderingKind::kNone;
  // Dense inputs of order 2 that the kernel reads through a transposed copy made on entry (its
  // cost is one pass over the operand per call): SDDMM's C(k,j) becomes contiguous in k.
  std::vector<std::string> transposed;  // sorted, distinct

  Schedule() = default;
  Schedule(const Schedule& other) { *this = other; }
  Schedule& operator=(const Schedule& other);
  Schedule(Schedule&&) = default;
  Schedule& operator=(Schedule&&) = default;

  int64_t SplitOf(const std::string& index) const {
    auto it = splits.find(index);
    return it == splits.end() ? 1 : it->second;
  }
  // Canonical form: splits of 1 dropped and their variables renamed back to the index
  // (i1 -> i, i0 removed), so equal kernels have equal JSON.
  void Canonicalize();
  nlohmann::json ToJson() const;
  std::string CanonicalJson() const;  // compact, sorted keys, after Canonicalize()
  // Structure and ScheduleLimits; semantic checks happen when the schedule is lowered against
  // an expression. Throws InputError naming `what`, the field and the problem.
  static Schedule FromJson(const nlohmann::json& json, const std::string& what);
  // The first bound of ScheduleLimits this schedule breaks, naming the field and the limit;
  // "" when it keeps them all. Iterative over the tree.
  std::string LimitViolation() const;
  // Whether its format stores explicit zeros (LevelsStorePadding), which uniform_values
  // cannot serve.
  bool StoresPadding() const;
  // One line: "i1 k i0 | i1:U k:C i0:U | par i1/32"
  std::string Summary() const;
};

// JSON text parsed with bounded nesting and size (iteratively: no recursion over the input).
// Syntax errors, numbers out of range (1e400) and nesting deeper than max_depth throw
// InputError naming `what`, the line and the field ("splits.i") where there is one.
nlohmann::json ParseBoundedJson(std::string_view text, const std::string& what, int max_depth,
                                size_t max_bytes);

// A schedule from its JSON text (a file's contents, a database row, an imported line):
// ParseBoundedJson with the schedule bounds, then Schedule::FromJson. The one way untrusted
// schedule text becomes a Schedule.
Schedule ParseScheduleText(std::string_view text, const std::string& what);

// The name of a split variable: index + "1" (outer) or "0" (inner), or the index when whole.
std::string SplitVarName(const std::string& index, SplitPart part);

// TACO's default (FixedCSR): the sparse operand as CSR/CSF in mode order, its modes outermost,
// the dense-only indices inside them in order of appearance, the first mode parallel with
// dynamic chunk 128 for SpMV-like kernels (no dense-only index) and 32 otherwise.
Schedule FixedCsrSchedule(const Expression& expression);

}  // namespace sparsetune
