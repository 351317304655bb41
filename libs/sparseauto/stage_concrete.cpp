// The run-time stages, with concrete sizes: minimum time among schedules whose temporaries fit
// in the cache (stage 4), then the cache tie-break (stage 5).

#include <algorithm>
#include <set>

#include "sparseauto/stages.hpp"

namespace sparsetune::sparseauto_internal {

namespace {

// Whether a survivor's temporaries fit in the memory limit; when none fits, every one counts
// as fitting and least memory decides.
class Fit {
 public:
  explicit Fit(const SparseAutoResult& result) : limit_(result.memory_limit_bytes) {
    for (const auto& c : result.survivors) any_fits_ |= c.memory_bytes <= limit_;
  }
  bool any_fits() const { return any_fits_; }
  bool operator()(const SparseAutoCandidate& c) const {
    return any_fits_ ? c.memory_bytes <= limit_ : true;
  }

 private:
  int64_t limit_ = 0;
  bool any_fits_ = false;
};

struct CacheScore {
  long double strided = 0;
  int mismatches = 0;
  int restreams = 0;  // per level loop of the sparse operand, the dense loops around it
};

// Stage 5's measures of a schedule tree, summed over its computes: elements read with a
// stride at the innermost loop, loop orders against the tensors' index order, and dense loops
// around the sparse operand's level loops.
void ScoreCache(const Expression& e, const ScheduleNode& n, std::vector<std::string> loops,
                const std::map<std::string, long double>& size, CacheScore& score) {
  loops.insert(loops.end(), n.loops.begin(), n.loops.end());
  if (n.is_where()) {
    ScoreCache(e, *n.producer, loops, size, score);
    ScoreCache(e, *n.consumer, loops, size, score);
    return;
  }
  std::vector<std::vector<std::string>> accesses;
  if (n.compute.empty()) {
    for (const auto& t : e.tensors) accesses.push_back(t.indices);
  } else {
    const Assignment a = ParseAssignment(n.compute, "compute");
    accesses.push_back(a.lhs.indices);
    for (const auto& f : a.factors) accesses.push_back(f.indices);
  }
  // A dense loop around a level loop of the sparse operand traverses that level again.
  bool reads_sparse = n.compute.empty();
  if (!n.compute.empty()) {
    for (const auto& f : ParseAssignment(n.compute, "compute").factors)
      reads_sparse |= e.TensorId(f.tensor) == e.sparse;
  }
  if (reads_sparse) {
    int dense = 0;
    for (const auto& loop : loops) {
      if (e.IsSparseIndex(loop)) {
        score.restreams += dense;
      } else {
        ++dense;
      }
    }
  }
  auto position = [&](const std::string& index) {
    return static_cast<int>(std::find(loops.begin(), loops.end(), index) - loops.begin());
  };
  for (const auto& indices : accesses) {
    // A tensor indexed by the innermost loop anywhere but last is read with a stride.
    if (!loops.empty()) {
      auto it = std::find(indices.begin(), indices.end(), loops.back());
      if (it != indices.end() && std::next(it) != indices.end()) {
        long double stride = 1;
        for (++it; it != indices.end(); ++it) stride *= size.at(*it);
        score.strided += stride;
      }
    }
    for (size_t a = 0; a < indices.size(); ++a) {
      for (size_t b = a + 1; b < indices.size(); ++b) {
        if (position(indices[b]) < position(indices[a])) ++score.mismatches;
      }
    }
  }
}

}  // namespace

SparseAutoStage Stage4TimeMemory(const std::vector<long double>& point,
                                 const SparseAutoOptions& options, SparseAutoResult* result) {
  const Clock::time_point start = Clock::now();
  result->llc_bytes = options.llc_bytes > 0 ? options.llc_bytes : DetectLlcBytes();
  result->memory_limit_bytes = result->llc_bytes / 2;
  for (auto& c : result->survivors) {
    c.time_value = c.time.Evaluate(point);
    c.memory_bytes = c.memory.Evaluate(point) * options.value_bytes;
  }
  const Fit fits(*result);
  const bool any_fits = fits.any_fits();
  const SparseAutoCandidate* best = nullptr;
  for (const auto& c : result->survivors) {
    if (!fits(c)) continue;
    // Without any fitting schedule, the least memory wins before time.
    const bool better =
        !best ||
        (any_fits ? (c.time_value < best->time_value ||
                     (c.time_value == best->time_value && c.memory_bytes < best->memory_bytes))
                  : (c.memory_bytes < best->memory_bytes ||
                     (c.memory_bytes == best->memory_bytes && c.time_value < best->time_value)));
    if (better) best = &c;
  }
  SparseAutoStage stage4{"stage4_time_memory", 0, 0, 0};
  std::set<int> stage4_classes;
  for (auto& c : result->survivors) {
    c.stage4 =
        best && fits(c) && c.time_value == best->time_value && c.memory_bytes == best->memory_bytes;
    if (c.stage4) {
      ++stage4.count;
      stage4_classes.insert(c.class_id);
    }
  }
  stage4.classes = static_cast<int64_t>(stage4_classes.size());
  stage4.ms = MsSince(start);
  return stage4;
}

SparseAutoStage Stage5Cache(const Expression& e,
                            const std::map<std::string, long double>& index_size,
                            SparseAutoResult* result) {
  const Clock::time_point start = Clock::now();
  std::vector<SparseAutoCandidate>& survivors = result->survivors;
  for (auto& c : survivors) {
    CacheScore score;
    ScoreCache(e, c.schedule.root, {}, index_size, score);
    c.cache_cost = score.strided;
    c.order_mismatches = score.mismatches;
    c.restreams = score.restreams;
  }
  // Best first: stage-4 survivors, then by time, memory, cache cost, order, enumeration order.
  const Fit fits(*result);
  std::vector<size_t> order(survivors.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = survivors[a];
    const auto& y = survivors[b];
    if (x.stage4 != y.stage4) return x.stage4;
    if (fits(x) != fits(y)) return fits(x);
    if (x.time_value != y.time_value) return x.time_value < y.time_value;
    if (x.memory_bytes != y.memory_bytes) return x.memory_bytes < y.memory_bytes;
    if (x.cache_cost != y.cache_cost) return x.cache_cost < y.cache_cost;
    if (x.order_mismatches != y.order_mismatches) return x.order_mismatches < y.order_mismatches;
    return x.restreams < y.restreams;
  });
  std::vector<SparseAutoCandidate> sorted;
  for (size_t k : order) sorted.push_back(std::move(survivors[k]));
  survivors = std::move(sorted);
  result->chosen = survivors.empty() ? -1 : 0;
  return {"stage5_cache", survivors.empty() ? 0u : 1u, survivors.empty() ? 0 : 1, MsSince(start)};
}

}  // namespace sparsetune::sparseauto_internal
