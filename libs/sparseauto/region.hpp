#pragma once

// Stage 3's region and its Z3 queries. Not part of the sparseauto interface.

#include <string>
#include <vector>

#include <z3++.h>

#include "sparseauto/constraints.hpp"
#include "sparseauto/polynomial.hpp"
#include "sparseauto/space.hpp"

namespace sparsetune::sparseauto_internal {

// The region R ∧ I ∧ U over the cost variables (see SparseAutoOptions) in a Z3 solver, and the
// pairwise dominance test of stage 3. Points that Z3 returns as witnesses are kept: they settle
// most later comparisons without a query.
class Region {
 public:
  // sparse_mode[v]: variable v is the dimension of a mode of the sparse operand.
  Region(const CostVariables& vars, const std::vector<bool>& sparse_mode,
         const std::vector<Constraint>& user, unsigned timeout_ms);

  // The region's constraints as text: R, I and U.
  const std::vector<std::string>& texts() const { return texts_; }
  int queries() const { return queries_; }   // Z3 checks run
  int unknowns() const { return unknowns_; }  // of which timed out or unknown

  // Throws InputError when no sizes satisfy the region; keeps a first witness point.
  void CheckSatisfiable(const std::vector<Constraint>& user);

  // True when class c dominates class s: c is never worse than s in time or memory anywhere
  // in the region (Z3 proves the opposite unsatisfiable) and strictly better somewhere.
  bool Dominates(const Polynomial& tc, const Polynomial& nc, const Polynomial& ts,
                 const Polynomial& ns);

  // A point of the region for ordering classes (the first witness), or nullptr.
  const std::vector<long double>* SomePoint() const {
    return pool_.empty() ? nullptr : &pool_.front();
  }

 private:
  void Add(const z3::expr& e, const std::string& text);
  z3::check_result Check(const z3::expr& condition);
  void KeepWitness();
  z3::expr ToZ3(const Polynomial& p);
  z3::expr ToZ3(const ConstraintExpr& e);
  z3::expr ToZ3(const Constraint& c);

  z3::context ctx_;
  z3::solver solver_;
  std::vector<z3::expr> z3vars_;
  std::vector<std::string> texts_;
  std::vector<std::vector<long double>> pool_;
  int queries_ = 0, unknowns_ = 0;
};

}  // namespace sparsetune::sparseauto_internal
