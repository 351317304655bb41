#include <chrono>

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include "baselines/baseline.hpp"
#include "baselines/libraries/baselines_internal.hpp"

namespace sparsetune {

namespace {

// Eigen 3: row-major sparse times dense, which Eigen parallelizes with OpenMP.
template <class V>
class EigenBaseline : public Baseline {
 public:
  explicit EigenBaseline(const BaselineOperands& o) : o_(o) {}
  std::string name() const override { return "eigen"; }

  void Prepare() override {
    const auto start = std::chrono::steady_clock::now();
    const CooTensor& t = *o_.sparse;
    std::vector<Eigen::Triplet<V, int>> triplets;
    triplets.reserve(t.nnz());
    for (int64_t e = 0; e < t.nnz(); ++e)
      triplets.emplace_back(t.coords[0][e], t.coords[1][e], static_cast<V>(t.values[e]));
    a_.resize(t.dims[0], t.dims[1]);
    a_.setFromTriplets(triplets.begin(), triplets.end());
    a_.makeCompressed();
    const ValueBuffer& dense = (*o_.inputs)[2];
    const int64_t cols = o_.kernel == "spmm" ? o_.sizes.at("j") : 1;
    b_.resize(t.dims[1], cols);
    for (int64_t r = 0; r < t.dims[1]; ++r)
      for (int64_t c = 0; c < cols; ++c) b_(r, c) = static_cast<V>(dense.Get(r * cols + c));
    c_.resize(t.dims[0], cols);
    Eigen::setNbThreads(o_.threads);
    prepare_ms = MsSince(start);
  }
  void Call() override {
    // A vector right-hand side takes Eigen's (parallel) sparse-matrix-vector product.
    if (b_.cols() == 1) {
      Eigen::Map<const Vector> x(b_.data(), b_.rows());
      Eigen::Map<Vector> y(c_.data(), c_.rows());
      y.noalias() = a_ * x;
    } else {
      c_.noalias() = a_ * b_;
    }
  }
  ValueBuffer Output() override {
    ValueBuffer out(o_.dtype, c_.rows() * c_.cols());
    for (int64_t r = 0; r < c_.rows(); ++r)
      for (int64_t c = 0; c < c_.cols(); ++c) out.Set(r * c_.cols() + c, c_(r, c));
    return out;
  }

 private:
  using Dense = Eigen::Matrix<V, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Vector = Eigen::Matrix<V, Eigen::Dynamic, 1>;
  BaselineOperands o_;
  Eigen::SparseMatrix<V, Eigen::RowMajor, int> a_;
  Dense b_, c_;
};

}  // namespace

std::unique_ptr<Baseline> MakeEigenBaseline(const BaselineOperands& o) {
  if (o.kernel != "spmv" && o.kernel != "spmm") return nullptr;
  if (o.dtype == DType::kF32) return std::make_unique<EigenBaseline<float>>(o);
  return std::make_unique<EigenBaseline<double>>(o);
}

}  // namespace sparsetune
