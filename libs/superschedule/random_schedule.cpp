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
  if (!(options.allow_serial && rng() % 8 == 0)) {
    s.parallel = s.root.loops[rng() % s.root.loops.size()];
    s.chunk = int64_t(1) << Uniform(rng, 0, 8);
    s.threads = static_cast<int>(Uniform(rng, 0, options.max_threads));
    s.partition = rng() % 2 ? Partition::kBalanced : Partition::kDynamic;
  }
  // Any count of partial sums, not only powers of two, so remainders are exercised.
  static const int kUnrolls[] = {1, 2, 3, 4, 8};
  s.unroll = kUnrolls[rng() % 5];
  s.narrow_coordinates = rng() % 2 == 0;
  return s;
}

}  // namespace sparsetune
