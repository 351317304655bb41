#include "measure/reference.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>

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

// Every assignment of the dense-only indices, enumerated once: per assignment, each dense
// factor's and the output's offset contribution.
struct DenseAssignments {
  std::vector<int> ids;                       // the dense-only indices
  std::vector<int> factors;                   // the dense inputs
  std::vector<std::vector<int64_t>> strides;  // per factor, over the expression's indices
  int64_t combos = 0;
  std::vector<int64_t> dense_offset;  // combos x factors
  std::vector<int64_t> out_offset;    // per assignment
};

// The dense factors and how many assignments there are; refuses ranges too large to enumerate.
DenseAssignments DenseFactors(const Expression& e, const IndexSizes& sizes) {
  DenseAssignments d;
  for (const auto& index : e.DenseOnlyIndices()) d.ids.push_back(e.IndexId(index));
  double combos_d = 1;
  for (int id : d.ids) combos_d *= double(sizes.at(e.indices[id]));
  for (size_t t = 1; t < e.tensors.size(); ++t) {
    if (static_cast<int>(t) != e.sparse) d.factors.push_back(static_cast<int>(t));
  }
  if (combos_d * double(d.factors.size() + 1) > double(int64_t(1) << 26)) {
    throw InputError("the dense index ranges are too large for the reference implementation");
  }
  d.combos = static_cast<int64_t>(combos_d);
  for (int t : d.factors) d.strides.push_back(Strides(e.tensors[t], e, sizes));
  return d;
}

// Each assignment's offsets into the dense factors and the output.
void EnumerateDense(const Expression& e, const IndexSizes& sizes,
                    const std::vector<int64_t>& out_strides, DenseAssignments& d) {
  const std::vector<int>& ids = d.ids;
  const int nf = static_cast<int>(d.factors.size());
  d.dense_offset.resize(d.combos * nf);
  d.out_offset.resize(d.combos);
  std::vector<int64_t> value(ids.size(), 0);
  for (int64_t c = 0; c < d.combos; ++c) {
    for (int f = 0; f < nf; ++f) {
      int64_t off = 0;
      for (size_t k = 0; k < ids.size(); ++k) off += value[k] * d.strides[f][ids[k]];
      d.dense_offset[c * nf + f] = off;
    }
    int64_t off = 0;
    for (size_t k = 0; k < ids.size(); ++k) off += value[k] * out_strides[ids[k]];
    d.out_offset[c] = off;
    for (int k = static_cast<int>(ids.size()) - 1; k >= 0; --k) {
      if (++value[k] < sizes.at(e.indices[ids[k]])) break;
      value[k] = 0;
    }
  }
}

// Sparse outputs: one row per distinct coordinate prefix (entries are in canonical order), its
// coordinates in r.prefix_coords; returns each entry's row.
std::vector<int64_t> SparseOutputRows(const CooTensor& a, int prefix, ReferenceResult& r) {
  const int64_t n = a.nnz();
  std::vector<int64_t> row_of(n);
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
  return row_of;
}

// The sparse operand's entry k and a dense element, as T.
template <class T>
T Value(const CooTensor& a, int64_t k) {
  if constexpr (std::is_same_v<T, double>) {
    return a.values[k];
  } else {
    return T(a.values[k], a.Imag(k));
  }
}
template <class T>
T Element(const ValueBuffer& buffer, int64_t k) {
  if constexpr (std::is_same_v<T, double>) {
    return buffer.Get(k);
  } else {
    return buffer.GetComplex(k);
  }
}

// The sums over the sparse operand's entries, in T: double, or complex<double>.
template <class T>
void Accumulate(const CooTensor& a, const std::vector<ValueBuffer>& inputs, int order,
                const std::vector<int>& sparse_ids, const std::vector<int64_t>& out_strides,
                const DenseAssignments& dense, const std::vector<int64_t>& row_of, int64_t out_size,
                ReferenceResult& r) {
  const std::vector<std::vector<int64_t>>& strides = dense.strides;
  const std::vector<int>& factors = dense.factors;
  const std::vector<int64_t>& dense_offset = dense.dense_offset;
  const std::vector<int64_t>& out_offset = dense.out_offset;
  const int64_t combos = dense.combos;
  const int nf = static_cast<int>(factors.size());
  const int64_t n = a.nnz();
  const int prefix = static_cast<int>(r.prefix_coords.size());
  std::vector<T> sums(out_size, T(0));
  r.magnitudes.assign(out_size, 0.0);
  // Dense outputs get private copies per thread; sparse outputs are race-free only when every
  // entry has its own row (prefix = all modes).
  const bool parallel_ok = r.sparse ? prefix == order : out_size <= (int64_t(1) << 24);
  const int threads = parallel_ok ? std::max(1, omp_get_max_threads()) : 1;
#pragma omp parallel num_threads(threads)
  {
    std::vector<T> local_v;
    std::vector<double> local_m;
    T* values = sums.data();
    double* mags = r.magnitudes.data();
    if (threads > 1 && !r.sparse) {
      local_v.assign(out_size, T(0));
      local_m.assign(out_size, 0.0);
      values = local_v.data();
      mags = local_m.data();
    }
    std::vector<int64_t> base(nf);
    std::vector<const ValueBuffer*> buffers;
    for (int t : factors) buffers.push_back(&inputs[t]);
#pragma omp for schedule(dynamic, 256)
    for (int64_t k = 0; k < n; ++k) {
      const T av = Value<T>(a, k);
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
        T product = av;
        for (int f = 0; f < nf; ++f)
          product *= Element<T>(*buffers[f], base[f] + dense_offset[c * nf + f]);
        values[out_base + out_offset[c]] += product;
        mags[out_base + out_offset[c]] += std::abs(product);
      }
    }
    if (threads > 1 && !r.sparse) {
#pragma omp critical
      for (int64_t q = 0; q < out_size; ++q) {
        sums[q] += local_v[q];
        r.magnitudes[q] += local_m[q];
      }
    }
  }
  if constexpr (std::is_same_v<T, double>) {
    // Moved, not copied: a copy would hold a third more than the run's footprint counts.
    r.values = std::move(sums);
  } else {
    r.values.resize(out_size);
    for (int64_t q = 0; q < out_size; ++q) r.values[q] = std::real(sums[q]);
    r.imag.resize(out_size);
    for (int64_t q = 0; q < out_size; ++q) r.imag[q] = std::imag(sums[q]);
  }
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
  DenseAssignments dense = DenseFactors(e, sizes);

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
  EnumerateDense(e, sizes, out_strides, dense);
  const std::vector<int64_t> row_of =
      r.sparse ? SparseOutputRows(a, prefix, r) : std::vector<int64_t>{};
  if (r.sparse) out_size = (row_of.empty() ? 0 : row_of.back() + 1) * r.trailing;

  // The kernel's dtype decides: a complex file under f32 is computed with its real parts, as
  // the kernel packs them.
  bool complex = false;
  for (int t : dense.factors) complex = complex || IsComplex(inputs[t].dtype());
  if (complex) {
    Accumulate<std::complex<double>>(a, inputs, order, sparse_ids, out_strides, dense, row_of,
                                     out_size, r);
  } else {
    Accumulate<double>(a, inputs, order, sparse_ids, out_strides, dense, row_of, out_size, r);
  }
  r.compute_ms = MsSince(start);
  return r;
}

}  // namespace sparsetune
