#pragma once

// SparseAuto's stages as RunSparseAuto (sparseauto.cpp) runs them, one function per stage,
// named as in the paper and in the `schedules` output. Not part of the sparseauto interface.
//   CountGenerated      generated            stage_depths.cpp
//   Stage1MemoryDepth   stage1_memory_depth  stage_depths.cpp
//   Stage2DepthPoset    stage2_depth_poset   stage_depths.cpp
//   Stage3Smt           stage3_smt           stage_smt.cpp (the region: region.hpp)
//   Stage4TimeMemory    stage4_time_memory   stage_concrete.cpp
//   Stage5Cache         stage5_cache         stage_concrete.cpp

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/elapsed.hpp"
#include "sparseauto/region.hpp"
#include "sparseauto/space.hpp"
#include "sparseauto/sparseauto.hpp"

namespace sparsetune::sparseauto_internal {

using Clock = std::chrono::steady_clock;

// Stage 2's trees by complexity class: (time polynomial id, memory polynomial id) -> trees.
using ComplexityClasses = std::map<std::pair<int, int>, std::vector<size_t>>;

// generated: every distinct tree of the space, counted without materializing any (unknown
// beyond options.count_budget).
SparseAutoStage CountGenerated(BigSpace& space, const SparseAutoOptions& options);

// Stage 1: the trees whose temporaries have order <= the memory-depth bound (applied while
// generating), counted by (loop depth, memory depth) into `depths`; their classes are counted
// up to options.stage1_classes_limit trees.
SparseAutoStage Stage1MemoryDepth(BigSpace& space, const SparseAutoOptions& options,
                                  std::vector<BigSpace::DepthCount>* depths);

// Stage 2: the Pareto-minimal (loop depth, memory depth) pairs of stage 1; their trees are
// materialized and grouped into `classes`.
SparseAutoStage Stage2DepthPoset(BigSpace& space, const std::vector<BigSpace::DepthCount>& depths,
                                 ComplexityClasses* classes);

// Stage 3: classes that another class dominates over the region (Z3) are dropped; the trees of
// the others become result->survivors, followed by TACO's linear default when it is not among
// them (stages 4 and 5 weigh it too).
SparseAutoStage Stage3Smt(BigSpace& space, Region& region, ComplexityClasses& classes,
                          SparseAutoResult* result);

// Stage 4: the survivors' time and memory at the concrete `point` (values of the cost
// variables); those of minimum time among the ones whose temporaries fit in half of the
// last-level cache are marked stage4 (without any that fits, least memory first).
SparseAutoStage Stage4TimeMemory(const std::vector<long double>& point,
                                 const SparseAutoOptions& options, SparseAutoResult* result);

// Stage 5: the cache tie-break; sorts the survivors best first and chooses the first.
// `index_size`: every index's concrete size.
SparseAutoStage Stage5Cache(const Expression& expression,
                            const std::map<std::string, long double>& index_size,
                            SparseAutoResult* result);

}  // namespace sparsetune::sparseauto_internal
