#include "sparseauto/constraints.hpp"

#include <algorithm>
#include <cctype>

#include "base/errors.hpp"

namespace sparsetune {

namespace {

// Turns "2.5e-3" into the exact decimal "0.0025" (Z3 reads plain decimals exactly).
std::string ExactDecimal(const std::string& mantissa, int exponent) {
  std::string digits;
  int point = -1;
  for (char c : mantissa) {
    if (c == '.') {
      point = static_cast<int>(digits.size());
    } else {
      digits += c;
    }
  }
  if (point < 0) point = static_cast<int>(digits.size());
  point += exponent;
  while (point <= 0) {
    digits.insert(digits.begin(), '0');
    ++point;
  }
  while (point > static_cast<int>(digits.size())) digits += '0';
  std::string out = digits.substr(0, point);
  std::string frac = digits.substr(point);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  size_t nz = 0;
  while (nz + 1 < out.size() && out[nz] == '0') ++nz;
  out = out.substr(nz);
  return frac.empty() ? out : out + "." + frac;
}

class ConstraintParser {
 public:
  ConstraintParser(const std::string& text, const CostVariables& vars) : text_(text), vars_(vars) {}

  Constraint Parse() {
    Constraint c;
    c.text = text_;
    c.terms.push_back(Sum(c));
    for (;;) {
      SkipSpace();
      Constraint::Relation r;
      if (!Relation(&r)) break;
      c.relations.push_back(r);
      c.terms.push_back(Sum(c));
    }
    SkipSpace();
    if (pos_ < text_.size()) Fail(std::string("unexpected '") + text_[pos_] + "'");
    if (c.relations.empty()) Fail("expected a comparison such as \"10*j < k\" (<, <=, >, >=, ==)");
    return c;
  }

 private:
  [[noreturn]] void Fail(const std::string& cause) const {
    throw InputError("--constraint \"" + text_ + "\": column " + std::to_string(pos_ + 1) + ": " +
                     cause);
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char Peek() {
    SkipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool Consume(const char* token) {
    SkipSpace();
    const std::string t = token;
    if (text_.compare(pos_, t.size(), t) != 0) return false;
    pos_ += t.size();
    return true;
  }

  bool Relation(Constraint::Relation* r) {
    if (Consume("<=")) return *r = Constraint::Relation::kLessEqual, true;
    if (Consume(">=")) return *r = Constraint::Relation::kGreaterEqual, true;
    if (Consume("==")) return *r = Constraint::Relation::kEqual, true;
    if (Consume("<")) return *r = Constraint::Relation::kLess, true;
    if (Consume(">")) return *r = Constraint::Relation::kGreater, true;
    if (Consume("=")) return *r = Constraint::Relation::kEqual, true;
    return false;
  }

  ConstraintExpr Binary(ConstraintExpr::Op op, ConstraintExpr a, ConstraintExpr b) {
    ConstraintExpr e;
    e.op = op;
    e.args.push_back(std::move(a));
    e.args.push_back(std::move(b));
    return e;
  }

  ConstraintExpr Sum(Constraint& c) {
    ConstraintExpr e = Product(c);
    for (;;) {
      if (Consume("+")) {
        e = Binary(ConstraintExpr::Op::kAdd, std::move(e), Product(c));
      } else if (Peek() == '-') {
        ++pos_;
        e = Binary(ConstraintExpr::Op::kSub, std::move(e), Product(c));
      } else {
        return e;
      }
    }
  }

  ConstraintExpr Product(Constraint& c) {
    ConstraintExpr e = Power(c);
    for (;;) {
      if (Consume("*")) {
        e = Binary(ConstraintExpr::Op::kMul, std::move(e), Power(c));
      } else if (Consume("/")) {
        e = Binary(ConstraintExpr::Op::kDiv, std::move(e), Power(c));
      } else {
        return e;
      }
    }
  }

  ConstraintExpr Power(Constraint& c) {
    ConstraintExpr base = Unary(c);
    if (!Consume("^")) return base;
    SkipSpace();
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_ || pos_ - start > 2) {
      pos_ = start;
      Fail("expected a small integer power after '^'");
    }
    ConstraintExpr e;
    e.op = ConstraintExpr::Op::kPow;
    e.power = std::stoi(text_.substr(start, pos_ - start));
    e.args.push_back(std::move(base));
    return e;
  }

  ConstraintExpr Unary(Constraint& c) {
    const char p = Peek();
    if (p == '-') {
      ++pos_;
      ConstraintExpr e;
      e.op = ConstraintExpr::Op::kNeg;
      e.args.push_back(Unary(c));
      return e;
    }
    if (p == '(') {
      ++pos_;
      ConstraintExpr e = Sum(c);
      if (!Consume(")")) Fail("expected ')'");
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(p)) || p == '.') return Number();
    if (std::isalpha(static_cast<unsigned char>(p)) || p == '_') return Name(c);
    if (p == '\0') Fail("unexpected end of the constraint");
    Fail(std::string("unexpected '") + p + "'");
  }

  ConstraintExpr Number() {
    const size_t start = pos_;
    std::string mantissa;
    while (pos_ < text_.size() &&
           (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) {
      mantissa += text_[pos_++];
    }
    if (std::count(mantissa.begin(), mantissa.end(), '.') > 1 || mantissa == ".") {
      pos_ = start;
      Fail("malformed number");
    }
    int exponent = 0;
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      int sign = 1;
      if (p < text_.size() && (text_[p] == '+' || text_[p] == '-'))
        sign = text_[p++] == '-' ? -1 : 1;
      const size_t digits = p;
      while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) ++p;
      if (p == digits || p - digits > 3) {
        pos_ = start;
        Fail("malformed exponent in a number");
      }
      exponent = sign * std::stoi(text_.substr(digits, p - digits));
      pos_ = p;
    }
    ConstraintExpr e;
    e.op = ConstraintExpr::Op::kNumber;
    e.number = ExactDecimal(mantissa, exponent);
    return e;
  }

  ConstraintExpr Name(Constraint& c) {
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    const std::string name = text_.substr(start, pos_ - start);
    ConstraintExpr e;
    e.op = ConstraintExpr::Op::kVariable;
    int v = vars_.Find(name);
    if (v < 0) {
      for (int k = 0; k < vars_.size(); ++k) {
        if (!vars_.is_fiber[k] && vars_.display[k] == name) v = k;
      }
    }
    if (v >= 0) {
      e.monomial = Polynomial::Variable(v);
      c.variables.insert(v);
      return e;
    }
    if (name == "nnz") {
      // The sparse operand's nonzeros: root dimension times every fiber length.
      std::vector<int> product;
      for (int k = 0; k < vars_.size(); ++k) {
        if (vars_.is_fiber[k]) product.push_back(k);
      }
      product.push_back(vars_.dim[vars_.root_index]);
      e.monomial = Polynomial::Product(product);
      return e;
    }
    pos_ = start;
    Fail("unknown variable " + name + " (known: " + KnownConstraintNames(vars_) + ")");
  }

  std::string text_;
  const CostVariables& vars_;
  size_t pos_ = 0;
};

}  // namespace

Constraint ParseConstraint(const std::string& text, const CostVariables& variables) {
  return ConstraintParser(text, variables).Parse();
}

std::string KnownConstraintNames(const CostVariables& variables) {
  std::string out;
  for (const auto& name : variables.names) out += (out.empty() ? "" : ", ") + name;
  return out + ", nnz";
}

}  // namespace sparsetune
