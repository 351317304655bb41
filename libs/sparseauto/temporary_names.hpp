// Names for the temporaries of a schedule tree, in the order they are asked for: scalars t,
// t2, ... and dense ones T, T2, ..., skipping the names the expression already uses.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "ir/expression.hpp"

namespace sparsetune {

class TemporaryNames {
 public:
  explicit TemporaryNames(const Expression& e) {
    for (const auto& t : e.tensors) taken_.push_back(t.name);
    for (const auto& index : e.indices) taken_.push_back(index);
  }

  std::string Next(bool scalar) {
    const std::string base = scalar ? "t" : "T";
    int& counter = scalar ? scalars_ : dense_;
    for (;;) {
      ++counter;
      const std::string name = counter == 1 ? base : base + std::to_string(counter);
      if (std::find(taken_.begin(), taken_.end(), name) == taken_.end()) return name;
    }
  }

 private:
  std::vector<std::string> taken_;
  int scalars_ = 0, dense_ = 0;
};

}  // namespace sparsetune
