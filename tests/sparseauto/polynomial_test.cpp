// The exact polynomial class behind SparseAuto's costs.
#include <gtest/gtest.h>

#include "sparseauto/polynomial.hpp"

namespace sparsetune {
namespace {

const std::vector<std::string> kNames = {"I", "J", "jpos", "K", "L"};

TEST(Polynomial, CanonicalFormMakesEqualPolynomialsEqual) {
  const Polynomial i = Polynomial::Variable(0), k = Polynomial::Variable(3);
  const Polynomial a = i * k + k * i;
  const Polynomial b = Polynomial::Constant(2) * Polynomial::Product({3, 0});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_EQ(a.ToString(kNames), "2*I*K");
  EXPECT_TRUE((a - b).IsZero());
  EXPECT_EQ((a - b).ToString(kNames), "0");
}

TEST(Polynomial, PrintsByDegreeThenVariableOrder) {
  // nnz(B)(K + L) for CSR B: I*jpos*K + I*jpos*L.
  const Polynomial nnz = Polynomial::Product({0, 2});
  const Polynomial p = nnz * (Polynomial::Variable(4) + Polynomial::Variable(3));
  EXPECT_EQ(p.ToString(kNames), "I*jpos*K + I*jpos*L");
  EXPECT_EQ(p.Degree(), 3);
  const Polynomial q = p + Polynomial::Product({0, 0}) - Polynomial::Constant(3);
  EXPECT_EQ(q.ToString(kNames), "I*jpos*K + I*jpos*L + I^2 - 3");
  EXPECT_FALSE(q.NonNegativeCoefficients());
  EXPECT_TRUE(p.NonNegativeCoefficients());
}

TEST(Polynomial, EvaluatesExactlyAndWithoutOverflow) {
  const Polynomial p = Polynomial::Product({0, 2, 3}) + Polynomial::Product({0, 2, 4});
  const std::vector<long double> at = {1000, 0, 16, 64, 32};
  EXPECT_EQ(p.Evaluate(at), 1000.0L * 16 * 64 + 1000.0L * 16 * 32);
  // 10^7 to the sixth power is far beyond 64 bits.
  const Polynomial big = Polynomial::Product({0, 0, 0, 0, 0, 0});
  EXPECT_NEAR(static_cast<double>(big.Evaluate({1e7L, 0, 0, 0, 0}) / 1e42L), 1.0, 1e-12);
}

}  // namespace
}  // namespace sparsetune
