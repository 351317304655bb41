// WACO-style resizing of a real matrix's pattern (see ResizeMatrix in generate.hpp).

#include "tensor/generate.hpp"
#include "tensor/generate_internal.hpp"

namespace sparsetune {

CooTensor ResizeMatrix(const CooTensor& source, const ResizeParams& p) {
  if (source.order() != 2) {
    throw InputError("resize needs a matrix (order 2); the input has order " +
                     std::to_string(source.order()));
  }
  gen::CheckDimension(p.rows, "rows");
  gen::CheckDimension(p.cols, "cols");
  const int64_t src_rows = source.dims[0], src_cols = source.dims[1];
  if (src_rows <= 0 || src_cols <= 0) throw InputError("the input matrix is empty");
  const int64_t n = source.nnz();
  const auto& si = source.coords[0];
  const auto& sj = source.coords[1];

  // Region of source index k along a dimension scaled from `from` to `to`:
  // [k * to / from, max(that + 1, (k + 1) * to / from)). Products fit: both sides < 2^31.
  auto region = [](int64_t k, int64_t from, int64_t to, int64_t* first) {
    *first = k * to / from;
    return std::max<int64_t>(1, (k + 1) * to / from - *first);
  };
  // Cells per source entry, and where each entry's cells start in the key array.
  std::vector<int64_t> start(n + 1, 0);
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < n; ++e) {
    int64_t r0, c0;
    const int64_t h = region(si[e], src_rows, p.rows, &r0);
    const int64_t w = region(sj[e], src_cols, p.cols, &c0);
    start[e + 1] = std::max(h, w);
  }
  for (int64_t e = 0; e < n; ++e) start[e + 1] += start[e];

  gen::CheckEntryBudget(double(start[n]));
  gen::KeyLayout layout({p.rows, p.cols});
  std::vector<uint64_t> keys(start[n]);
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < n; ++e) {
    int64_t r0, c0;
    const int64_t h = region(si[e], src_rows, p.rows, &r0);
    const int64_t w = region(sj[e], src_cols, p.cols, &c0);
    const int64_t length = std::max(h, w);
    // The region's scaled diagonal, from its top-left to its bottom-right corner.
    for (int64_t s = 0; s < length; ++s) {
      const int32_t c[2] = {static_cast<int32_t>(r0 + s * h / length),
                            static_cast<int32_t>(c0 + s * w / length)};
      keys[start[e] + s] = layout.Pack(c);
    }
  }
  gen::RadixSortUnique(keys, layout.bits);
  CooTensor t = gen::TensorFromKeys(layout, keys);
  gen::FillValues(t, p.seed, p.pattern);
  return t;
}

}  // namespace sparsetune
