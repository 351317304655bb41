#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sparseauto/polynomial.hpp"
#include "sparseauto/space.hpp"

namespace sparsetune {

// Arithmetic over the cost variables in a user constraint: numbers, variables, + - * / and
// integer powers.
struct ConstraintExpr {
  enum class Op { kNumber, kVariable, kAdd, kSub, kMul, kDiv, kNeg, kPow };
  Op op = Op::kNumber;
  std::string number;   // kNumber: an exact decimal or integer ("0.001", "1000000")
  Polynomial monomial;  // kVariable: a variable, or a product of them for an alias (nnz)
  int power = 1;        // kPow
  std::vector<ConstraintExpr> args;
};

// A chain of comparisons, e.g. "8 <= l <= 256" or "10*j < k".
struct Constraint {
  enum class Relation { kLess, kLessEqual, kGreater, kGreaterEqual, kEqual };
  std::string text;
  std::vector<ConstraintExpr> terms;  // n + 1 terms
  std::vector<Relation> relations;    // n relations between consecutive terms
  std::set<int> variables;            // the cost variables it names (aliases expanded)
};

// Parses one --constraint. Variables are named after the expression's indices: dimensions by
// the index ("i", or upper case "I"), the sparse operand's average fiber lengths by the index
// and "pos" ("jpos"), and "nnz" for the sparse operand's nonzeros (the product of its root
// dimension and fiber lengths). Numbers may be decimals or use exponents (1e6, 2.5e-3).
// Throws InputError naming the constraint, the column and the cause; an unknown name lists the
// known ones.
Constraint ParseConstraint(const std::string& text, const CostVariables& variables);

// "i, j, k, l, jpos, nnz"
std::string KnownConstraintNames(const CostVariables& variables);

}  // namespace sparsetune
