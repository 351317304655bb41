#include "tune/refinement.hpp"

#include <algorithm>
#include <random>
#include <set>

#include "base/hash.hpp"

namespace sparsetune {

std::vector<TuneCandidate> RefinementCandidates(const WacoTemplate& waco,
                                                const std::map<std::string, int64_t>& sizes,
                                                const std::vector<TuneCandidate>& measured,
                                                const std::vector<RunResult>& results,
                                                const RefinementOptions& options,
                                                const std::string& rng_key) {
  if (options.count <= 0) return {};
  std::vector<size_t> verified;
  for (size_t c = 0; c < measured.size() && c < results.size(); ++c) {
    if (results[c].ok()) verified.push_back(c);
  }
  std::sort(verified.begin(), verified.end(), [&](size_t a, size_t b) {
    return results[a].time.median_ms < results[b].time.median_ms;
  });
  std::set<std::string> seen;
  for (const auto& c : measured) seen.insert(c.json);
  std::vector<TuneCandidate> pool;
  int anchors = 0;
  for (size_t c : verified) {
    if (anchors >= options.anchors) break;
    // Orderings are the final round's; a renumbered variant's neighbours are its own.
    if (measured[c].schedule.ordering != OrderingKind::kNone) continue;
    const auto point = waco.FromSchedule(measured[c].schedule, nullptr);
    if (!point) continue;
    ++anchors;
    for (const SuperSchedule& n : waco.Neighbours(*point, sizes)) {
      TuneCandidate candidate{waco.ToSchedule(n), "", kRefinedSource};
      candidate.schedule.Canonicalize();
      candidate.json = candidate.schedule.CanonicalJson();
      if (seen.insert(candidate.json).second) pool.push_back(std::move(candidate));
    }
  }
  StableHasher hasher;
  hasher.UpdateString(rng_key);
  hasher.UpdateU64(options.seed);
  std::mt19937_64 rng(hasher.Digest64());
  std::shuffle(pool.begin(), pool.end(), rng);
  if (static_cast<int>(pool.size()) > options.count) pool.resize(options.count);
  return pool;
}

}  // namespace sparsetune
