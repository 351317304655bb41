#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/expression.hpp"
#include "measure/operands.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

// The exact result of an expression, computed with plain loops over the COO entries and the
// dense index ranges in double precision, independently of the code generator. Alongside each
// value it keeps the sum of the magnitudes of its terms, which scales the tolerance.
struct ReferenceResult {
  std::vector<double> values;
  std::vector<double> magnitudes;
  // Sparse outputs: one row of `trailing` values per distinct prefix of the sparse operand's
  // coordinates (in canonical order), prefix_coords[mode][row].
  bool sparse = false;
  int64_t trailing = 1;
  std::vector<std::vector<int32_t>> prefix_coords;
  double compute_ms = 0;
};

ReferenceResult ComputeReference(const Expression& expression, const CooTensor& sparse,
                                 const IndexSizes& sizes, const std::vector<ValueBuffer>& inputs);

}  // namespace sparsetune
