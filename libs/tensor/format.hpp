#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/permutation.hpp"

namespace sparsetune {

// Level format of one storage level: U (dense range), C (pos/crd), or S (sliced): a compressed
// level stored across the lanes of the U level right below it, which must range over the
// inner part of a split mode (a slice of rows, say). Each parent position holds as many slots
// as the longest of its lanes has entries; slot q of lane c is position q * lanes + c of the
// lane level, and the S level's coordinate is stored there, per lane. Shorter lanes are padded
// with zeros (at their last coordinate). This is SELL-C (sliced ELLPACK): one vector
// instruction serves a whole slice, with no branch per row.
// Q (singleton): one coordinate per position of the level above it, with no pos array. The
// compressed level right above a singleton then holds one position per entry below it, its
// coordinates repeating where entries share them (TACO's non-unique compressed level), so
// {k0:C, i0:Q} is a coordinate list (COO): inside blocks, {i1:U, k1:C, k0:C, i0:Q} walks each
// block's entries by column with no branch per row or column.
enum class LevelKind : uint8_t { kDense, kCompressed, kSliced, kSingleton };
const char* LevelKindLetter(LevelKind kind);  // "U", "C", "S", "Q"
// Which part of a (possibly split) mode a level stores: i -> (i1 = i / s, i0 = i % s).
enum class SplitPart : uint8_t { kWhole, kOuter, kInner };

struct LevelSpec {
  int mode = 0;
  SplitPart part = SplitPart::kWhole;
  LevelKind kind = LevelKind::kDense;
  // Compressed levels only: every segment is padded (with explicit zeros at its last
  // coordinate) to a multiple of `group` entries, so kernels walk it in groups of fixed length.
  // Under a U row level this is Insum's GroupCOO(G) with a row pointer instead of a row
  // coordinate per group; over blocks (i1 U, k1 C, i0 U, k0 U) it is BlockGroupCOO. Written
  // "k:G4".
  int group = 1;
  bool operator==(const LevelSpec& o) const {
    return mode == o.mode && part == o.part && kind == o.kind && group == o.group;
  }
};

constexpr int kMaxGroup = 64;

// Whether levels store explicit zeros at some positions: a U level below a compressed or
// sliced one (dense blocks), a sliced level (its shorter lanes), a grouped level (its last
// group), or no level but U ones (a dense array). Only kind and group are read.
bool LevelsStorePadding(const std::vector<LevelSpec>& levels);

// How a sparse tensor is stored: a split size per mode (1 = unsplit) and a hierarchy of levels
// over the split modes, outer to inner. CSR is {i:U, k:C}; BCSR {i1:U, k1:C, i0:U, k0:U}.
struct StorageFormat {
  std::vector<int64_t> split;
  std::vector<LevelSpec> levels;
  // Matrices: the rows (and, when square, the columns alike) are renumbered by this ordering
  // before the levels are built.
  OrderingKind ordering = OrderingKind::kNone;
  // Every entry has the same value: one value is stored, none per position. Only for formats
  // that store no padding zeros (StoresPadding).
  bool uniform_values = false;

  static StorageFormat Csr();
  static StorageFormat Csf(int order);  // all levels compressed, mode order
  // Level extent for the given tensor dims: whole -> dim, outer -> ceil(dim/s), inner -> s.
  int64_t LevelExtent(int level, const std::vector<int64_t>& dims) const;
  // Empty when the format is well formed for these dims, else the reason.
  std::string Check(const std::vector<int64_t>& dims) const;
  // Whether some stored positions are explicit zeros, no entry of the tensor (LevelsStorePadding).
  bool StoresPadding() const { return LevelsStorePadding(levels); }
  // Why uniform_values does not apply (padding zeros, which one value would fill); "" when it
  // does or is not asked for.
  std::string UniformValuesRefusal() const;
  // "i1:U k1:C i0:U k0:U" with the given mode names.
  std::string Describe(const std::vector<std::string>& mode_names) const;
  bool operator==(const StorageFormat& o) const {
    return split == o.split && levels == o.levels && ordering == o.ordering &&
           uniform_values == o.uniform_values;
  }
};

// How a compressed level stores its coordinates for kernels: unsigned integers of `bits` bits
// (8, 16 or 32), absolute, or relative to the first coordinate of their segment (a per-parent
// base) when that makes them fit in fewer bytes. Fewer index bytes per nonzero is the largest
// single saving for memory-bound kernels.
struct CoordinateEncoding {
  int bits = 32;
  bool relative = false;
  bool operator==(const CoordinateEncoding& o) const {
    return bits == o.bits && relative == o.relative;
  }
  bool operator!=(const CoordinateEncoding& o) const { return !(*this == o); }
  // "u16", "u8+base", "i32".
  std::string Describe() const;
};

// Coordinate of a mode value within a level.
inline int64_t LevelCoordinate(int64_t value, SplitPart part, int64_t split) {
  return part == SplitPart::kWhole   ? value
         : part == SplitPart::kOuter ? value / split
                                     : value % split;
}

}  // namespace sparsetune
