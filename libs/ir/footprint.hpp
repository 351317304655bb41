// What a run of a kernel on one operand needs in memory, checked before anything is allocated.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/dtype.hpp"
#include "ir/expression.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

// Throws InputError, saying how much it would need, when a run on this operand cannot fit in
// the memory available now: its dense operands and output, the reference's output and a CSR
// copy of the sparse operand (a file declaring 2^31 rows with one entry is refused here, before
// anything of that size is allocated). `sizes` holds every index's size.
void CheckRunFitsInMemory(const Expression& expression, const CooTensor& sparse,
                          const std::map<std::string, int64_t>& sizes, DType dtype);

}  // namespace sparsetune
