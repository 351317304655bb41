#include "ir/footprint.hpp"

#include <algorithm>
#include <cstdio>

#include "base/errors.hpp"
#include "base/memory.hpp"

namespace sparsetune {

namespace {

std::string Gigabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  return text;
}

}  // namespace

void CheckRunFitsInMemory(const Expression& e, const CooTensor& sparse,
                          const std::map<std::string, int64_t>& sizes, DType dtype) {
  const double value_bytes = double(DTypeSize(dtype));
  double dense = 0, output = 0;
  for (size_t t = 0; t < e.tensors.size(); ++t) {
    if (static_cast<int>(t) == e.sparse) continue;
    double elements = 1;
    const auto& indices = e.tensors[t].indices;
    for (size_t k = 0; k < indices.size(); ++k) {
      // A sparse output holds its trailing dense part per stored entry.
      if (t == 0 && static_cast<int>(k) < e.sparse_output_prefix) continue;
      elements *= double(sizes.at(indices[k]));
    }
    if (t == 0 && e.sparse_output_prefix > 0)
      elements *= double(std::max<int64_t>(sparse.nnz(), 1));
    (t == 0 ? output : dense) += elements;
  }
  const double rows = sparse.dims.empty() ? 1 : double(sparse.dims[0]);
  const double operands = (dense + output) * value_bytes;
  const double reference = output * 16;
  const double csr = (rows + 1) * 4 + double(sparse.nnz()) * (4 + value_bytes);
  const double need = operands + reference + csr;
  const double available = double(MemoryAvailableToProcess());
  if (need > available) {
    throw InputError(
        "a run on this operand needs at least " + Gigabytes(need) + " (dense operands and output " +
        Gigabytes(operands) + ", the reference's output " + Gigabytes(reference) + ", a CSR copy " +
        Gigabytes(csr) + "); only " + Gigabytes(available) + " are available to this process");
  }
}

}  // namespace sparsetune
