#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/bulk_allocator.hpp"
#include "base/dtype.hpp"
#include "tensor/coo.hpp"
#include "tensor/format.hpp"
#include "tensor/permutation.hpp"

namespace sparsetune {

// One storage level. U levels hold no arrays: position = parent * extent + coordinate.
// C levels hold pos (size parent positions + 1) and one coordinate per position, stored as
// `encoding` says: crd_bytes holds positions * bits / 8 bytes of unsigned integers; relative
// coordinates add base[parent].
struct PackedLevel {
  LevelKind kind = LevelKind::kDense;
  int64_t extent = 0;
  int64_t positions = 0;  // number of positions at this level
  BulkVector<int32_t> pos;
  CoordinateEncoding encoding;
  BulkVector<uint8_t> crd_bytes;
  BulkVector<int32_t> base;  // relative encodings: one per parent position

  // The coordinate at position q, whose parent position is `parent`.
  int64_t Coordinate(int64_t parent, int64_t q) const {
    const int64_t offset = encoding.relative ? base[parent] : 0;
    switch (encoding.bits) {
      case 8:
        return offset + crd_bytes[q];
      case 16:
        return offset + reinterpret_cast<const uint16_t*>(crd_bytes.data())[q];
      default:
        return offset + reinterpret_cast<const int32_t*>(crd_bytes.data())[q];
    }
  }
  const void* crd_data() const { return crd_bytes.empty() ? nullptr : crd_bytes.data(); }
  const int32_t* base_data() const { return base.empty() ? nullptr : base.data(); }
};

struct PackedTensor {
  std::vector<int64_t> dims;
  StorageFormat format;
  std::vector<PackedLevel> levels;
  DType dtype = DType::kF32;
  BulkVector<float> values_f32;                  // filled when dtype is f32
  BulkVector<double> values_f64;                 // filled when dtype is f64
  BulkVector<std::complex<float>> values_c64;    // filled when dtype is c64
  BulkVector<std::complex<double>> values_c128;  // filled when dtype is c128
  int64_t nnz = 0;                               // entries of the source tensor
  double pack_ms = 0;
  // format.ordering's permutation (the levels hold the renumbered coordinates); null when the
  // format keeps the tensor's order.
  std::shared_ptr<const MatrixOrdering> ordering;

  int64_t stored() const { return levels.empty() ? 1 : levels.back().positions; }
  const void* values_data() const {
    switch (dtype) {
      case DType::kF32:
        return values_f32.data();
      case DType::kF64:
        return values_f64.data();
      case DType::kC64:
        return values_c64.data();
      case DType::kC128:
        return values_c128.data();
    }
    return nullptr;
  }
  // The value at a position (its real part when complex; complex_value has both).
  double value(int64_t position) const { return complex_value(position).real(); }
  std::complex<double> complex_value(int64_t position) const {
    if (format.uniform_values) position = 0;  // one value serves every position
    switch (dtype) {
      case DType::kF32:
        return values_f32[position];
      case DType::kF64:
        return values_f64[position];
      case DType::kC64:
        return std::complex<double>(values_c64[position]);
      case DType::kC128:
        return values_c128[position];
    }
    return 0;
  }
  // Per level: how its coordinates are stored (32-bit absolute for U levels).
  std::vector<CoordinateEncoding> encodings() const;
  // Bytes of every array: pos, coordinates, bases and values.
  int64_t bytes() const;
};

// Packing either succeeds or says why the format does not apply to this tensor.
struct PackOutcome {
  std::unique_ptr<PackedTensor> packed;
  std::string refusal;
};

// Default padding cap: no level may hold more than this many times max(nnz, sum of dims)
// positions (WACO refuses formats whose arrays pass 20 x nnz; the sum of dims keeps CSR of a
// hypersparse matrix allowed).
constexpr double kDefaultPaddingCap = 20.0;

struct PackOptions {
  double padding_cap = kDefaultPaddingCap;
  // Store each compressed level's coordinates in the fewest bytes (CoordinateEncoding); false
  // keeps 32-bit absolute coordinates everywhere.
  bool narrow_coordinates = true;
};

// A canonical matrix with its rows renumbered, its values left where they are: the coordinates
// in the renumbered canonical order and the given entry of each. The columns keep their numbering.
struct RenumberedRows {
  std::vector<int32_t, ScratchAllocator<int32_t>> rows, cols, entry;
};
// For an ordering that renumbers the rows only (RenumbersColumns is false) of a canonical
// matrix: PermuteMatrix without its copy of the values.
RenumberedRows RenumberRows(const CooTensor& matrix, const MatrixOrdering& ordering);

// Packs a canonical COO tensor into the format: explicit zeros where U levels need them. With
// `renumbered`, the matrix with its rows renumbered so. A format with uniform_values stores one
// value, and refuses a tensor whose values differ.
PackOutcome Pack(const CooTensor& tensor, const StorageFormat& format, DType dtype,
                 const PackOptions& options = {}, const RenumberedRows* renumbered = nullptr);

// Whether PackRowsInOrder packs this format: SELL (i1:U k:S i0:U), whose rows each fill a lane.
bool PacksRowsInOrder(const StorageFormat& format);
// Pack of a canonical matrix with its rows renumbered by a rows-only ordering, taken in their
// new order as they are packed, with no renumbered copy (RenumberRows) first: the same arrays.
// For formats that PacksRowsInOrder.
PackOutcome PackRowsInOrder(const CooTensor& matrix, const StorageFormat& format, DType dtype,
                            const PackOptions& options, const MatrixOrdering& ordering);

// Calls visit(position, mode_coordinates) for every position of level `depth - 1` (depth 0: the
// single root position) whose coordinates lie inside the tensor; modes with no level among the
// first `depth` levels read 0.
void ForEachPosition(const PackedTensor& packed, int depth,
                     const std::function<void(int64_t, const std::vector<int64_t>&)>& visit);

// Every stored position inside the tensor's bounds, padding zeros included, as a canonical COO.
CooTensor Unpack(const PackedTensor& packed);

}  // namespace sparsetune
