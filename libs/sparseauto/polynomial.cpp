#include "sparseauto/polynomial.hpp"

#include <algorithm>
#include <stdexcept>

namespace sparsetune {

namespace {

int MonomialDegree(const Monomial& m) {
  int d = 0;
  for (uint8_t e : m) d += e;
  return d;
}

}  // namespace

Polynomial Polynomial::Constant(int64_t value) {
  Polynomial p;
  if (value != 0) p.terms_.push_back({Monomial{}, value});
  return p;
}

Polynomial Polynomial::Variable(int var) {
  return Product({var});
}

Polynomial Polynomial::Product(const std::vector<int>& vars) {
  Term t;
  t.coefficient = 1;
  for (int v : vars) {
    if (v < 0 || v >= kMaxPolyVars) throw std::out_of_range("polynomial variable out of range");
    ++t.monomial[v];
  }
  Polynomial p;
  p.terms_.push_back(t);
  return p;
}

void Polynomial::Normalize() {
  std::sort(terms_.begin(), terms_.end(),
            [](const Term& a, const Term& b) { return a.monomial < b.monomial; });
  std::vector<Term> merged;
  for (const Term& t : terms_) {
    if (!merged.empty() && merged.back().monomial == t.monomial) {
      merged.back().coefficient += t.coefficient;
    } else {
      merged.push_back(t);
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(),
                              [](const Term& t) { return t.coefficient == 0; }),
               merged.end());
  terms_ = std::move(merged);
}

Polynomial Polynomial::operator+(const Polynomial& o) const {
  Polynomial p = *this;
  p.terms_.insert(p.terms_.end(), o.terms_.begin(), o.terms_.end());
  p.Normalize();
  return p;
}

Polynomial Polynomial::operator-(const Polynomial& o) const {
  Polynomial p = *this;
  for (Term t : o.terms_) {
    t.coefficient = -t.coefficient;
    p.terms_.push_back(t);
  }
  p.Normalize();
  return p;
}

Polynomial Polynomial::operator*(const Polynomial& o) const {
  Polynomial p;
  for (const Term& a : terms_) {
    for (const Term& b : o.terms_) {
      Term t;
      t.coefficient = a.coefficient * b.coefficient;
      for (int v = 0; v < kMaxPolyVars; ++v) t.monomial[v] = uint8_t(a.monomial[v] + b.monomial[v]);
      p.terms_.push_back(t);
    }
  }
  p.Normalize();
  return p;
}

bool Polynomial::NonNegativeCoefficients() const {
  for (const Term& t : terms_) {
    if (t.coefficient < 0) return false;
  }
  return true;
}

int Polynomial::Degree() const {
  int d = 0;
  for (const Term& t : terms_) d = std::max(d, MonomialDegree(t.monomial));
  return d;
}

size_t Polynomial::Hash() const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t x) {
    h ^= x;
    h *= 1099511628211ull;
  };
  for (const Term& t : terms_) {
    for (uint8_t e : t.monomial) mix(e);
    mix(static_cast<uint64_t>(t.coefficient));
  }
  return static_cast<size_t>(h);
}

long double Polynomial::Evaluate(const std::vector<long double>& values) const {
  long double sum = 0;
  for (const Term& t : terms_) {
    long double term = static_cast<long double>(t.coefficient);
    for (int v = 0; v < kMaxPolyVars; ++v) {
      for (int e = 0; e < t.monomial[v]; ++e) term *= values.at(v);
    }
    sum += term;
  }
  return sum;
}

std::string Polynomial::ToString(const std::vector<std::string>& names) const {
  if (terms_.empty()) return "0";
  std::vector<Term> order = terms_;
  // Higher degree first; within a degree, variables earlier in the fixed order first.
  std::stable_sort(order.begin(), order.end(), [](const Term& a, const Term& b) {
    const int da = MonomialDegree(a.monomial), db = MonomialDegree(b.monomial);
    if (da != db) return da > db;
    return a.monomial > b.monomial;
  });
  std::string out;
  for (size_t k = 0; k < order.size(); ++k) {
    const Term& t = order[k];
    int64_t c = t.coefficient;
    if (k > 0) {
      out += c < 0 ? " - " : " + ";
      if (c < 0) c = -c;
    } else if (c < 0) {
      out += "-";
      c = -c;
    }
    std::string body;
    for (int v = 0; v < kMaxPolyVars; ++v) {
      if (t.monomial[v] == 0) continue;
      const std::string name =
          v < static_cast<int>(names.size()) ? names[v] : "x" + std::to_string(v);
      body += (body.empty() ? "" : "*") + name;
      if (t.monomial[v] > 1) body += "^" + std::to_string(t.monomial[v]);
    }
    if (body.empty()) {
      out += std::to_string(c);
    } else {
      out += (c != 1 ? std::to_string(c) + "*" : "") + body;
    }
  }
  return out;
}

}  // namespace sparsetune
