// Textbook CSR kernels, the floor any tuned kernel must clear: what a programmer writes in
// fifteen lines with OpenMP. Compiled at first use by sparsetune's JIT with the generated
// kernels' flags; the host prepends `#define ST_VALUE double` for double values, and
// `#define ST_ROWS_DYNAMIC` for the form that hands rows out as threads free up (ST_FOR_ROWS).
//
// The C API every JIT-compiled baseline exports:
//   st_baseline_version()  what runs (a library and its version, or "" for these kernels)
//   st_baseline_prepare()  copies the CSR operand and the dense inputs, in the layout the
//                          bench kernel names, into the kernel's own storage; null for a
//                          kernel this source does not have
//   st_baseline_call()     computes once
//   st_baseline_output()   the result: dense row-major, or one value per nonzero in CSR order
//   st_baseline_free()
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#ifndef ST_VALUE
#define ST_VALUE float
#endif

namespace {

using V = ST_VALUE;

#ifdef _GLIBCXX_COMPLEX
// OpenMP reduces arithmetic types only; complex sums are declared (the host includes <complex>
// for complex values).
#pragma omp declare reduction(+ : std::complex<float>, std::complex<double> : omp_out += omp_in) \
    initializer(omp_priv = decltype(omp_orig)(0))
#endif

// Dense rows on cache lines, as a careful programmer allocates them (aligned_alloc), so that
// vector loads of a row do not straddle two lines; the tuned kernels get the same.
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64)));
  }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const {
    return false;
  }
};
template <class T>
using Array = std::vector<T, CacheLineAllocator<T>>;

enum class Kernel { kSpmv, kSpmm, kSddmm, kSddmmNt };

struct State {
  Kernel kernel = Kernel::kSpmv;
  int threads = 1;
  int64_t rows = 0, cols = 0, width = 1;
  Array<int64_t> row_ptr;
  Array<int32_t> col;
  Array<V> values;
  Array<V> b, c;  // dense inputs as given
  Array<V> ct;    // sddmm: C transposed at every call
  Array<V> out;
};

// The first row of thread t's share when each of the n threads takes one contiguous range of
// rows holding an equal part of the nonzeros.
int64_t FirstRowOf(const State& s, int t, int n) {
  if (t >= n) return s.rows;
  const int64_t nnz = s.row_ptr[s.rows];
  const int64_t* first = s.row_ptr.data();
  return std::lower_bound(first, first + s.rows, nnz / n * t + nnz % n * t / n) - first;
}

// The row loop of every kernel, inside an `omp parallel` region: the rows shared out the way
// a programmer would write it (a plain loop, so the compiler sees the body as written):
// - by default one contiguous range of rows a thread, equal in nonzeros: each thread streams
//   its part of A in order, and on banded operands reads its own part of the dense rows;
// - with ST_ROWS_DYNAMIC, chunks of 64 rows handed to whichever thread is free (OpenMP's
//   dynamic schedule): the usual answer to rows whose cost differs, as on power-law graphs.
#ifdef ST_ROWS_DYNAMIC
#define ST_FOR_ROWS(i, s) \
  _Pragma("omp for schedule(dynamic, 64)") for (int64_t i = 0; i < (s).rows; ++i)
#else
#define ST_FOR_ROWS(i, s)                                                                \
  for (int64_t i = FirstRowOf(s, omp_get_thread_num(), omp_get_num_threads()),           \
               i##_end = FirstRowOf(s, omp_get_thread_num() + 1, omp_get_num_threads()); \
       i < i##_end; ++i)
#endif

// y = A x: one dot product per row.
void Spmv(State& s) {
  const int64_t* row_ptr = s.row_ptr.data();
  const int32_t* col = s.col.data();
  const V* a = s.values.data();
  const V* x = s.b.data();
  V* y = s.out.data();
#pragma omp parallel num_threads(s.threads)
  ST_FOR_ROWS(i, s) {
    V sum = 0;
    for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) sum += a[p] * x[col[p]];
    y[i] = sum;
  }
}

// C = A B, B and C row-major: C's row i is zeroed, then gets a * B's row k per nonzero.
void Spmm(State& s) {
  const int64_t* row_ptr = s.row_ptr.data();
  const int32_t* col = s.col.data();
  const V* a = s.values.data();
  const V* b = s.b.data();
  V* c = s.out.data();
  const int64_t n = s.width;
#pragma omp parallel num_threads(s.threads)
  ST_FOR_ROWS(i, s) {
    V* ci = c + i * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) ci[j] = 0;
    for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      const V v = a[p];
      const V* bk = b + int64_t(col[p]) * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ci[j] += v * bk[j];
    }
  }
}

// D = A .* (B C), per nonzero one dot product of B's row i and C^T's row j (K values each).
void SddmmRows(State& s, const V* ct) {
  const int64_t* row_ptr = s.row_ptr.data();
  const int32_t* col = s.col.data();
  const V* a = s.values.data();
  const V* b = s.b.data();
  V* d = s.out.data();
  const int64_t k = s.width;
#pragma omp parallel num_threads(s.threads)
  ST_FOR_ROWS(i, s) {
    const V* bi = b + i * k;
    for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      const V* cj = ct + int64_t(col[p]) * k;
      V sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t q = 0; q < k; ++q) sum += bi[q] * cj[q];
      d[p] = a[p] * sum;
    }
  }
}

// sddmm: C is K x N row-major, transposed at every call (a plain parallel transpose).
void Sddmm(State& s) {
  const V* c = s.c.data();
  V* ct = s.ct.data();
  const int64_t k = s.width, n = s.cols;
#pragma omp parallel for schedule(static) num_threads(s.threads)
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t q = 0; q < k; ++q) ct[j * k + q] = c[q * n + j];
  }
  SddmmRows(s, ct);
}

}  // namespace

extern "C" const char* st_baseline_version() {
  return "";
}

extern "C" void* st_baseline_prepare(const char* kernel, int threads, int64_t rows, int64_t cols,
                                     int64_t width, const int64_t* row_ptr, const int32_t* col,
                                     const ST_VALUE* values, const ST_VALUE* dense0,
                                     const ST_VALUE* dense1) {
  Kernel k;
  if (std::strcmp(kernel, "spmv") == 0) {
    k = Kernel::kSpmv;
  } else if (std::strcmp(kernel, "spmm") == 0) {
    k = Kernel::kSpmm;
  } else if (std::strcmp(kernel, "sddmm") == 0) {
    k = Kernel::kSddmm;
  } else if (std::strcmp(kernel, "sddmm_nt") == 0) {
    k = Kernel::kSddmmNt;
  } else {
    return nullptr;
  }
  State* s = new State;
  s->kernel = k;
  s->threads = threads;
  s->rows = rows;
  s->cols = cols;
  s->width = width;
  const int64_t nnz = row_ptr[rows];
  s->row_ptr.assign(row_ptr, row_ptr + rows + 1);
  s->col.assign(col, col + nnz);
  s->values.assign(values, values + nnz);
  switch (k) {
    case Kernel::kSpmv:
      s->b.assign(dense0, dense0 + cols);
      s->out.assign(rows, V(0));
      break;
    case Kernel::kSpmm:
      s->b.assign(dense0, dense0 + cols * width);
      s->out.assign(rows * width, V(0));
      break;
    case Kernel::kSddmm:
    case Kernel::kSddmmNt:
      s->b.assign(dense0, dense0 + rows * width);
      s->c.assign(dense1, dense1 + cols * width);  // K x N or N x K: the same count
      if (k == Kernel::kSddmm) s->ct.assign(cols * width, V(0));
      s->out.assign(nnz, V(0));
      break;
  }
  return s;
}

extern "C" void st_baseline_call(void* state) {
  State& s = *static_cast<State*>(state);
  switch (s.kernel) {
    case Kernel::kSpmv:
      Spmv(s);
      break;
    case Kernel::kSpmm:
      Spmm(s);
      break;
    case Kernel::kSddmm:
      Sddmm(s);
      break;
    case Kernel::kSddmmNt:
      SddmmRows(s, s.c.data());
      break;
  }
}

extern "C" const ST_VALUE* st_baseline_output(void* state, int64_t* count) {
  State& s = *static_cast<State*>(state);
  *count = static_cast<int64_t>(s.out.size());
  return s.out.data();
}

extern "C" void st_baseline_free(void* state) {
  delete static_cast<State*>(state);
}
