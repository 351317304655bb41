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
// neighbours are finer than it ranks. What does tell is the kind of move: over the SpMM corpus,
// from a rule, widening the dense split beat the first round's best on 47% of its tries and
// switching threads on 2%. RefinementMoveWeights learns those rates from the neighbours a
// collection measured, and a model's manifest carries them, so the draw favours the moves that
// pay without giving up the others (replayed on the corpus, the second round's gain goes from
// 1.071x to 1.097x for SpMM; docs/ablation.md, runs 16-19).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/runner.hpp"
#include "superschedule/waco_template.hpp"
#include "tune/candidates.hpp"

namespace sparsetune {

// The source tag of the schedules RefinementCandidates proposes.
constexpr const char* kRefinedSource = "refined";
// And of those LeaderNeighbours proposes (the leader round), apart so that the move weights
// are learned from the second round alone, whose anchors a collection's times reproduce.
constexpr const char* kLeaderSource = "leader";
// Either of them: schedules drawn one move from others, not a first-round source.
bool IsNeighbourSource(const std::string& source);

class Database;

// How often each kind of move (WacoTemplate::Neighbours' `moves`) and each anchor (the fastest
// first-round schedule, the second, the third) gave a neighbour faster than everything its
// first round measured. A move's payoff depends on where it starts: from a rule (its dense
// width and its single rows fixed) widening the dense split paid on a third of the SpMM corpus's
// tries; from a drawn schedule (a sample, a model's pick, an earlier neighbour) whose choices
// were drawn already, the rates are flatter. So the rates are kept per kind of anchor, each
// shrunk towards its kind's overall rate by kMovePriorTries pseudo-tries, so that a move seen
// seldom keeps that rate's chance.
struct RefinementMoveWeights {
  enum class Anchor { kRule, kSearched };
  static Anchor AnchorOf(const std::string& source);
  static const char* AnchorName(Anchor anchor);

  std::map<std::string, double> moves[2];  // by Anchor
  double unseen[2] = {0.5, 0.5};           // a move the data never tried: its kind's rate
  std::vector<double> anchors;             // by rank; a rank beyond them weighs as the last
  int64_t matrices = 0, neighbours = 0;    // what they were learned from

  bool empty() const { return moves[0].empty() && moves[1].empty(); }
  double Weight(const std::string& move, Anchor anchor, size_t anchor_rank) const;
  nlohmann::json ToJson() const;
  // Throws InputError naming `what` when the object is malformed or a weight is not positive.
  static RefinementMoveWeights FromJson(const nlohmann::json& json, const std::string& what);
};

constexpr double kMovePriorTries = 10;

// A neighbour wins when it is this much faster than its first round's best: differences within
// the noise of a contest teach nothing.
constexpr double kMoveWinMargin = 0.01;

// Learns the weights from the neighbours stored for `kernel` (source kRefinedSource), each
// matched to the move and anchor that reach it from the fastest first-round times of its
// matrix, machine and dense sizes, as RefinementCandidates draws them. Empty when the kernel has
// no template or no neighbours were collected.
RefinementMoveWeights LearnRefinementMoveWeights(Database& db, const std::string& kernel);

struct RefinementOptions {
  int count = 8;    // schedules the second round measures (0: no second round)
  int anchors = 3;  // the fastest verified schedules of the first round whose neighbours compete
  uint64_t seed = 1;
  // When set and not empty, neighbours are drawn with these weights instead of uniformly.
  const RefinementMoveWeights* weights = nullptr;
  // The operand's values are all equal: neighbours whose format stores no padding read one
  // value (Schedule::uniform_values), as tune's first round does.
  bool uniform_values = false;
};

// Up to `options.count` distinct schedules (tagged kRefinedSource) one move from the
// `options.anchors` fastest verified first-round schedules that the template expresses, none
// measured already, drawn at random (deterministic in the seed and `rng_key`), uniformly or,
// with `options.weights`, each with the weight of its move and anchor.
std::vector<TuneCandidate> RefinementCandidates(const WacoTemplate& waco,
                                                const std::map<std::string, int64_t>& sizes,
                                                const std::vector<TuneCandidate>& measured,
                                                const std::vector<RunResult>& results,
                                                const RefinementOptions& options,
                                                const std::string& rng_key);

// Up to `options.count` distinct schedules (tagged kLeaderSource) one move from
// `measured[leader]`, none measured already: each of its splits halved and doubled first, the
// rest drawn as RefinementCandidates draws them (its `anchors` aside); a renumbered leader's
// neighbours are renumbered alike.
std::vector<TuneCandidate> LeaderNeighbours(const WacoTemplate& waco,
                                            const std::map<std::string, int64_t>& sizes,
                                            const std::vector<TuneCandidate>& measured,
                                            size_t leader, const RefinementOptions& options,
                                            const std::string& rng_key);

}  // namespace sparsetune
