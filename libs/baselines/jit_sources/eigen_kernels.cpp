// Eigen's sparse-times-dense products, compiled at first use by sparsetune's JIT with the very
// flags the generated kernels get (a header-only library runs as fast as the flags it is
// compiled with). The host prepends `#define ST_VALUE double` for double values. The C API is
// the one hand_kernels.cpp describes.
//
// A row-major sparse matrix times a dense operand takes Eigen's parallel row loop
// (sparse_time_dense_product_impl, OpenMP over rows, dynamic chunks) for both a vector and a
// row-major matrix right-hand side; Eigen's thread count is the bench's.
#include <cstdint>
#include <cstring>
#include <string>

#include <eigen3/Eigen/Core>
#include <eigen3/Eigen/SparseCore>

#ifndef ST_VALUE
#define ST_VALUE float
#endif

namespace {

using V = ST_VALUE;
using Sparse = Eigen::SparseMatrix<V, Eigen::RowMajor, int>;
using Dense = Eigen::Matrix<V, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::Matrix<V, Eigen::Dynamic, 1>;

struct State {
  bool vector = false;
  int threads = 1;
  Sparse a;
  Vector x, y;  // spmv
  Dense b, c;   // spmm
};

}  // namespace

extern "C" const char* st_baseline_version() {
  static const std::string version = "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
                                     std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                     std::to_string(EIGEN_MINOR_VERSION);
  return version.c_str();
}

extern "C" void* st_baseline_prepare(const char* kernel, int threads, int64_t rows, int64_t cols,
                                     int64_t width, const int64_t* row_ptr, const int32_t* col,
                                     const ST_VALUE* values, const ST_VALUE* dense0,
                                     const ST_VALUE* /*dense1*/) {
  const bool spmv = std::strcmp(kernel, "spmv") == 0;
  if (!spmv && std::strcmp(kernel, "spmm") != 0) return nullptr;
  State* s = new State;
  s->vector = spmv;
  s->threads = threads;
  const int64_t nnz = row_ptr[rows];
  s->a.resize(rows, cols);
  s->a.resizeNonZeros(nnz);
  for (int64_t i = 0; i <= rows; ++i) s->a.outerIndexPtr()[i] = static_cast<int>(row_ptr[i]);
  std::memcpy(s->a.innerIndexPtr(), col, sizeof(int32_t) * nnz);
  std::memcpy(s->a.valuePtr(), values, sizeof(V) * nnz);
  if (spmv) {
    s->x = Eigen::Map<const Vector>(dense0, cols);
    s->y = Vector::Zero(rows);
  } else {
    s->b = Eigen::Map<const Dense>(dense0, cols, width);
    s->c = Dense::Zero(rows, width);
  }
  Eigen::setNbThreads(threads);
  return s;
}

extern "C" void st_baseline_call(void* state) {
  State& s = *static_cast<State*>(state);
  Eigen::setNbThreads(s.threads);
  if (s.vector) {
    s.y.noalias() = s.a * s.x;
  } else {
    s.c.noalias() = s.a * s.b;
  }
}

extern "C" const ST_VALUE* st_baseline_output(void* state, int64_t* count) {
  State& s = *static_cast<State*>(state);
  if (s.vector) {
    *count = s.y.size();
    return s.y.data();
  }
  *count = s.c.size();
  return s.c.data();
}

extern "C" void st_baseline_free(void* state) {
  delete static_cast<State*>(state);
}
