#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.hpp"

namespace sparsetune {

enum class Symmetry { kGeneral, kSymmetric, kSkewSymmetric, kHermitian };
const char* SymmetryName(Symmetry symmetry);

// A sparse tensor of any order in coordinate form, 0-based. Canonical once Canonicalize() has run:
// entries sorted lexicographically by coordinates (mode 0 first), no duplicates.
struct CooTensor {
  std::vector<int64_t> dims;
  std::vector<std::vector<int32_t>> coords;  // coords[mode][entry]
  std::vector<double> values;                // values[entry]; the real parts of complex ones
  std::vector<double> imag;                  // imaginary parts; empty for real tensors

  // What the source declared; the entries are already expanded to the full tensor.
  Symmetry symmetry = Symmetry::kGeneral;
  bool pattern_only = false;      // the source had no values; every value is 1
  int64_t duplicates_summed = 0;  // entries merged by Canonicalize()
  int64_t explicit_zeros = 0;     // stored entries whose value is 0 (kept as entries)

  int order() const { return static_cast<int>(dims.size()); }
  int64_t nnz() const { return static_cast<int64_t>(values.size()); }
  bool is_complex() const { return !imag.empty(); }
  double Imag(int64_t entry) const { return imag.empty() ? 0.0 : imag[entry]; }

  // Allocates `order` empty coordinate arrays with room for `capacity` entries.
  void Reset(std::vector<int64_t> new_dims, int64_t capacity = 0);
  void Append(const int32_t* coordinate, double value);
  // A complex tensor's entry (the tensor becomes complex with its first one).
  void AppendComplex(const int32_t* coordinate, double real, double imaginary);

  // Sorts the entries and sums duplicates (counted in duplicates_summed).
  void Canonicalize();
  bool IsCanonical() const;
};

// What a kernel of `dtype` leaves out of the tensor's values ("" when nothing): a complex
// tensor under a real dtype is computed with its real parts.
std::string ValuesLeftOut(const CooTensor& tensor, DType dtype);

// The first entry whose value differs from entry 0's (its real part, and its imaginary part
// too when `complex`), or -1 when every entry holds the same value (a pattern tensor's 1, say):
// then a format that stores one value serves it (StorageFormat::uniform_values).
int64_t FirstDifferingValue(const CooTensor& tensor, bool complex);
inline bool HasUniformValues(const CooTensor& tensor, bool complex) {
  return FirstDifferingValue(tensor, complex) < 0;
}

// Largest dimension a coordinate may address: coordinates are stored as int32.
constexpr int64_t kMaxDimension = 2147483647;

}  // namespace sparsetune
