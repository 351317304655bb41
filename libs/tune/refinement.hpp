// A tune's second round: schedules one move (WacoTemplate::Neighbours) from the best verified
// schedules of the first round. The cost model ranks them and the best ranked are measured;
// without a model they are drawn at random. The first round finds the region of the space
// that is fast on this operand; the second searches its neighbourhood, where the best split
// sizes, loop orders and level formats of that region are.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "costmodel/cost_model.hpp"
#include "measure/runner.hpp"
#include "superschedule/waco_template.hpp"
#include "tune/candidates.hpp"

namespace sparsetune {

struct RefinementOptions {
  int count = 8;    // schedules the second round measures (0: no second round)
  int anchors = 3;  // the best verified schedules of the first round whose neighbours compete
  uint64_t seed = 1;
};

// Up to `options.count` schedules (tag "refined") one move from the `options.anchors` fastest
// verified first-round schedules the template expresses, none of them measured already:
// the model's best scored (`model` set to the operand with SetMatrix), or random ones
// (deterministic in the seed and `rng_key`) when `model` is null.
std::vector<TuneCandidate> RefinementCandidates(const WacoTemplate& waco,
                                                const std::map<std::string, int64_t>& sizes,
                                                const std::vector<TuneCandidate>& measured,
                                                const std::vector<RunResult>& results,
                                                CostModel* model, const RefinementOptions& options,
                                                const std::string& rng_key);

}  // namespace sparsetune
