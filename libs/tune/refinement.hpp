// A tune's second round: schedules one move (WacoTemplate::Neighbours) from the fastest
// verified schedules so far, drawn at random, in steps (tune's refine_steps). The first round
// finds the region of the space that is fast on this operand; the second tries the split sizes,
// loop orders and level formats around it, where the best blocked layouts often are (dense
// 1 x 4 column blocks or 2 x 1 row blocks one move from a rule's CSR), and a second step goes
// on from whatever the first improved.
//
// The cost model does not choose among the moves: ranked by the shipped SpMM model (its best
// neighbours, its best up to three moves away, one per structure, or random among its better
// half), the second round won 1 of 20 tunes on six patterns; neighbours drawn at random won 2
// of 8, by 10-15%. Its scores tell a good region from a bad one; the differences between
// neighbours are finer than it ranks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "measure/runner.hpp"
#include "superschedule/waco_template.hpp"
#include "tune/candidates.hpp"

namespace sparsetune {

// The source tag of the schedules RefinementCandidates proposes.
constexpr const char* kRefinedSource = "refined";

struct RefinementOptions {
  int count = 8;    // schedules the second round measures (0: no second round)
  int anchors = 3;  // the fastest verified schedules of the first round whose neighbours compete
  uint64_t seed = 1;
};

// Up to `options.count` distinct schedules (tagged kRefinedSource) one move from the
// `options.anchors` fastest verified first-round schedules that the template expresses, none
// measured already, drawn at random (deterministic in the seed and `rng_key`).
std::vector<TuneCandidate> RefinementCandidates(const WacoTemplate& waco,
                                                const std::map<std::string, int64_t>& sizes,
                                                const std::vector<TuneCandidate>& measured,
                                                const std::vector<RunResult>& results,
                                                const RefinementOptions& options,
                                                const std::string& rng_key);

}  // namespace sparsetune
