// Stage 3: pruning complexity classes that another class dominates over the whole region,
// proved with Z3 (region.hpp).

#include <algorithm>

#include "sparseauto/stages.hpp"

namespace sparsetune::sparseauto_internal {

SparseAutoStage Stage3Smt(BigSpace& space, Region& region, ComplexityClasses& classes,
                          SparseAutoResult* result) {
  const Expression& e = space.expression();
  const CostVariables& vars = space.variables();
  // Best candidates at a witness point first, so that dominators tend to be tried early (the
  // outcome does not depend on the order: dominance is transitive).
  const Clock::time_point start = Clock::now();
  std::vector<std::pair<int, int>> keys;
  for (const auto& [key, members] : classes) keys.push_back(key);
  if (const auto* p = region.SomePoint()) {
    std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
      const long double ta = space.polynomial(a.first).Evaluate(*p);
      const long double tb = space.polynomial(b.first).Evaluate(*p);
      if (ta != tb) return ta < tb;
      return space.polynomial(a.second).Evaluate(*p) < space.polynomial(b.second).Evaluate(*p);
    });
  }
  std::vector<bool> alive(keys.size(), true);
  for (size_t s = 0; s < keys.size(); ++s) {
    for (size_t c = 0; c < keys.size() && alive[s]; ++c) {
      if (c == s || !alive[c]) continue;
      if (region.Dominates(space.polynomial(keys[c].first), space.polynomial(keys[c].second),
                           space.polynomial(keys[s].first), space.polynomial(keys[s].second))) {
        alive[s] = false;
      }
    }
  }
  SparseAutoStage stage3{"stage3_smt", 0, 0, 0};
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!alive[k]) continue;
    ++stage3.classes;
    for (size_t t : classes[keys[k]]) {
      SparseAutoCandidate c;
      c.schedule = space.ToSchedule(t);
      c.notation = ScheduleNotation(e, c.schedule);
      c.time = space.polynomial(keys[k].first);
      c.memory = space.polynomial(keys[k].second);
      c.time_text = c.time.ToString(vars.display);
      c.memory_text = c.memory.ToString(vars.display);
      c.loop_depth = space.loop_depth(t);
      c.memory_depth = space.memory_depth(t);
      c.class_id = static_cast<int>(k);
      result->survivors.push_back(std::move(c));
    }
  }
  stage3.count = result->survivors.size();
  // TACO's linear default, kept for stages 4 and 5 although stage 2 removed it.
  SparseAutoCandidate linear;
  linear.schedule = FixedCsrSchedule(e);
  linear.notation = ScheduleNotation(e, linear.schedule);
  bool present = false;
  for (const auto& c : result->survivors) present |= c.notation == linear.notation;
  if (!present) {
    const ScheduleCosts costs = CostOfSchedule(e, linear.schedule);
    linear.time = costs.time;
    linear.memory = costs.memory;
    linear.time_text = linear.time.ToString(vars.display);
    linear.memory_text = linear.memory.ToString(vars.display);
    linear.loop_depth = costs.loop_depth;
    linear.memory_depth = costs.memory_depth;
    linear.class_id = -1;
    linear.baseline = true;
    result->survivors.push_back(std::move(linear));
  }
  stage3.ms = MsSince(start);
  return stage3;
}

}  // namespace sparsetune::sparseauto_internal
