// Stage 1 (temporaries of order <= 2, applied while generating), summarized without
// materializing trees: how many trees have each (loop depth, memory depth), and their distinct
// (time, memory) classes.

#include <algorithm>

#include "base/errors.hpp"
#include "sparseauto/space_internal.hpp"

namespace sparsetune::sparseauto_internal {

Stage1Summary::Data& Stage1Summary::DataOf(int id) {
  if (data_.size() <= static_cast<size_t>(id)) data_.resize(static_cast<size_t>(id) + 1);
  if (!data_[id]) data_[id] = std::make_unique<Data>();
  return *data_[id];
}

// How many Stage-1 trees have each (loop depth, memory depth), per signature.
const Stage1Summary::DepthCounts& Stage1Summary::Depths(int id) {
  Data& d = DataOf(id);
  if (d.summarized) return d.depths;
  if (d.summarizing) throw InternalError("SparseAuto: cyclic sub-problem " + sub_.problem(id).key);
  d.summarizing = true;
  const Problem q = sub_.problem(id);
  DepthCounts out;
  const int leaf = Count(q.all) * 256;
  sub_.ForEachOrder(q, [&](const std::vector<int8_t>& order) {
    u128& n = out[Subproblems::LeafSig(q, order)][leaf];
    n = SaturatingAdd(n, 1);
  });
  for (const SplitCase* split : sub_.Stage1Splits(id)) {
    const SplitCase& sc = *split;
    const auto& pp = Depths(sc.split.producer);
    const auto& cp = Depths(sc.split.consumer);
    const int fl = Count(sc.fused_set), sm = Count(sc.shared);
    for (const auto& [fused, multiplicity] : sc.bit_groups) {
      for (const auto& [csig, cmap] : cp) {
        const uint32_t want = (csig >> (1 + sc.temp_pos)) & 1;
        for (const auto& [psig, pmap] : pp) {
          if ((psig & 1) != want) continue;
          auto& target = out[Subproblems::ComposeSig(q, sc, fused, psig, csig)];
          for (const auto& [ck, cn] : cmap) {
            for (const auto& [pk, pn] : pmap) {
              const int l = fl + std::max(pk / 256, ck / 256);
              const int m = std::max(sm, std::max(pk % 256, ck % 256));
              u128& n = target[l * 256 + m];
              n = SaturatingAdd(n, SaturatingMul(multiplicity, SaturatingMul(pn, cn)));
            }
          }
        }
      }
    }
  }
  Data& done = DataOf(id);
  done.depths = std::move(out);
  done.summarized = true;
  done.summarizing = false;
  return done.depths;
}

// The distinct (time, memory) pairs of the Stage-1 trees, per signature.
bool Stage1Summary::ComputeClasses(int id, size_t& budget) {
  Data& d = DataOf(id);
  if (d.classified) return true;
  if (d.classifying) throw InternalError("SparseAuto: cyclic sub-problem " + sub_.problem(id).key);
  d.classifying = true;
  const Problem q = sub_.problem(id);
  PolyTable& polys = sub_.polys();
  Classes out;
  const uint64_t leaf = uint64_t(uint32_t(sub_.LoopProduct(q, q.all))) << 32;
  sub_.ForEachOrder(
      q, [&](const std::vector<int8_t>& order) { out[Subproblems::LeafSig(q, order)].insert(leaf); });
  for (const SplitCase* split : sub_.Stage1Splits(id)) {
    const SplitCase& sc = *split;
    if (!ComputeClasses(sc.split.producer, budget) || !ComputeClasses(sc.split.consumer, budget)) {
      DataOf(id).classifying = false;
      return false;
    }
    const auto& pp = DataOf(sc.split.producer).classes;
    const auto& cp = DataOf(sc.split.consumer).classes;
    for (const auto& [fused, multiplicity] : sc.bit_groups) {
      for (const auto& [csig, cset] : cp) {
        const uint32_t want = (csig >> (1 + sc.temp_pos)) & 1;
        for (const auto& [psig, pset] : pp) {
          if ((psig & 1) != want) continue;
          const size_t work = cset.size() * pset.size();
          if (work > budget) {
            DataOf(id).classifying = false;
            return false;
          }
          budget -= work;
          auto& target = out[Subproblems::ComposeSig(q, sc, fused, psig, csig)];
          for (uint64_t ck : cset) {
            for (uint64_t pk : pset) {
              const int t = polys.Mul(sc.fused_time, polys.Add(int(pk >> 32), int(ck >> 32)));
              const int m =
                  polys.Add(sc.temp_size, polys.Add(int(pk & 0xFFFFFFFF), int(ck & 0xFFFFFFFF)));
              target.insert((uint64_t(uint32_t(t)) << 32) | uint32_t(m));
            }
          }
        }
      }
    }
  }
  Data& done = DataOf(id);
  done.classes = std::move(out);
  done.classified = true;
  done.classifying = false;
  return true;
}

}  // namespace sparsetune::sparseauto_internal
