// Debian's GraphBLAS.h declares no C linkage of its own.
extern "C" {
#include <GraphBLAS.h>
}

#include <algorithm>
#include <chrono>
#include <mutex>
#include <numeric>
#include <vector>

#include "base/errors.hpp"
#include "baselines/libraries/baselines_internal.hpp"

namespace sparsetune {

namespace {

void Check(GrB_Info info, const char* what) {
  if (info != GrB_SUCCESS)
    throw InternalError(std::string("GraphBLAS: ") + what + " failed (GrB_Info " +
                        std::to_string(static_cast<int>(info)) + ")");
}

void InitializeOnce() {
  static std::once_flag once;
  std::call_once(once, [] { Check(GrB_init(GrB_NONBLOCKING), "GrB_init"); });
}

// The typed names of the C API for float and double (its generic macros are C11 only).
template <class V>
struct Typed;
template <>
struct Typed<float> {
  static GrB_Type type() { return GrB_FP32; }
  static GrB_Semiring plus_times() { return GrB_PLUS_TIMES_SEMIRING_FP32; }
  static GrB_BinaryOp times() { return GrB_TIMES_FP32; }
  static GrB_BinaryOp plus() { return GrB_PLUS_FP32; }
  static GrB_Info build(GrB_Matrix a, const GrB_Index* i, const GrB_Index* j, const float* x,
                        GrB_Index n) {
    return GrB_Matrix_build_FP32(a, i, j, x, n, GrB_PLUS_FP32);
  }
  static GrB_Info build(GrB_Vector v, const GrB_Index* i, const float* x, GrB_Index n) {
    return GrB_Vector_build_FP32(v, i, x, n, GrB_PLUS_FP32);
  }
  static GrB_Info extract(GrB_Index* i, GrB_Index* j, float* x, GrB_Index* n, GrB_Matrix a) {
    return GrB_Matrix_extractTuples_FP32(i, j, x, n, a);
  }
  static GrB_Info extract(GrB_Index* i, float* x, GrB_Index* n, GrB_Vector v) {
    return GrB_Vector_extractTuples_FP32(i, x, n, v);
  }
};
template <>
struct Typed<double> {
  static GrB_Type type() { return GrB_FP64; }
  static GrB_Semiring plus_times() { return GrB_PLUS_TIMES_SEMIRING_FP64; }
  static GrB_BinaryOp times() { return GrB_TIMES_FP64; }
  static GrB_BinaryOp plus() { return GrB_PLUS_FP64; }
  static GrB_Info build(GrB_Matrix a, const GrB_Index* i, const GrB_Index* j, const double* x,
                        GrB_Index n) {
    return GrB_Matrix_build_FP64(a, i, j, x, n, GrB_PLUS_FP64);
  }
  static GrB_Info build(GrB_Vector v, const GrB_Index* i, const double* x, GrB_Index n) {
    return GrB_Vector_build_FP64(v, i, x, n, GrB_PLUS_FP64);
  }
  static GrB_Info extract(GrB_Index* i, GrB_Index* j, double* x, GrB_Index* n, GrB_Matrix a) {
    return GrB_Matrix_extractTuples_FP64(i, j, x, n, a);
  }
  static GrB_Info extract(GrB_Index* i, double* x, GrB_Index* n, GrB_Vector v) {
    return GrB_Vector_extractTuples_FP64(i, x, n, v);
  }
};

// SuiteSparse:GraphBLAS: plus-times mxv and mxm; SDDMM as the product masked by A's pattern,
// then multiplied by A element-wise.
template <class V>
class GraphBlasBaseline : public Baseline {
  using T = Typed<V>;

 public:
  explicit GraphBlasBaseline(const BaselineOperands& o) : o_(o) {}
  ~GraphBlasBaseline() override {
    for (GrB_Matrix* m : {&a_, &b_, &c_, &t_, &d_}) {
      if (*m) GrB_Matrix_free(m);
    }
    for (GrB_Vector* v : {&u_, &w_}) {
      if (*v) GrB_Vector_free(v);
    }
  }
  std::string name() const override { return "graphblas"; }

  void Prepare() override {
    InitializeOnce();
    const auto start = std::chrono::steady_clock::now();
    Check(GxB_Global_Option_set(static_cast<GxB_Option_Field>(GxB_NTHREADS), o_.threads),
          "setting the thread count");
    const CooTensor& t = *o_.sparse;
    const GrB_Index rows = t.dims[0], cols = t.dims[1], nnz = t.nnz();
    std::vector<GrB_Index> i(nnz), j(nnz);
    std::vector<V> x(nnz);
    for (GrB_Index e = 0; e < nnz; ++e) {
      i[e] = t.coords[0][e];
      j[e] = t.coords[1][e];
      x[e] = static_cast<V>(t.values[e]);
    }
    Check(GrB_Matrix_new(&a_, T::type(), rows, cols), "GrB_Matrix_new");
    Check(T::build(a_, i.data(), j.data(), x.data(), nnz), "building A");
    Check(GrB_Matrix_wait(a_, GrB_MATERIALIZE), "GrB_Matrix_wait");
    if (o_.kernel == "spmv") {
      u_ = DenseVector((*o_.inputs)[2], cols);
      Check(GrB_Vector_new(&w_, T::type(), rows), "GrB_Vector_new");
    } else if (o_.kernel == "spmm") {
      const int64_t width = o_.sizes.at("j");
      b_ = DenseMatrix((*o_.inputs)[2], cols, width);
      Check(GrB_Matrix_new(&c_, T::type(), rows, width), "GrB_Matrix_new");
    } else {
      const int64_t depth = o_.sizes.at("k");
      b_ = DenseMatrix((*o_.inputs)[2], rows, depth);
      // C(k,j) goes in transposed (by rows of C^T) so the masked product takes the dot-product
      // method: each kept entry is a dot product of two rows. The transposition is setup time.
      c_ = DenseMatrix((*o_.inputs)[3], depth, cols, /*transposed=*/true);
      Check(GrB_Matrix_new(&t_, T::type(), rows, cols), "GrB_Matrix_new");
      Check(GrB_Matrix_new(&d_, T::type(), rows, cols), "GrB_Matrix_new");
    }
    prepare_ms = MsSince(start);
  }

  void Call() override {
    if (o_.kernel == "spmv") {
      Check(GrB_mxv(w_, nullptr, nullptr, T::plus_times(), a_, u_, nullptr), "GrB_mxv");
      Check(GrB_Vector_wait(w_, GrB_MATERIALIZE), "GrB_Vector_wait");
    } else if (o_.kernel == "spmm") {
      Check(GrB_mxm(c_, nullptr, nullptr, T::plus_times(), a_, b_, nullptr), "GrB_mxm");
      Check(GrB_Matrix_wait(c_, GrB_MATERIALIZE), "GrB_Matrix_wait");
    } else {
      Check(GrB_mxm(t_, a_, nullptr, T::plus_times(), b_, c_, GrB_DESC_ST1), "masked GrB_mxm");
      Check(GrB_Matrix_eWiseMult_BinaryOp(d_, nullptr, nullptr, T::times(), a_, t_, nullptr),
            "GrB_eWiseMult");
      Check(GrB_Matrix_wait(d_, GrB_MATERIALIZE), "GrB_Matrix_wait");
    }
  }

  ValueBuffer Output() override {
    if (o_.kernel == "spmv") {
      GrB_Index n = 0;
      Check(GrB_Vector_nvals(&n, w_), "GrB_Vector_nvals");
      std::vector<GrB_Index> i(n);
      std::vector<V> x(n);
      Check(T::extract(i.data(), x.data(), &n, w_), "extracting w");
      ValueBuffer out(o_.dtype, o_.sparse->dims[0]);
      out.Fill(0);
      for (GrB_Index e = 0; e < n; ++e) out.Set(static_cast<int64_t>(i[e]), x[e]);
      return out;
    }
    GrB_Matrix m = o_.kernel == "spmm" ? c_ : d_;
    GrB_Index n = 0, rows = 0, cols = 0;
    Check(GrB_Matrix_nvals(&n, m), "GrB_Matrix_nvals");
    Check(GrB_Matrix_nrows(&rows, m), "GrB_Matrix_nrows");
    Check(GrB_Matrix_ncols(&cols, m), "GrB_Matrix_ncols");
    std::vector<GrB_Index> i(n), j(n);
    std::vector<V> x(n);
    Check(T::extract(i.data(), j.data(), x.data(), &n, m), "extracting the result");
    if (o_.kernel == "spmm") {
      ValueBuffer out(o_.dtype, static_cast<int64_t>(rows * cols));
      out.Fill(0);
      for (GrB_Index e = 0; e < n; ++e) out.Set(static_cast<int64_t>(i[e] * cols + j[e]), x[e]);
      return out;
    }
    // SDDMM: values in canonical (row, column) order, one per entry of A.
    std::vector<GrB_Index> order(n);
    std::iota(order.begin(), order.end(), GrB_Index(0));
    std::sort(order.begin(), order.end(),
              [&](GrB_Index a, GrB_Index b) { return i[a] != i[b] ? i[a] < i[b] : j[a] < j[b]; });
    ValueBuffer out(o_.dtype, static_cast<int64_t>(n));
    for (GrB_Index e = 0; e < n; ++e) out.Set(static_cast<int64_t>(e), x[order[e]]);
    return out;
  }

 private:
  GrB_Vector DenseVector(const ValueBuffer& values, GrB_Index size) {
    std::vector<GrB_Index> i(size);
    std::vector<V> x(size);
    for (GrB_Index k = 0; k < size; ++k) {
      i[k] = k;
      x[k] = static_cast<V>(values.Get(static_cast<int64_t>(k)));
    }
    GrB_Vector v = nullptr;
    Check(GrB_Vector_new(&v, T::type(), size), "GrB_Vector_new");
    Check(T::build(v, i.data(), x.data(), size), "building a dense vector");
    Check(GrB_Vector_wait(v, GrB_MATERIALIZE), "GrB_Vector_wait");
    return v;
  }
  // A dense row-major operand, or its transpose.
  GrB_Matrix DenseMatrix(const ValueBuffer& values, GrB_Index rows, GrB_Index cols,
                         bool transposed = false) {
    std::vector<GrB_Index> i(rows * cols), j(rows * cols);
    std::vector<V> x(rows * cols);
    for (GrB_Index r = 0; r < rows; ++r) {
      for (GrB_Index c = 0; c < cols; ++c) {
        i[r * cols + c] = transposed ? c : r;
        j[r * cols + c] = transposed ? r : c;
        x[r * cols + c] = static_cast<V>(values.Get(static_cast<int64_t>(r * cols + c)));
      }
    }
    GrB_Matrix m = nullptr;
    Check(GrB_Matrix_new(&m, T::type(), transposed ? cols : rows, transposed ? rows : cols),
          "GrB_Matrix_new");
    Check(T::build(m, i.data(), j.data(), x.data(), rows * cols), "building a dense matrix");
    Check(GrB_Matrix_wait(m, GrB_MATERIALIZE), "GrB_Matrix_wait");
    return m;
  }

  BaselineOperands o_;
  GrB_Matrix a_ = nullptr, b_ = nullptr, c_ = nullptr, t_ = nullptr, d_ = nullptr;
  GrB_Vector u_ = nullptr, w_ = nullptr;
};

}  // namespace

std::unique_ptr<Baseline> MakeGraphBlasBaseline(const BaselineOperands& o) {
  if (o.kernel != "spmv" && o.kernel != "spmm" && o.kernel != "sddmm") return nullptr;
  if (o.dtype == DType::kF32) return std::make_unique<GraphBlasBaseline<float>>(o);
  return std::make_unique<GraphBlasBaseline<double>>(o);
}

}  // namespace sparsetune
