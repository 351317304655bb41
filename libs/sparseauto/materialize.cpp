// Materializing the Stage-1 trees within depth bounds (the Pareto front of stage 2), with their
// depths, signatures and interned time and memory polynomials.

#include <algorithm>

#include "base/errors.hpp"
#include "sparseauto/space_internal.hpp"

namespace sparsetune::sparseauto_internal {

namespace {

uint64_t PackLoops(const std::vector<int8_t>& loops) {
  uint64_t packed = 0;
  for (size_t k = 0; k < loops.size(); ++k) packed |= uint64_t(loops[k]) << (4 * k);
  return packed;
}

}  // namespace

TreeBuilder::Built& TreeBuilder::BuiltOf(int id) {
  if (built_.size() <= static_cast<size_t>(id)) built_.resize(static_cast<size_t>(id) + 1);
  if (!built_[id]) built_[id] = std::make_unique<Built>();
  return *built_[id];
}

std::vector<size_t> TreeBuilder::Materialize(int max_loop_depth, int max_memory_depth,
                                             size_t limit) {
  // Signatures of materialized trees hold one bit per temporary: two indices at most.
  if (std::min(max_memory_depth, sub_.max_memory_depth()) > 2) {
    throw InternalError("SparseAuto materializes trees with temporaries of order <= 2 only");
  }
  limit_ = nodes_.size() + limit;
  const std::vector<int32_t> roots = Build(sub_.root(), max_loop_depth, max_memory_depth);
  std::vector<size_t> out;
  for (int32_t r : roots) {
    auto it = tree_of_.find(r);
    if (it == tree_of_.end()) {
      trees_.push_back(r);
      it = tree_of_.emplace(r, trees_.size() - 1).first;
    }
    out.push_back(it->second);
  }
  return out;
}

// Materializes the Stage-1 trees with loop depth <= max_loop and memory depth <= max_memory.
const std::vector<int32_t>& TreeBuilder::Build(int id, int max_loop, int max_memory) {
  const int bounds = max_loop * 256 + max_memory;
  {
    Built& built = BuiltOf(id);
    auto it = built.find(bounds);
    if (it != built.end()) return it->second;
  }
  const Problem q = sub_.problem(id);
  PolyTable& polys = sub_.polys();
  std::vector<int32_t> out;
  auto add = [&](const Node& n) {
    if (nodes_.size() >= limit_) {
      throw InputError("the SparseAuto space of " + sub_.expression().text +
                       " has too many trees within the depth bounds to materialize");
    }
    nodes_.push_back(n);
    out.push_back(static_cast<int32_t>(nodes_.size()) - 1);
  };
  if (Count(q.all) <= max_loop) {
    const int leaf_time = sub_.LoopProduct(q, q.all);
    sub_.ForEachOrder(q, [&](const std::vector<int8_t>& order) {
      Node n;
      n.problem = id;
      n.loops = PackLoops(order);
      n.num_loops = uint8_t(order.size());
      n.loop_depth = uint8_t(order.size());
      n.time = leaf_time;
      n.sig = Subproblems::LeafSig(q, order);
      add(n);
    });
  }
  for (const SplitCase* split : sub_.Stage1Splits(id)) {
    const SplitCase& sc = *split;
    const int fl = Count(sc.fused_set);
    if (fl > max_loop || Count(sc.shared) > max_memory) continue;
    const std::vector<int32_t>& pn = Build(sc.split.producer, max_loop - fl, max_memory);
    const std::vector<int32_t>& cn = Build(sc.split.consumer, max_loop - fl, max_memory);
    std::vector<int32_t> by_bit[2];
    for (int32_t p : pn) by_bit[nodes_[p].sig & 1].push_back(p);
    for (const auto& fused : sc.orders) {
      const uint64_t packed = PackLoops(fused);
      for (int32_t c : cn) {
        const Node cnode = nodes_[c];
        const uint32_t want = (cnode.sig >> (1 + sc.temp_pos)) & 1;
        for (int32_t p : by_bit[want]) {
          const Node pnode = nodes_[p];
          Node n;
          n.problem = id;
          n.producer = p;
          n.consumer = c;
          n.producer_set = sc.pset;
          n.loops = packed;
          n.num_loops = uint8_t(fl);
          n.loop_depth = uint8_t(fl + std::max(pnode.loop_depth, cnode.loop_depth));
          n.memory_depth = uint8_t(
              std::max<int>(Count(sc.shared), std::max(pnode.memory_depth, cnode.memory_depth)));
          n.time = polys.Mul(sc.fused_time, polys.Add(pnode.time, cnode.time));
          n.memory = polys.Add(sc.temp_size, polys.Add(pnode.memory, cnode.memory));
          n.sig = Subproblems::ComposeSig(q, sc, fused, pnode.sig, cnode.sig);
          add(n);
        }
      }
    }
  }
  return BuiltOf(id)[bounds] = std::move(out);
}

}  // namespace sparsetune::sparseauto_internal
