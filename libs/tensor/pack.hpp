#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "tensor/coo.hpp"
#include "tensor/format.hpp"

namespace sparsetune {

// One storage level. U levels hold no arrays: position = parent * extent + coordinate.
// C levels hold pos (size parent positions + 1) and crd (one level coordinate per position).
struct PackedLevel {
  LevelKind kind = LevelKind::kDense;
  int64_t extent = 0;
  int64_t positions = 0;  // number of positions at this level
  std::vector<int32_t> pos;
  std::vector<int32_t> crd;
};

struct PackedTensor {
  std::vector<int64_t> dims;
  StorageFormat format;
  std::vector<PackedLevel> levels;
  DType dtype = DType::kF32;
  std::vector<float> values_f32;   // filled when dtype is f32
  std::vector<double> values_f64;  // filled when dtype is f64
  int64_t nnz = 0;                 // entries of the source tensor
  double pack_ms = 0;

  int64_t stored() const { return levels.empty() ? 1 : levels.back().positions; }
  const void* values_data() const {
    return dtype == DType::kF32 ? static_cast<const void*>(values_f32.data())
                                : static_cast<const void*>(values_f64.data());
  }
  double value(int64_t position) const {
    return dtype == DType::kF32 ? values_f32[position] : values_f64[position];
  }
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

// Packs a canonical COO tensor into the format: explicit zeros where U levels need them.
PackOutcome Pack(const CooTensor& tensor, const StorageFormat& format, DType dtype,
                 double padding_cap = kDefaultPaddingCap);

// Calls visit(position, mode_coordinates) for every position of level `depth - 1` (depth 0: the
// single root position) whose coordinates lie inside the tensor; modes with no level among the
// first `depth` levels read 0.
void ForEachPosition(const PackedTensor& packed, int depth,
                     const std::function<void(int64_t, const std::vector<int64_t>&)>& visit);

// Every stored position inside the tensor's bounds, padding zeros included, as a canonical COO.
CooTensor Unpack(const PackedTensor& packed);

}  // namespace sparsetune
