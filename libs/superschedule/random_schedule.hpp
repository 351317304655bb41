#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "ir/expression.hpp"
#include "ir/schedule.hpp"

namespace sparsetune {

// Samples a valid linear schedule of any expression: each index split once (or not) by any
// size, any loop order that keeps each outer split variable before its inner one, the sparse
// operand's levels in the order its loops visit them (concordant), U or C per level, and any
// parallel loop (races are resolved by the lowering). For properties and exploration; the
// WACO templates sample narrower, model-shaped spaces.
struct GenericSampleOptions {
  double split_probability = 0.6;
  int64_t max_split = 16;
  bool allow_serial = true;
  int max_threads = 2;
};

Schedule SampleGenericSchedule(const Expression& expression,
                               const std::map<std::string, int64_t>& sizes, std::mt19937_64& rng,
                               const GenericSampleOptions& options = {});

}  // namespace sparsetune
