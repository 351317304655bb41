#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sparsetune {

// Exponents of one monomial over at most kMaxPolyVars variables, in a fixed variable order.
constexpr int kMaxPolyVars = 16;
using Monomial = std::array<uint8_t, kMaxPolyVars>;

// An exact polynomial with integer coefficients: terms sorted by monomial (lexicographic over
// the exponent vectors), no zero coefficients, no repeated monomials. Equal polynomials have
// equal term lists, so equality and hashing are exact.
class Polynomial {
 public:
  struct Term {
    Monomial monomial{};
    int64_t coefficient = 0;
    bool operator==(const Term& o) const {
      return monomial == o.monomial && coefficient == o.coefficient;
    }
  };

  Polynomial() = default;
  static Polynomial Constant(int64_t value);
  static Polynomial Variable(int var);
  // The product of the given variables (repeats raise the power); the empty product is 1.
  static Polynomial Product(const std::vector<int>& vars);

  Polynomial operator+(const Polynomial& o) const;
  Polynomial operator-(const Polynomial& o) const;
  Polynomial operator*(const Polynomial& o) const;
  bool operator==(const Polynomial& o) const { return terms_ == o.terms_; }
  bool operator!=(const Polynomial& o) const { return !(*this == o); }

  bool IsZero() const { return terms_.empty(); }
  // True when every coefficient is >= 0: the polynomial is >= 0 for non-negative variables.
  bool NonNegativeCoefficients() const;
  int Degree() const;
  const std::vector<Term>& terms() const { return terms_; }
  size_t Hash() const;

  // Exact as long as the value fits a long double mantissa; otherwise a close approximation.
  long double Evaluate(const std::vector<long double>& values) const;
  // "I*jpos*K + I*jpos*L": terms by decreasing degree, variables in their fixed order, powers as
  // X^2, coefficients as 2*X; zero prints "0".
  std::string ToString(const std::vector<std::string>& names) const;

 private:
  void Normalize();
  std::vector<Term> terms_;
};

struct PolynomialHash {
  size_t operator()(const Polynomial& p) const { return p.Hash(); }
};

}  // namespace sparsetune
