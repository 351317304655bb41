#pragma once

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include <cmath>

#include "base/dtype.hpp"
#include "ir/expression.hpp"
#include "measure/operands.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

// The exact result of an expression, computed with plain loops over the COO entries and the
// dense index ranges in double precision, independently of the code generator. Alongside each
// value it keeps the sum of the magnitudes of its terms, which scales the tolerance.
struct ReferenceResult {
  std::vector<double> values;  // the real parts, when complex
  std::vector<double> imag;    // complex operands only: the imaginary parts
  std::vector<double> magnitudes;
  // Sparse outputs: one row of `trailing` values per distinct prefix of the sparse operand's
  // coordinates (in canonical order), prefix_coords[mode][row].
  bool sparse = false;
  int64_t trailing = 1;
  std::vector<std::vector<int32_t>> prefix_coords;
  double compute_ms = 0;
};

// Element q of the reference (zero imaginary part when real).
inline std::complex<double> ReferenceValue(const ReferenceResult& ref, int64_t q) {
  return {ref.values[q], ref.imag.empty() ? 0.0 : ref.imag[q]};
}

// How far a kernel's element may be from the reference, relative to the sum of the magnitudes
// of its terms: rounding in the kernel's type over sums in any order.
inline double RelativeTolerance(DType dtype) {
  return RealPart(dtype) == DType::kF32 ? 2e-4 : 1e-10;
}

// A kernel's element against the reference's: its error relative to `magnitude` (1 when
// zero) in *relative_error, and whether it is finite and within RelativeTolerance.
inline bool MatchesReference(std::complex<double> got, std::complex<double> expected,
                             double magnitude, DType dtype, double* relative_error) {
  const double scale = magnitude > 0 ? magnitude : 1.0;
  // Verification visits every output element of every measured schedule: real values take
  // fabs, not the complex modulus (a hypot per element).
  const double error =
      IsComplex(dtype) ? std::abs(got - expected) : std::fabs(got.real() - expected.real());
  *relative_error = error / scale;
  return std::isfinite(got.real()) && std::isfinite(got.imag()) &&
         error <= RelativeTolerance(dtype) * scale + 1e-30;
}

// "1.5" or "(1.5,-2)".
inline std::string ValueText(std::complex<double> v, DType dtype) {
  return IsComplex(dtype) ? "(" + std::to_string(v.real()) + "," + std::to_string(v.imag()) + ")"
                          : std::to_string(v.real());
}

// Complex when the dense inputs are (a real sparse operand then has zero imaginary parts).
ReferenceResult ComputeReference(const Expression& expression, const CooTensor& sparse,
                                 const IndexSizes& sizes, const std::vector<ValueBuffer>& inputs);

}  // namespace sparsetune
