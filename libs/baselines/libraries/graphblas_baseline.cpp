// SuiteSparse:GraphBLAS on its fast paths, as its source (7.4) chooses them:
//   spmv      w += A*u (GrB_mxv with accum PLUS into a full w): the in-place dot product
//             (GB_AxB_dot4), one dot product per row of A held by row.
//   spmm      C += A*B (GrB_mxm with accum PLUS into a full C): with every matrix held by row,
//             GB_AxB_meta's swap rule computes C'+=B'*A', which GB_AxB_saxpy hands to the
//             in-place GB_AxB_saxpy5 (C full, B' full, A' sparse): per row of A,
//             C(i,:) += A(i,k) * B(k,:).
//   sddmm     T<A,struct,replace> = B*C with the dot-product method (GxB_AxB_METHOD =
//             GxB_AxB_DOT): C (K x N) given by row is transposed inside every call, then the
//             masked dot product GB_AxB_dot3 computes one entry per entry of A; D = A .* T
//             (eWiseMult). Without the hint the automatic choice is a masked saxpy, which here
//             does the work of the dense product.
//   sddmm_nt  T<A,struct,replace> = B*C' with C (N x K) given by row (GrB_DESC_RST1):
//             GB_AxB_dot3 directly, then D = A .* T.
// GrB_REPLACE lets GB_mxm hand the product to T as it is (a transplant); into a T that holds
// the previous call's entries it would otherwise merge them through a masked assign.
// Dense operands and outputs are held full and by row (packed with GxB_*_pack_Full*, never
// iso), A sparse by row. $SPARSETUNE_GRAPHBLAS_BURBLE=1 prints GraphBLAS's burble (the methods
// it takes) to stderr.
extern "C" {
#include <GraphBLAS.h>
}

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <type_traits>
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

int BurblePrintf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int n = std::vfprintf(stderr, format, args);
  va_end(args);
  return n;
}
int BurbleFlush() {
  return std::fflush(stderr);
}

void InitializeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    Check(GrB_init(GrB_NONBLOCKING), "GrB_init");
    const char* burble = std::getenv("SPARSETUNE_GRAPHBLAS_BURBLE");
    if (burble && std::strcmp(burble, "1") == 0) {
      Check(GxB_Global_Option_set_FUNCTION(GxB_PRINTF, reinterpret_cast<void*>(&BurblePrintf)),
            "setting the burble's printf");
      Check(GxB_Global_Option_set_FUNCTION(GxB_FLUSH, reinterpret_cast<void*>(&BurbleFlush)),
            "setting the burble's flush");
      Check(GxB_Global_Option_set_INT32(GxB_BURBLE, 1), "turning the burble on");
    }
  });
}

std::string Dotted(const int (&version)[3]) {
  return std::to_string(version[0]) + "." + std::to_string(version[1]) + "." +
         std::to_string(version[2]);
}

// The library that runs (not the header compiled against): name and version.
std::string LibraryVersion() {
  char* name = nullptr;
  int version[3] = {0, 0, 0};
  Check(GxB_Global_Option_get_CHAR(GxB_LIBRARY_NAME, &name), "reading the library's name");
  Check(GxB_Global_Option_get(GxB_LIBRARY_VERSION, version), "reading the library's version");
  return std::string(name ? name : "GraphBLAS") + " " + Dotted(version);
}

// Where it was loaded from and the compiler that built it (its name holds its version).
std::string LibraryBuild() {
  char* compiler = nullptr;
  Check(GxB_Global_Option_get_CHAR(GxB_COMPILER_NAME, &compiler), "reading the compiler");
  return PrebuiltFrom(reinterpret_cast<const void*>(&GrB_init)) + " (built with " +
         (compiler ? compiler : "an unknown compiler") + ")";
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
  static GrB_Info extract(GrB_Index* i, GrB_Index* j, double* x, GrB_Index* n, GrB_Matrix a) {
    return GrB_Matrix_extractTuples_FP64(i, j, x, n, a);
  }
  static GrB_Info extract(GrB_Index* i, double* x, GrB_Index* n, GrB_Vector v) {
    return GrB_Vector_extractTuples_FP64(i, x, n, v);
  }
};

template <>
struct Typed<GxB_FC32_t> {
  static GrB_Type type() { return GxB_FC32; }
  static GrB_Semiring plus_times() { return GxB_PLUS_TIMES_FC32; }
  static GrB_BinaryOp times() { return GxB_TIMES_FC32; }
  static GrB_BinaryOp plus() { return GxB_PLUS_FC32; }
  static GrB_Info build(GrB_Matrix a, const GrB_Index* i, const GrB_Index* j, const GxB_FC32_t* x,
                        GrB_Index n) {
    return GxB_Matrix_build_FC32(a, i, j, x, n, GxB_PLUS_FC32);
  }
  static GrB_Info extract(GrB_Index* i, GrB_Index* j, GxB_FC32_t* x, GrB_Index* n, GrB_Matrix a) {
    return GxB_Matrix_extractTuples_FC32(i, j, x, n, a);
  }
  static GrB_Info extract(GrB_Index* i, GxB_FC32_t* x, GrB_Index* n, GrB_Vector v) {
    return GxB_Vector_extractTuples_FC32(i, x, n, v);
  }
};
template <>
struct Typed<GxB_FC64_t> {
  static GrB_Type type() { return GxB_FC64; }
  static GrB_Semiring plus_times() { return GxB_PLUS_TIMES_FC64; }
  static GrB_BinaryOp times() { return GxB_TIMES_FC64; }
  static GrB_BinaryOp plus() { return GxB_PLUS_FC64; }
  static GrB_Info build(GrB_Matrix a, const GrB_Index* i, const GrB_Index* j, const GxB_FC64_t* x,
                        GrB_Index n) {
    return GxB_Matrix_build_FC64(a, i, j, x, n, GxB_PLUS_FC64);
  }
  static GrB_Info extract(GrB_Index* i, GrB_Index* j, GxB_FC64_t* x, GrB_Index* n, GrB_Matrix a) {
    return GxB_Matrix_extractTuples_FC64(i, j, x, n, a);
  }
  static GrB_Info extract(GrB_Index* i, GxB_FC64_t* x, GrB_Index* n, GrB_Vector v) {
    return GxB_Vector_extractTuples_FC64(i, x, n, v);
  }
};

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
    if (dot_) GrB_Descriptor_free(&dot_);
  }
  std::string name() const override { return "graphblas"; }

  void Prepare() override {
    InitializeOnce();
    version = LibraryVersion();
    flags = LibraryBuild();
    const auto start = std::chrono::steady_clock::now();
    Check(GxB_Global_Option_set_INT32(GxB_GLOBAL_NTHREADS, o_.threads), "setting the thread count");
    const CooTensor& t = *o_.sparse;
    const GrB_Index rows = t.dims[0], cols = t.dims[1], nnz = t.nnz();
    {
      std::vector<GrB_Index> i(nnz), j(nnz);
      std::vector<V> x(nnz);
      for (GrB_Index e = 0; e < nnz; ++e) {
        i[e] = t.coords[0][e];
        j[e] = t.coords[1][e];
        x[e] = FromParts<V>({t.values[e], t.Imag(e)});
      }
      Check(GrB_Matrix_new(&a_, T::type(), rows, cols), "GrB_Matrix_new");
      Check(GxB_Matrix_Option_set_INT32(a_, GxB_FORMAT, GxB_BY_ROW), "holding A by row");
      Check(GxB_Matrix_Option_set_INT32(a_, GxB_SPARSITY_CONTROL, GxB_SPARSE), "holding A sparse");
      Check(T::build(a_, i.data(), j.data(), x.data(), nnz), "building A");
      Check(GrB_Matrix_wait(a_, GrB_MATERIALIZE), "GrB_Matrix_wait");
    }
    const std::vector<ValueBuffer>& in = *o_.inputs;
    if (o_.kernel == "spmv") {
      u_ = FullVector(&in[2], cols);
      w_ = FullVector(nullptr, rows);  // zero: the first w += A*u is the result
      method =
          "GrB_mxv(w, NULL, GrB_PLUS, PLUS_TIMES, A, u, NULL): w += A*u into a full w "
          "(in place, GB_AxB_dot4)";
    } else if (o_.kernel == "spmm") {
      const GrB_Index width = o_.sizes.at("j");
      b_ = FullMatrix(&in[2], cols, width);
      c_ = FullMatrix(nullptr, rows, width);  // zero: the first C += A*B is the result
      method =
          "GrB_mxm(C, NULL, GrB_PLUS, PLUS_TIMES, A, B, NULL): C += A*B into a full C (in "
          "place, GB_AxB_saxpy5 on C' += B'*A')";
    } else {
      const GrB_Index depth = o_.sizes.at("k");
      b_ = FullMatrix(&in[2], rows, depth);
      Check(GrB_Descriptor_new(&dot_), "GrB_Descriptor_new");
      Check(GrB_Descriptor_set(dot_, GrB_MASK, GrB_STRUCTURE), "a structural mask");
      Check(GrB_Descriptor_set(dot_, GrB_OUTP, GrB_REPLACE), "replacing the output");
      if (o_.kernel == "sddmm") {
        c_ = FullMatrix(&in[3], depth, cols);  // C(k,j) by row, as given
        Check(GrB_Descriptor_set(dot_, GxB_AxB_METHOD, GxB_AxB_DOT), "the dot-product method");
        method =
            "GrB_mxm(T, A, NULL, PLUS_TIMES, B, C, {GrB_REPLACE, GrB_STRUCTURE, GxB_AxB_DOT}): C "
            "transposed inside each call, masked dot product GB_AxB_dot3; then "
            "GrB_eWiseMult(D, TIMES, A, T)";
      } else {
        c_ = FullMatrix(&in[3], cols, depth);  // C(j,k) by row: C' of the product
        Check(GrB_Descriptor_set(dot_, GrB_INP1, GrB_TRAN), "transposing the second input");
        method =
            "GrB_mxm(T, A, NULL, PLUS_TIMES, B, C, GrB_DESC_RST1): masked dot product "
            "GB_AxB_dot3 on C' held by row; then GrB_eWiseMult(D, TIMES, A, T)";
      }
      Check(GrB_Matrix_new(&t_, T::type(), rows, cols), "GrB_Matrix_new");
      Check(GrB_Matrix_new(&d_, T::type(), rows, cols), "GrB_Matrix_new");
    }
    prepare_ms = MsSince(start);
  }

  void Call() override {
    if (o_.kernel == "spmv") {
      Check(GrB_mxv(w_, nullptr, T::plus(), T::plus_times(), a_, u_, nullptr), "GrB_mxv");
      Check(GrB_Vector_wait(w_, GrB_MATERIALIZE), "GrB_Vector_wait");
    } else if (o_.kernel == "spmm") {
      Check(GrB_mxm(c_, nullptr, T::plus(), T::plus_times(), a_, b_, nullptr), "GrB_mxm");
      Check(GrB_Matrix_wait(c_, GrB_MATERIALIZE), "GrB_Matrix_wait");
    } else {
      Check(GrB_mxm(t_, a_, nullptr, T::plus_times(), b_, c_, dot_), "masked GrB_mxm");
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
      for (GrB_Index e = 0; e < n; ++e) out.SetComplex(static_cast<int64_t>(i[e]), ToComplex(x[e]));
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
      for (GrB_Index e = 0; e < n; ++e)
        out.SetComplex(static_cast<int64_t>(i[e] * cols + j[e]), ToComplex(x[e]));
      return out;
    }
    // SDDMM: values in canonical (row, column) order, one per entry of A.
    std::vector<GrB_Index> order(n);
    std::iota(order.begin(), order.end(), GrB_Index(0));
    std::sort(order.begin(), order.end(),
              [&](GrB_Index a, GrB_Index b) { return i[a] != i[b] ? i[a] < i[b] : j[a] < j[b]; });
    ValueBuffer out(o_.dtype, static_cast<int64_t>(n));
    for (GrB_Index e = 0; e < n; ++e)
      out.SetComplex(static_cast<int64_t>(e), ToComplex(x[order[e]]));
    return out;
  }

 private:
  // GraphBLAS takes ownership of a packed array, which must come from its allocator (malloc,
  // freed with free): aligned_alloc's blocks are freed the same way, and put the rows on cache
  // lines as the other contenders' are (malloc's 16 bytes split a vector load over two lines).
  static V* Values(const ValueBuffer* values, GrB_Index count) {
    const size_t bytes = (std::max<GrB_Index>(count, 1) * sizeof(V) + 63) / 64 * 64;
    V* x = static_cast<V*>(std::aligned_alloc(64, bytes));
    if (!x) throw InternalError("GraphBLAS: out of memory for a dense operand");
    for (GrB_Index k = 0; k < count; ++k)
      x[k] = values ? FromParts<V>(values->GetComplex(static_cast<int64_t>(k))) : V(0);
    return x;
  }

  // A full vector of `values` (zeros when null), never iso.
  GrB_Vector FullVector(const ValueBuffer* values, GrB_Index size) {
    GrB_Vector v = nullptr;
    Check(GrB_Vector_new(&v, T::type(), size), "GrB_Vector_new");
    void* x = Values(values, size);
    Check(GxB_Vector_pack_Full(v, &x, size * sizeof(V), false, nullptr), "packing a vector");
    Check(GxB_Vector_Option_set_INT32(v, GxB_SPARSITY_CONTROL, GxB_FULL), "holding a vector full");
    return v;
  }

  // A full row-major matrix of `values` (zeros when null), never iso.
  GrB_Matrix FullMatrix(const ValueBuffer* values, GrB_Index rows, GrB_Index cols) {
    GrB_Matrix m = nullptr;
    Check(GrB_Matrix_new(&m, T::type(), rows, cols), "GrB_Matrix_new");
    Check(GxB_Matrix_Option_set_INT32(m, GxB_FORMAT, GxB_BY_ROW), "holding a matrix by row");
    void* x = Values(values, rows * cols);
    Check(GxB_Matrix_pack_FullR(m, &x, rows * cols * sizeof(V), false, nullptr),
          "packing a matrix");
    Check(GxB_Matrix_Option_set_INT32(m, GxB_SPARSITY_CONTROL, GxB_FULL), "holding a matrix full");
    return m;
  }

  BaselineOperands o_;
  GrB_Matrix a_ = nullptr, b_ = nullptr, c_ = nullptr, t_ = nullptr, d_ = nullptr;
  GrB_Vector u_ = nullptr, w_ = nullptr;
  GrB_Descriptor dot_ = nullptr;
};

}  // namespace

std::unique_ptr<Baseline> MakeGraphBlasBaseline(const BaselineOperands& o) {
  if (o.kernel != "spmv" && o.kernel != "spmm" && o.kernel != "sddmm" && o.kernel != "sddmm_nt")
    return nullptr;
  if (o.dtype == DType::kC64) return std::make_unique<GraphBlasBaseline<GxB_FC32_t>>(o);
  if (o.dtype == DType::kC128) return std::make_unique<GraphBlasBaseline<GxB_FC64_t>>(o);
  if (o.dtype == DType::kF32) return std::make_unique<GraphBlasBaseline<float>>(o);
  return std::make_unique<GraphBlasBaseline<double>>(o);
}

}  // namespace sparsetune
