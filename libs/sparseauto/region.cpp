#include "sparseauto/region.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "base/errors.hpp"

namespace sparsetune::sparseauto_internal {

namespace {

// True when a < b beyond rounding: values are sums of positive terms evaluated in long double.
bool ClearlyLess(long double a, long double b) {
  return a < b - 1e-9L * std::max(std::fabs(a), std::fabs(b));
}

}  // namespace

Region::Region(const CostVariables& vars, const std::vector<bool>& sparse_mode,
               const std::vector<Constraint>& user, unsigned timeout_ms)
    : solver_(ctx_, "QF_NRA") {
  z3::params p(ctx_);
  p.set("timeout", timeout_ms);
  solver_.set(p);
  for (int v = 0; v < vars.size(); ++v) z3vars_.push_back(ctx_.real_const(vars.names[v].c_str()));

  std::set<int> named;
  for (const auto& c : user) named.insert(c.variables.begin(), c.variables.end());
  for (int v = 0; v < vars.size(); ++v) {
    const std::string& name = vars.names[v];
    const z3::expr& x = z3vars_[v];
    if (vars.is_fiber[v]) {
      const std::string& dim = vars.names[vars.dim[vars.index_of[v]]];
      Add(x > 0 && x <= z3vars_[vars.dim[vars.index_of[v]]], "0 < " + name + " <= " + dim);
      if (!named.count(v)) Add(x >= 1 && x <= 1000, "1 <= " + name + " <= 1000");
    } else {
      Add(x >= 1, name + " >= 1");
      if (named.count(v)) continue;
      if (sparse_mode[v]) {
        Add(x >= 1000 && x <= 10000000, "1000 <= " + name + " <= 10000000");
      } else {
        Add(x >= 8 && x <= 256, "8 <= " + name + " <= 256");
      }
    }
  }
  for (const auto& c : user) Add(ToZ3(c), c.text);
}

void Region::CheckSatisfiable(const std::vector<Constraint>& user) {
  const z3::check_result r = Check(ctx_.bool_val(true));
  if (r == z3::unsat) {
    std::string list;
    for (const auto& c : user) list += (list.empty() ? "" : "; ") + c.text;
    throw InputError("the constraints are contradictory: no sizes satisfy " +
                     (list.empty() ? std::string("the default ranges") : list) +
                     " together with the inferred bounds (Z3: unsat)");
  }
}

bool Region::Dominates(const Polynomial& tc, const Polynomial& nc, const Polynomial& ts,
                       const Polynomial& ns) {
  // Is s better somewhere? Witness points first, then signs of coefficients, then Z3.
  for (const auto& p : pool_) {
    if (ClearlyLess(ts.Evaluate(p), tc.Evaluate(p)) ||
        ClearlyLess(ns.Evaluate(p), nc.Evaluate(p))) {
      return false;
    }
  }
  const Polynomial dt = ts - tc, dn = ns - nc;  // s minus c
  const Polynomial mdt = tc - ts, mdn = nc - ns;
  // Every variable is positive in the region, so a non-zero polynomial with non-negative
  // coefficients is positive everywhere in it.
  if ((!mdt.IsZero() && mdt.NonNegativeCoefficients()) ||
      (!mdn.IsZero() && mdn.NonNegativeCoefficients())) {
    return false;
  }
  if (!(dt.NonNegativeCoefficients() && dn.NonNegativeCoefficients())) {
    const z3::check_result better = Check(ToZ3(ts) < ToZ3(tc) || ToZ3(ns) < ToZ3(nc));
    if (better != z3::unsat) return false;  // sat, or unknown: keep s
  }
  // Never better; is it worse somewhere?
  if ((!dt.IsZero() && dt.NonNegativeCoefficients()) ||
      (!dn.IsZero() && dn.NonNegativeCoefficients())) {
    return true;
  }
  for (const auto& p : pool_) {
    if (ClearlyLess(tc.Evaluate(p), ts.Evaluate(p)) ||
        ClearlyLess(nc.Evaluate(p), ns.Evaluate(p))) {
      return true;
    }
  }
  return Check(ToZ3(ts) > ToZ3(tc) || ToZ3(ns) > ToZ3(nc)) == z3::sat;
}

void Region::Add(const z3::expr& e, const std::string& text) {
  solver_.add(e);
  texts_.push_back(text);
}

z3::check_result Region::Check(const z3::expr& condition) {
  ++queries_;
  solver_.push();
  solver_.add(condition);
  z3::check_result r = z3::unknown;
  try {
    r = solver_.check();
  } catch (const z3::exception&) {
    r = z3::unknown;
  }
  if (r == z3::sat) KeepWitness();
  if (r == z3::unknown) ++unknowns_;
  solver_.pop();
  return r;
}

void Region::KeepWitness() {
  z3::model m = solver_.get_model();
  std::vector<long double> point;
  for (const auto& x : z3vars_) {
    z3::expr v = m.eval(x, true);
    std::string text;
    try {
      text = v.get_decimal_string(30);
    } catch (const z3::exception&) {
      return;
    }
    point.push_back(std::strtold(text.c_str(), nullptr));
  }
  pool_.push_back(std::move(point));
}

z3::expr Region::ToZ3(const Polynomial& p) {
  z3::expr sum = ctx_.real_val(0);
  for (const auto& t : p.terms()) {
    z3::expr term = ctx_.real_val(std::to_string(t.coefficient).c_str());
    for (int v = 0; v < kMaxPolyVars; ++v) {
      for (int e = 0; e < t.monomial[v]; ++e) term = term * z3vars_[v];
    }
    sum = sum + term;
  }
  return sum;
}

z3::expr Region::ToZ3(const ConstraintExpr& e) {
  switch (e.op) {
    case ConstraintExpr::Op::kNumber:
      return ctx_.real_val(e.number.c_str());
    case ConstraintExpr::Op::kVariable:
      return ToZ3(e.monomial);
    case ConstraintExpr::Op::kAdd:
      return ToZ3(e.args[0]) + ToZ3(e.args[1]);
    case ConstraintExpr::Op::kSub:
      return ToZ3(e.args[0]) - ToZ3(e.args[1]);
    case ConstraintExpr::Op::kMul:
      return ToZ3(e.args[0]) * ToZ3(e.args[1]);
    case ConstraintExpr::Op::kDiv:
      return ToZ3(e.args[0]) / ToZ3(e.args[1]);
    case ConstraintExpr::Op::kNeg:
      return -ToZ3(e.args[0]);
    case ConstraintExpr::Op::kPow: {
      z3::expr base = ToZ3(e.args[0]);
      z3::expr out = ctx_.real_val(1);
      for (int k = 0; k < e.power; ++k) out = out * base;
      return out;
    }
  }
  return ctx_.real_val(0);
}

z3::expr Region::ToZ3(const Constraint& c) {
  z3::expr all = ctx_.bool_val(true);
  for (size_t k = 0; k < c.relations.size(); ++k) {
    const z3::expr a = ToZ3(c.terms[k]), b = ToZ3(c.terms[k + 1]);
    switch (c.relations[k]) {
      case Constraint::Relation::kLess:
        all = all && a < b;
        break;
      case Constraint::Relation::kLessEqual:
        all = all && a <= b;
        break;
      case Constraint::Relation::kGreater:
        all = all && a > b;
        break;
      case Constraint::Relation::kGreaterEqual:
        all = all && a >= b;
        break;
      case Constraint::Relation::kEqual:
        all = all && a == b;
        break;
    }
  }
  return all;
}

}  // namespace sparsetune::sparseauto_internal
