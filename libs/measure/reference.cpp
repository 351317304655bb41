#include "measure/reference.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/elapsed.hpp"
#include "base/errors.hpp"

namespace sparsetune {

namespace {

// Row-major strides of a tensor over the expression's indices (0 for absent indices).
std::vector<int64_t> Strides(const TensorInfo& t, const Expression& e, const IndexSizes& sizes) {
  std::vector<int64_t> strides(e.indices.size(), 0);
  int64_t stride = 1;
  for (int k = static_cast<int>(t.indices.size()) - 1; k >= 0; --k) {
    strides[e.IndexId(t.indices[k])] = stride;
    stride *= sizes.at(t.indices[k]);
  }
  return strides;
}

}  // namespace

ReferenceResult ComputeReference(const Expression& e, const CooTensor& a, const IndexSizes& sizes,
                                 const std::vector<ValueBuffer>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  ReferenceResult r;
  const TensorInfo& sparse = e.sparse_input();
  const int order = static_cast<int>(sparse.indices.size());
  std::vector<int> sparse_ids;
  for (const auto& index : sparse.indices) sparse_ids.push_back(e.IndexId(index));

  // Every assignment of the dense-only indices, enumerated once: per assignment, each dense
  // factor's and the output's offset contribution.
  std::vector<int> dense_ids;
  for (const auto& index : e.DenseOnlyIndices()) dense_ids.push_back(e.IndexId(index));
  double combos_d = 1;
  for (int id : dense_ids) combos_d *= double(sizes.at(e.indices[id]));
  std::vector<int> factors;
  for (size_t t = 1; t < e.tensors.size(); ++t) {
    if (static_cast<int>(t) != e.sparse) factors.push_back(static_cast<int>(t));
  }
  if (combos_d * double(factors.size() + 1) > double(int64_t(1) << 26)) {
    throw InputError("the dense index ranges are too large for the reference implementation");
  }
  const int64_t combos = static_cast<int64_t>(combos_d);
  const int nf = static_cast<int>(factors.size());
  std::vector<std::vector<int64_t>> strides;
  for (int t : factors) strides.push_back(Strides(e.tensors[t], e, sizes));

  // Output layout.
  r.sparse = e.sparse_output_prefix > 0;
  const int prefix = e.sparse_output_prefix;
  std::vector<int64_t> out_strides(e.indices.size(), 0);
  int64_t out_size = 1;
  if (r.sparse) {
    const auto& out = e.tensors[0].indices;
    int64_t stride = 1;
    for (int k = static_cast<int>(out.size()) - 1; k >= prefix; --k) {
      out_strides[e.IndexId(out[k])] = stride;
      stride *= sizes.at(out[k]);
    }
    r.trailing = stride;
  } else {
    out_strides = Strides(e.tensors[0], e, sizes);
    out_size = TensorElements(e.tensors[0], sizes);
  }

  std::vector<int64_t> dense_offset(combos * nf), out_offset(combos);
  {
    std::vector<int64_t> value(dense_ids.size(), 0);
    for (int64_t c = 0; c < combos; ++c) {
      for (int f = 0; f < nf; ++f) {
        int64_t off = 0;
        for (size_t d = 0; d < dense_ids.size(); ++d) off += value[d] * strides[f][dense_ids[d]];
        dense_offset[c * nf + f] = off;
      }
      int64_t off = 0;
      for (size_t d = 0; d < dense_ids.size(); ++d) off += value[d] * out_strides[dense_ids[d]];
      out_offset[c] = off;
      for (int d = static_cast<int>(dense_ids.size()) - 1; d >= 0; --d) {
        if (++value[d] < sizes.at(e.indices[dense_ids[d]])) break;
        value[d] = 0;
      }
    }
  }

  // Sparse outputs: one row per distinct coordinate prefix (entries are in canonical order).
  const int64_t n = a.nnz();
  std::vector<int64_t> row_of(r.sparse ? n : 0);
  if (r.sparse) {
    r.prefix_coords.assign(prefix, {});
    int64_t rows = 0;
    for (int64_t k = 0; k < n; ++k) {
      bool same = k > 0;
      for (int m = 0; m < prefix && same; ++m) same = a.coords[m][k] == a.coords[m][k - 1];
      if (!same) {
        for (int m = 0; m < prefix; ++m) r.prefix_coords[m].push_back(a.coords[m][k]);
        ++rows;
      }
      row_of[k] = rows - 1;
    }
    out_size = rows * r.trailing;
  }

  r.values.assign(out_size, 0.0);
  r.magnitudes.assign(out_size, 0.0);
  // Dense outputs get private copies per thread; sparse outputs are race-free only when every
  // entry has its own row (prefix = all modes).
  const bool parallel_ok = r.sparse ? prefix == order : out_size <= (int64_t(1) << 24);
  const int threads = parallel_ok ? std::max(1, omp_get_max_threads()) : 1;
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> local_v, local_m;
    double* values = r.values.data();
    double* mags = r.magnitudes.data();
    if (threads > 1 && !r.sparse) {
      local_v.assign(out_size, 0.0);
      local_m.assign(out_size, 0.0);
      values = local_v.data();
      mags = local_m.data();
    }
    std::vector<int64_t> base(nf);
    std::vector<const ValueBuffer*> buffers;
    for (int t : factors) buffers.push_back(&inputs[t]);
#pragma omp for schedule(dynamic, 256)
    for (int64_t k = 0; k < n; ++k) {
      const double av = a.values[k];
      for (int f = 0; f < nf; ++f) {
        int64_t off = 0;
        for (int m = 0; m < order; ++m) off += int64_t(a.coords[m][k]) * strides[f][sparse_ids[m]];
        base[f] = off;
      }
      int64_t out_base = 0;
      if (r.sparse) {
        out_base = row_of[k] * r.trailing;
      } else {
        for (int m = 0; m < order; ++m)
          out_base += int64_t(a.coords[m][k]) * out_strides[sparse_ids[m]];
      }
      for (int64_t c = 0; c < combos; ++c) {
        double product = av;
        for (int f = 0; f < nf; ++f) product *= buffers[f]->Get(base[f] + dense_offset[c * nf + f]);
        values[out_base + out_offset[c]] += product;
        mags[out_base + out_offset[c]] += std::fabs(product);
      }
    }
    if (threads > 1 && !r.sparse) {
#pragma omp critical
      for (int64_t q = 0; q < out_size; ++q) {
        r.values[q] += local_v[q];
        r.magnitudes[q] += local_m[q];
      }
    }
  }
  r.compute_ms = MsSince(start);
  return r;
}

}  // namespace sparsetune
