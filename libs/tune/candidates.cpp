#include "tune/candidates.hpp"

#include <algorithm>

#include "ir/loop_nest.hpp"
#include "sparseauto/sparseauto.hpp"

namespace sparsetune {

void AddDistinct(std::vector<TuneCandidate>& list, TuneCandidate c) {
  c.schedule.Canonicalize();
  c.json = c.schedule.CanonicalJson();
  for (const auto& other : list) {
    if (other.json == c.json) return;
  }
  list.push_back(std::move(c));
}

namespace {

Schedule Parse(const nlohmann::json& json) {
  return Schedule::FromJson(json, "heuristic schedule");
}

nlohmann::json Balanced(const std::string& index) {
  return {{"index", index}, {"chunk", 1}, {"partition", "balanced"}};
}

// Largest power of two up to `limit` that does not exceed `size`.
int64_t SplitUpTo(int64_t size, int64_t limit) {
  int64_t s = 1;
  while (s * 2 <= std::min(size, limit)) s *= 2;
  return s;
}

}  // namespace

std::vector<TuneCandidate> HeuristicCandidates(const std::string& kernel,
                                               const Expression& expression,
                                               const std::map<std::string, int64_t>& sizes) {
  std::vector<nlohmann::json> schedules;
  if (kernel == "spmv") {
    for (int unroll : {1, 4}) {
      schedules.push_back({{"loop_order", {"i", "k"}},
                           {"format", {"i:U", "k:C"}},
                           {"parallel", Balanced("i")},
                           {"unroll", unroll},
                           {"narrow_coordinates", true}});
    }
    // One thread: small matrices lose more to starting threads than they gain.
    schedules.push_back(
        {{"loop_order", {"i", "k"}},
         {"format", {"i:U", "k:C"}},
         {"parallel", {{"index", "i"}, {"chunk", 1}, {"threads", 1}, {"partition", "balanced"}}},
         {"unroll", 4},
         {"narrow_coordinates", true}});
    for (int lanes : {8, 16}) {
      if (sizes.at("i") < 2 * lanes) continue;
      schedules.push_back({{"splits", {{"i", lanes}}},
                           {"loop_order", {"i1", "k", "i0"}},
                           {"format", {"i1:U", "k:S", "i0:U"}},
                           {"parallel", Balanced("i1")},
                           {"narrow_coordinates", true}});
    }
  } else if (kernel == "spmm") {
    for (int64_t tile : {64, 128}) {
      const int64_t j = SplitUpTo(sizes.at("j"), tile);
      if (j < 4) continue;
      schedules.push_back({{"splits", {{"j", j}}},
                           {"loop_order", {"i", "j1", "k", "j0"}},
                           {"format", {"i:U", "k:C"}},
                           {"parallel", Balanced("i")},
                           {"narrow_coordinates", true}});
    }
  } else if (kernel == "sddmm") {
    schedules.push_back({{"loop_order", {"i", "j", "k"}},
                         {"format", {"i:U", "j:C"}},
                         {"parallel", Balanced("i")},
                         {"narrow_coordinates", true},
                         {"transpose", {"C"}}});
  } else if (kernel == "mttkrp") {
    const int64_t j = SplitUpTo(sizes.at("j"), 64);
    if (j >= 4) {
      schedules.push_back({{"splits", {{"j", j}}},
                           {"loop_order", {"i", "j1", "k", "l", "j0"}},
                           {"format", {"i:C", "k:C", "l:C"}},
                           {"parallel", Balanced("i")},
                           {"narrow_coordinates", true}});
    }
    schedules.push_back({{"loop_order", {"i", "k", "l", "j"}},
                         {"format", {"i:C", "k:C", "l:C"}},
                         {"parallel", Balanced("i")},
                         {"narrow_coordinates", true}});
  }
  std::vector<TuneCandidate> out;
  for (const auto& json : schedules) {
    Schedule s = Parse(json);
    if (!Lower(expression, s).nest) continue;
    AddDistinct(out, {std::move(s), "", "heuristic"});
  }
  return out;
}

std::vector<TuneCandidate> SparseAutoCandidates(const Expression& expression,
                                                const std::vector<int64_t>& dims,
                                                const std::vector<int64_t>& prefix_nnz,
                                                const std::map<std::string, int64_t>& dense,
                                                int limit) {
  SparseAutoOptions options;
  options.values = ConcreteValues(expression, dims, prefix_nnz, dense);
  const SparseAutoResult result = RunSparseAuto(expression, options);
  std::vector<TuneCandidate> out;
  // The chosen one first, then the other survivors in order.
  std::vector<int> order;
  if (result.chosen >= 0) order.push_back(result.chosen);
  for (int k = 0; k < static_cast<int>(result.survivors.size()); ++k) {
    if (k != result.chosen) order.push_back(k);
  }
  for (int k : order) {
    if (static_cast<int>(out.size()) >= limit) break;
    Schedule s = result.survivors[k].schedule;
    if (!Lower(expression, s).nest) continue;
    AddDistinct(out, {std::move(s), "", "sparseauto"});
  }
  return out;
}

}  // namespace sparsetune
