#include <rsb.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "base/errors.hpp"
#include "baselines/libraries/baselines_internal.hpp"

namespace sparsetune {

namespace {

void Check(rsb_err_t error, const char* what) {
  if (error != RSB_ERR_NO_ERROR)
    throw InternalError(std::string("librsb: ") + what + " failed (error " +
                        std::to_string(static_cast<int>(error)) + ")");
}

void InitializeOnce() {
  static std::once_flag once;
  std::call_once(once, [] { Check(rsb_lib_init(RSB_NULL_INIT_OPTIONS), "rsb_lib_init"); });
}

void SetThreads(int threads) {
  rsb_int_t n = threads;
  Check(rsb_lib_set_opt(RSB_IO_WANT_EXECUTING_THREADS, &n), "setting the thread count");
}

// librsb's recursive sparse blocks: plain, or after rsb_tune_spmm chose its blocking and
// thread count for this operation (that tuning time is part of prepare_ms).
template <class V>
class RsbBaseline : public Baseline {
 public:
  RsbBaseline(const BaselineOperands& o, bool tuned) : o_(o), tuned_(tuned) {}
  ~RsbBaseline() override {
    if (mtx_) rsb_mtx_free(mtx_);
  }
  std::string name() const override { return tuned_ ? "librsb_tuned" : "librsb"; }

  void Prepare() override {
    InitializeOnce();
    version = RSB_HEADER_VERSION_STRING;
    flags = PrebuiltFrom(reinterpret_cast<const void*>(&rsb_lib_init));
    method = std::string(o_.kernel == "spmv" ? "rsb_spmv" : "rsb_spmm (row-major)") +
             (tuned_ ? " after rsb_tune_spmm chose blocking and threads" : "");
    const auto start = std::chrono::steady_clock::now();
    const CooTensor& t = *o_.sparse;
    std::vector<V> values(t.nnz());
    for (int64_t e = 0; e < t.nnz(); ++e) values[e] = FromParts<V>({t.values[e], t.Imag(e)});
    SetThreads(o_.threads);
    rsb_err_t error = RSB_ERR_NO_ERROR;
    mtx_ = rsb_mtx_alloc_from_coo_const(
        values.data(), t.coords[0].data(), t.coords[1].data(), static_cast<rsb_nnz_idx_t>(t.nnz()),
        Type(), static_cast<rsb_coo_idx_t>(t.dims[0]), static_cast<rsb_coo_idx_t>(t.dims[1]), 0, 0,
        RSB_FLAG_DEFAULT_MATRIX_FLAGS, &error);
    Check(error, "building the matrix");
    rhs_ = o_.kernel == "spmm" ? o_.sizes.at("j") : 1;
    const ValueBuffer& dense = (*o_.inputs)[2];
    b_.resize(dense.size());
    for (int64_t k = 0; k < dense.size(); ++k) b_[k] = FromParts<V>(dense.GetComplex(k));
    c_.assign(t.dims[0] * rhs_, V(0));
    if (tuned_) {
      rsb_int_t tuned_threads = 0;
      const V alpha = 1, beta = 0;
      // The matrix to re-block goes in through mtxOpp (mtxAp is then null).
      Check(rsb_tune_spmm(&mtx_, nullptr, &tuned_threads, 0, 0.0, RSB_TRANSPOSITION_N, &alpha,
                          nullptr, static_cast<rsb_coo_idx_t>(rhs_), RSB_FLAG_WANT_ROW_MAJOR_ORDER,
                          b_.data(), static_cast<rsb_nnz_idx_t>(rhs_), &beta, c_.data(),
                          static_cast<rsb_nnz_idx_t>(rhs_)),
            "rsb_tune_spmm");
      if (tuned_threads > 0) threads_ = tuned_threads;
    }
    prepare_ms = MsSince(start);
  }

  void Call() override {
    SetThreads(threads_ > 0 ? threads_ : o_.threads);
    const V alpha = 1, beta = 0;
    if (rhs_ == 1 && o_.kernel == "spmv") {
      Check(rsb_spmv(RSB_TRANSPOSITION_N, &alpha, mtx_, b_.data(), 1, &beta, c_.data(), 1),
            "rsb_spmv");
    } else {
      Check(rsb_spmm(RSB_TRANSPOSITION_N, &alpha, mtx_, static_cast<rsb_coo_idx_t>(rhs_),
                     RSB_FLAG_WANT_ROW_MAJOR_ORDER, b_.data(), static_cast<rsb_nnz_idx_t>(rhs_),
                     &beta, c_.data(), static_cast<rsb_nnz_idx_t>(rhs_)),
            "rsb_spmm");
    }
  }

  ValueBuffer Output() override {
    ValueBuffer out(o_.dtype, static_cast<int64_t>(c_.size()));
    for (size_t k = 0; k < c_.size(); ++k)
      out.SetComplex(static_cast<int64_t>(k), ToComplex(c_[k]));
    return out;
  }

 private:
  // std::complex has the layout of C's _Complex, which librsb's complex types take.
  static rsb_type_t Type() {
    if constexpr (std::is_same_v<V, std::complex<float>>) return RSB_NUMERICAL_TYPE_FLOAT_COMPLEX;
    if constexpr (std::is_same_v<V, std::complex<double>>) return RSB_NUMERICAL_TYPE_DOUBLE_COMPLEX;
    return sizeof(V) == 4 ? RSB_NUMERICAL_TYPE_FLOAT : RSB_NUMERICAL_TYPE_DOUBLE;
  }
  BaselineOperands o_;
  bool tuned_;
  struct rsb_mtx_t* mtx_ = nullptr;
  int64_t rhs_ = 1;
  int threads_ = 0;
  std::vector<V> b_, c_;
};

}  // namespace

std::unique_ptr<Baseline> MakeRsbBaseline(const BaselineOperands& o, bool tuned) {
  if (o.kernel != "spmv" && o.kernel != "spmm") return nullptr;
  if (o.dtype == DType::kC64) return std::make_unique<RsbBaseline<std::complex<float>>>(o, tuned);
  if (o.dtype == DType::kC128) return std::make_unique<RsbBaseline<std::complex<double>>>(o, tuned);
  if (o.dtype == DType::kF32) return std::make_unique<RsbBaseline<float>>(o, tuned);
  return std::make_unique<RsbBaseline<double>>(o, tuned);
}

}  // namespace sparsetune
