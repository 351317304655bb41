#include "tune/refinement.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "base/errors.hpp"
#include "base/hash.hpp"
#include "db/database.hpp"
#include "ir/expression.hpp"

namespace sparsetune {

namespace {

struct PoolEntry {
  TuneCandidate candidate;
  std::string move;
  RefinementMoveWeights::Anchor anchor = RefinementMoveWeights::Anchor::kRule;
  size_t anchor_rank = 0;
};

// The neighbours of up to `anchors` of the schedules `preferred` names (indices into
// `measured`, best first) that the template expresses, each neighbour once (with the move of
// the first anchor that reaches it), none measured already. Orderings are the final round's,
// so a renumbered anchor is passed over, unless `renumbered_alike`: then its neighbours are
// renumbered as it is.
std::vector<PoolEntry> NeighbourPool(const WacoTemplate& waco,
                                     const std::map<std::string, int64_t>& sizes,
                                     const std::vector<TuneCandidate>& measured,
                                     const std::vector<size_t>& preferred, int anchors,
                                     bool renumbered_alike, bool uniform_values,
                                     const char* source) {
  std::set<std::string> seen;  // kernels measured or pooled, as they run here
  for (const auto& c : measured) seen.insert(KernelJsonHere(c.schedule));
  std::vector<PoolEntry> pool;
  size_t rank = 0;
  for (size_t c : preferred) {
    if (static_cast<int>(rank) >= anchors) break;
    const OrderingKind ordering = measured[c].schedule.ordering;
    if (ordering != OrderingKind::kNone && !renumbered_alike) continue;
    Schedule unordered = measured[c].schedule;
    unordered.ordering = OrderingKind::kNone;
    unordered.uniform_values = false;  // the operand's, not a choice of the template
    const auto point = waco.FromSchedule(unordered, nullptr);
    if (!point) continue;
    std::vector<std::string> moves;
    const std::vector<SuperSchedule> near = waco.Neighbours(*point, sizes, &moves);
    for (size_t n = 0; n < near.size(); ++n) {
      PoolEntry entry{{waco.ToSchedule(near[n]), "", source},
                      moves[n],
                      RefinementMoveWeights::AnchorOf(measured[c].source),
                      rank};
      entry.candidate.schedule.ordering = ordering;
      entry.candidate.schedule.uniform_values =
          uniform_values && !entry.candidate.schedule.StoresPadding();
      entry.candidate.schedule.Canonicalize();
      entry.candidate.json = entry.candidate.schedule.CanonicalJson();
      if (seen.insert(KernelJsonHere(entry.candidate.schedule)).second)
        pool.push_back(std::move(entry));
    }
    ++rank;
  }
  return pool;
}

// The first-round pool: the neighbours of the `anchors` fastest verified schedules.
std::vector<PoolEntry> NeighbourPool(const WacoTemplate& waco,
                                     const std::map<std::string, int64_t>& sizes,
                                     const std::vector<TuneCandidate>& measured,
                                     const std::vector<RunResult>& results, int anchors,
                                     bool uniform_values) {
  std::vector<size_t> verified;
  for (size_t c = 0; c < measured.size() && c < results.size(); ++c) {
    if (results[c].ok()) verified.push_back(c);
  }
  std::stable_sort(verified.begin(), verified.end(), [&](size_t a, size_t b) {
    return results[a].time.median_ms < results[b].time.median_ms;
  });
  return NeighbourPool(waco, sizes, measured, verified, anchors, false, uniform_values,
                       kRefinedSource);
}

// Up to `options.count` of the pool, drawn at random (deterministic in the seed and
// `rng_key`), uniformly or with the weights of their moves and anchors.
std::vector<TuneCandidate> DrawFromPool(std::vector<PoolEntry> pool,
                                        const RefinementOptions& options,
                                        const std::string& rng_key) {
  if (options.count <= 0) return {};
  StableHasher hasher;
  hasher.UpdateString(rng_key);
  hasher.UpdateU64(options.seed);
  std::mt19937_64 rng(hasher.Digest64());
  if (options.weights && !options.weights->empty()) {
    // Weighted sampling without replacement (Efraimidis and Spirakis): the largest keys
    // log(u) / w, u uniform in (0, 1].
    std::vector<std::pair<double, size_t>> keys;
    for (size_t p = 0; p < pool.size(); ++p) {
      const double u = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
      keys.emplace_back(
          std::log(u) / options.weights->Weight(pool[p].move, pool[p].anchor, pool[p].anchor_rank),
          p);
    }
    std::sort(keys.begin(), keys.end(), std::greater<>());
    std::vector<TuneCandidate> out;
    for (size_t k = 0; k < keys.size() && static_cast<int>(out.size()) < options.count; ++k)
      out.push_back(std::move(pool[keys[k].second].candidate));
    return out;
  }
  std::shuffle(pool.begin(), pool.end(), rng);
  if (static_cast<int>(pool.size()) > options.count) pool.resize(options.count);
  std::vector<TuneCandidate> out;
  for (PoolEntry& entry : pool) out.push_back(std::move(entry.candidate));
  return out;
}

// Whether `near` differs from `from` in one split alone, by a factor of two (other choices a
// narrow split drags along, such as its outer loop's place, aside). A split not written is 1.
bool IsUnitSplitStep(const Schedule& from, const Schedule& near) {
  auto split = [](const Schedule& s, const std::string& index) {
    const auto it = s.splits.find(index);
    return it == s.splits.end() ? int64_t(1) : it->second;
  };
  std::set<std::string> indices;
  for (const Schedule* s : {&from, &near})
    for (const auto& entry : s->splits) indices.insert(entry.first);
  int stepped = 0;
  for (const std::string& index : indices) {
    const int64_t a = split(from, index), b = split(near, index);
    if (a == b) continue;
    if (b != 2 * a && 2 * b != a) return false;
    ++stepped;
  }
  return stepped == 1;
}

}  // namespace

RefinementMoveWeights::Anchor RefinementMoveWeights::AnchorOf(const std::string& source) {
  return source == "sampled" || source == "model" || IsNeighbourSource(source) ? Anchor::kSearched
                                                                               : Anchor::kRule;
}

const char* RefinementMoveWeights::AnchorName(Anchor anchor) {
  return anchor == Anchor::kRule ? "from_rules" : "from_searched";
}

double RefinementMoveWeights::Weight(const std::string& move, Anchor anchor,
                                     size_t anchor_rank) const {
  const int kind = static_cast<int>(anchor);
  const auto it = moves[kind].find(move);
  const double by_move = it == moves[kind].end() ? unseen[kind] : it->second;
  const double by_rank = anchors.empty() ? 1.0 : anchors[std::min(anchor_rank, anchors.size() - 1)];
  return by_move * by_rank;
}

nlohmann::json RefinementMoveWeights::ToJson() const {
  auto rounded = [](double w) { return std::round(w * 1e4) / 1e4; };
  nlohmann::json out = {{"win", "a neighbour at least 1% faster than its first round's best"},
                        {"matrices", matrices},
                        {"neighbours", neighbours}};
  for (Anchor anchor : {Anchor::kRule, Anchor::kSearched}) {
    const int kind = static_cast<int>(anchor);
    nlohmann::json& part = out[AnchorName(anchor)];
    part = {{"unseen", rounded(unseen[kind])}, {"moves", nlohmann::json::object()}};
    for (const auto& [move, w] : moves[kind]) part["moves"][move] = rounded(w);
  }
  out["anchors"] = nlohmann::json::array();
  for (double w : anchors) out["anchors"].push_back(rounded(w));
  return out;
}

RefinementMoveWeights RefinementMoveWeights::FromJson(const nlohmann::json& json,
                                                      const std::string& what) {
  RefinementMoveWeights w;
  auto fail = [&](const std::string& cause) {
    throw InputError(what, 0, "refine_moves: " + cause);
  };
  auto positive = [&](const nlohmann::json& v, const std::string& name) {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      fail(name + " must be a positive number");
    return v.get<double>();
  };
  if (!json.is_object()) fail("must be an object");
  for (Anchor anchor : {Anchor::kRule, Anchor::kSearched}) {
    const int kind = static_cast<int>(anchor);
    const std::string name = AnchorName(anchor);
    if (!json.contains(name)) continue;
    const nlohmann::json& part = json[name];
    if (!part.is_object() || !part.contains("moves") || !part["moves"].is_object())
      fail(name + " must be an object with a \"moves\" object");
    for (const auto& [move, v] : part["moves"].items())
      w.moves[kind][move] = positive(v, name + "." + move);
    if (part.contains("unseen")) w.unseen[kind] = positive(part["unseen"], name + ".unseen");
  }
  if (json.contains("anchors")) {
    if (!json["anchors"].is_array()) fail("anchors must be an array");
    for (const auto& v : json["anchors"]) w.anchors.push_back(positive(v, "an anchor's weight"));
  }
  w.matrices = json.value("matrices", int64_t(0));
  w.neighbours = json.value("neighbours", int64_t(0));
  return w;
}

RefinementMoveWeights LearnRefinementMoveWeights(Database& db, const std::string& kernel) {
  RefinementMoveWeights out;
  const auto waco = WacoTemplate::ForKernel(kernel);
  if (!waco) return out;
  MeasurementFilter filter;
  filter.kernel = kernel;
  const std::vector<MeasurementRow> rows = db.Measurements(filter);
  // One contest per matrix, machine, dense sizes and type, in the order Measurements gives.
  using ContestKey = std::tuple<std::string, int64_t, DenseSizes, DType>;
  std::map<ContestKey, std::vector<const MeasurementRow*>> contests;
  for (const MeasurementRow& row : rows)
    contests[{row.fingerprint, row.machine_id, row.dense, row.dtype}].push_back(&row);

  struct Tally {
    int64_t wins = 0, tries = 0;
    void Add(bool win) {
      wins += win;
      ++tries;
    }
  };
  std::map<std::string, Tally> by_move[2];
  Tally by_kind[2];
  std::vector<Tally> by_rank;
  for (const auto& [key, contest] : contests) {
    std::vector<TuneCandidate> first;
    std::vector<RunResult> results;
    std::vector<const MeasurementRow*> refined;
    double best = 0;
    for (const MeasurementRow* row : contest) {
      if (row->source == kRefinedSource) {
        refined.push_back(row);
        continue;
      }
      if (row->source == kLeaderSource) continue;  // drawn around the final round's winner
      Schedule schedule = ParseScheduleText(row->schedule.canonical_json, "a stored schedule");
      first.push_back({std::move(schedule), row->schedule.canonical_json, row->source});
      RunResult result;
      result.status = RunStatus::kOk;
      result.time.median_ms = row->median_ms;
      results.push_back(result);
      if (best == 0 || row->median_ms < best) best = row->median_ms;
    }
    if (refined.empty() || first.empty()) continue;
    const std::optional<MatrixRecord> matrix = db.FindMatrix(std::get<0>(key));
    if (!matrix) continue;
    std::map<std::string, int64_t> sizes;
    try {
      sizes = ResolveIndexSizes(waco->expression(), matrix->dims, std::get<2>(key));
    } catch (const InputError&) {
      continue;  // stored under sizes this expression does not take
    }
    // A tune of an operand whose values were all equal drew its neighbours with one value.
    const bool uniform_values = std::any_of(first.begin(), first.end(), [](const TuneCandidate& c) {
      return c.schedule.uniform_values;
    });
    const std::vector<PoolEntry> pool =
        NeighbourPool(*waco, sizes, first, results, RefinementOptions().anchors, uniform_values);
    std::map<std::string, const PoolEntry*> by_json;
    for (const PoolEntry& entry : pool) by_json[entry.candidate.json] = &entry;
    bool matched = false;
    for (const MeasurementRow* row : refined) {
      const auto it = by_json.find(row->schedule.canonical_json);
      if (it == by_json.end()) continue;  // drawn around anchors that later times displaced
      const PoolEntry& entry = *it->second;
      const bool win = row->median_ms < best * (1 - kMoveWinMargin);
      const int kind = static_cast<int>(entry.anchor);
      by_move[kind][entry.move].Add(win);
      by_kind[kind].Add(win);
      if (by_rank.size() <= entry.anchor_rank) by_rank.resize(entry.anchor_rank + 1);
      by_rank[entry.anchor_rank].Add(win);
      ++out.neighbours;
      matched = true;
    }
    out.matrices += matched;
  }
  if (out.neighbours == 0) return out;
  // Each rate shrunk towards its kind's (and the kinds' towards one half).
  auto shrunk = [](const Tally& t, double prior) {
    return (t.wins + kMovePriorTries * prior) / (t.tries + kMovePriorTries);
  };
  for (int kind = 0; kind < 2; ++kind) {
    out.unseen[kind] = shrunk(by_kind[kind], 0.5);
    for (const auto& [move, tally] : by_move[kind])
      out.moves[kind][move] = shrunk(tally, out.unseen[kind]);
  }
  Tally all;
  for (const Tally& t : by_kind) {
    all.wins += t.wins;
    all.tries += t.tries;
  }
  for (const Tally& t : by_rank) out.anchors.push_back(shrunk(t, shrunk(all, 0.5)));
  return out;
}

std::vector<TuneCandidate> RefinementCandidates(const WacoTemplate& waco,
                                                const std::map<std::string, int64_t>& sizes,
                                                const std::vector<TuneCandidate>& measured,
                                                const std::vector<RunResult>& results,
                                                const RefinementOptions& options,
                                                const std::string& rng_key) {
  if (options.count <= 0) return {};
  return DrawFromPool(
      NeighbourPool(waco, sizes, measured, results, options.anchors, options.uniform_values),
      options, rng_key);
}

std::vector<TuneCandidate> LeaderNeighbours(const WacoTemplate& waco,
                                            const std::map<std::string, int64_t>& sizes,
                                            const std::vector<TuneCandidate>& measured,
                                            size_t leader, const RefinementOptions& options,
                                            const std::string& rng_key) {
  if (options.count <= 0 || leader >= measured.size()) return {};
  std::vector<PoolEntry> pool = NeighbourPool(waco, sizes, measured, {leader}, 1, true,
                                              options.uniform_values, kLeaderSource);
  // Every split halved or doubled first: a split's best size follows the cache sizes smoothly,
  // so near a good schedule the better one is most often a single step away (run 33's and run
  // 34's losses were each one such step from the winner, which a draw over all moves missed).
  // Compared as template points, whose splits name every index (a rule's may name none).
  Schedule unordered = measured[leader].schedule;
  unordered.ordering = OrderingKind::kNone;
  unordered.uniform_values = false;
  const auto point = waco.FromSchedule(unordered, nullptr);
  const Schedule from = point ? waco.ToSchedule(*point) : unordered;
  std::vector<TuneCandidate> out;
  std::vector<PoolEntry> rest;
  for (PoolEntry& entry : pool) {
    if (static_cast<int>(out.size()) < options.count &&
        IsUnitSplitStep(from, entry.candidate.schedule))
      out.push_back(std::move(entry.candidate));
    else
      rest.push_back(std::move(entry));
  }
  RefinementOptions drawn = options;
  drawn.count = options.count - static_cast<int>(out.size());
  for (TuneCandidate& c : DrawFromPool(std::move(rest), drawn, rng_key + "/leader"))
    out.push_back(std::move(c));
  return out;
}

bool IsNeighbourSource(const std::string& source) {
  return source == kRefinedSource || source == kLeaderSource;
}

}  // namespace sparsetune
