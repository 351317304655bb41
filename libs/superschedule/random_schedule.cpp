#include "superschedule/random_schedule.hpp"

#include "ir/loop_nest.hpp"

#include <algorithm>
#include <vector>

namespace sparsetune {

namespace {
int64_t Uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // inclusive, portable
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}
}  // namespace

Schedule SampleGenericSchedule(const Expression& e, const std::map<std::string, int64_t>& sizes,
                               std::mt19937_64& rng, const GenericSampleOptions& options) {
  Schedule s;
  std::vector<LoopVar> vars;
  for (const auto& index : e.indices) {
    const int64_t dim = sizes.at(index);
    const bool split = dim > 1 && (rng() % 1000) < uint64_t(options.split_probability * 1000);
    if (split) {
      s.splits[index] = Uniform(rng, 2, std::max<int64_t>(2, std::min(options.max_split, dim)));
      vars.push_back({SplitVarName(index, SplitPart::kOuter), index, SplitPart::kOuter});
      vars.push_back({SplitVarName(index, SplitPart::kInner), index, SplitPart::kInner});
    } else {
      vars.push_back({index, index, SplitPart::kWhole});
    }
  }
  std::shuffle(vars.begin(), vars.end(), rng);
  // Outer parts before inner parts: swap any inverted pair.
  for (size_t a = 0; a < vars.size(); ++a) {
    for (size_t b = a + 1; b < vars.size(); ++b) {
      if (vars[a].index == vars[b].index && vars[a].part == SplitPart::kInner)
        std::swap(vars[a], vars[b]);
    }
  }
  // A sparse output needs the levels of its sparse indices first: reorder the sparse operand's
  // variables among the positions they hold.
  if (e.sparse_output_prefix > 0) {
    std::vector<size_t> positions;
    std::vector<LoopVar> prefix_vars, other_vars;
    for (size_t k = 0; k < vars.size(); ++k) {
      const auto& modes = e.sparse_input().indices;
      auto mode = std::find(modes.begin(), modes.end(), vars[k].index);
      if (mode == modes.end()) continue;
      positions.push_back(k);
      (mode - modes.begin() < e.sparse_output_prefix ? prefix_vars : other_vars).push_back(vars[k]);
    }
    prefix_vars.insert(prefix_vars.end(), other_vars.begin(), other_vars.end());
    for (size_t k = 0; k < positions.size(); ++k) vars[positions[k]] = prefix_vars[k];
  }
  for (const auto& v : vars) {
    s.root.loops.push_back(v.name);
    if (e.IsSparseIndex(v.index)) {
      s.format.emplace_back(v.name, (rng() % 2) ? LevelKind::kDense : LevelKind::kCompressed);
    }
  }
  std::vector<std::string> sliced;
  // A sparse loop directly above the inner part of another sparse index may be sliced (its
  // lanes): never for a sparse output, which a sliced format cannot hold.
  if (e.sparse_output_prefix == 0) {
    for (size_t k = 0; k + 1 < vars.size(); ++k) {
      const LoopVar& v = vars[k];
      const LoopVar& lanes = vars[k + 1];
      if (e.IsSparseIndex(v.index) && e.IsSparseIndex(lanes.index) && lanes.index != v.index &&
          lanes.part == SplitPart::kInner && rng() % 3 == 0) {
        sliced.push_back(v.name);
        ++k;
      }
    }
  }
  std::vector<std::string> parallel_candidates;  // a sliced level's loop cannot be parallel
  for (const auto& loop : s.root.loops) {
    if (std::find(sliced.begin(), sliced.end(), loop) == sliced.end())
      parallel_candidates.push_back(loop);
  }
  if (!(options.allow_serial && rng() % 8 == 0)) {
    s.parallel = parallel_candidates[rng() % parallel_candidates.size()];
    s.chunk = int64_t(1) << Uniform(rng, 0, 8);
    s.threads = static_cast<int>(Uniform(rng, 0, options.max_threads));
    s.partition = rng() % 2 ? Partition::kBalanced : Partition::kDynamic;
  }
  // Slice only where the lanes can define the sliced index: not when a reduction needs it
  // after the lanes' loop (lowering says so).
  for (const auto& name : sliced) {
    Schedule trial = s;
    for (size_t l = 0; l < trial.format.size(); ++l) {
      if (trial.format[l].first != name) continue;
      trial.format[l].second = LevelKind::kSliced;
      trial.format[l + 1].second = LevelKind::kDense;
    }
    if (Lower(e, trial).nest) s = trial;
  }
  // Any count of partial sums, not only powers of two, so remainders are exercised.
  static const int kUnrolls[] = {1, 2, 3, 4, 8};
  s.unroll = kUnrolls[rng() % 5];
  s.narrow_coordinates = rng() % 2 == 0;
  for (size_t t = 1; t < e.tensors.size(); ++t) {
    if (static_cast<int>(t) != e.sparse && e.tensors[t].indices.size() == 2 && rng() % 3 == 0)
      s.transposed.push_back(e.tensors[t].name);
  }
  std::sort(s.transposed.begin(), s.transposed.end());
  return s;
}

}  // namespace sparsetune
