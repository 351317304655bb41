// The stages over loop and memory depths: the whole space counted (generated), the
// memory-depth bound (stage 1) and the depth poset (stage 2).

#include <limits>

#include "sparseauto/stages.hpp"

namespace sparsetune::sparseauto_internal {

SparseAutoStage CountGenerated(BigSpace& space, const SparseAutoOptions& options) {
  const Clock::time_point start = Clock::now();
  SparseAutoStage generated{"generated", 0, -1, 0};
  const auto all = space.CountAll(16, options.count_budget);
  generated.count = all ? *all : 0;
  generated.count_known = all.has_value();
  generated.ms = MsSince(start);
  return generated;
}

SparseAutoStage Stage1MemoryDepth(BigSpace& space, const SparseAutoOptions& options,
                                  std::vector<BigSpace::DepthCount>* depths) {
  const Clock::time_point start = Clock::now();
  *depths = space.Stage1Depths();
  SparseAutoStage stage1{"stage1_memory_depth", 0, -1, 0};
  for (const auto& d : *depths) stage1.count += d.count;
  if (stage1.count <= options.stage1_classes_limit) {
    stage1.classes = space.Stage1Classes(std::numeric_limits<size_t>::max());
  }
  stage1.ms = MsSince(start);
  return stage1;
}

SparseAutoStage Stage2DepthPoset(BigSpace& space, const std::vector<BigSpace::DepthCount>& depths,
                                 ComplexityClasses* classes) {
  const Clock::time_point start = Clock::now();
  std::vector<std::pair<int, int>> frontier;
  for (const auto& a : depths) {
    bool dominated = false;
    for (const auto& b : depths) {
      dominated |= (a.loop_depth > b.loop_depth && a.memory_depth >= b.memory_depth) ||
                   (a.loop_depth >= b.loop_depth && a.memory_depth > b.memory_depth);
    }
    if (!dominated) frontier.emplace_back(a.loop_depth, a.memory_depth);
  }
  std::vector<size_t> trees;
  for (const auto& [l, m] : frontier) {
    const auto made = space.Materialize(l, m);
    trees.insert(trees.end(), made.begin(), made.end());
  }
  for (size_t t : trees) (*classes)[{space.time_id(t), space.memory_id(t)}].push_back(t);
  return {"stage2_depth_poset", trees.size(), int64_t(classes->size()), MsSince(start)};
}

}  // namespace sparsetune::sparseauto_internal
