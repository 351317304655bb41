// Counting the whole space ("generated"): every tree, whatever the order of its temporaries,
// counted by recursion over the memoized sub-problems without materializing any tree.

#include "base/errors.hpp"
#include "sparseauto/space_internal.hpp"

namespace sparsetune::sparseauto_internal {

namespace {

// Thrown when counting the whole space would take more work than allowed.
struct CountBudgetExceeded {};

// Code of the indices of `set` in `order`, and how many there are.
uint64_t OrderCode(const std::vector<int8_t>& order, IndexSet set, int* length) {
  uint64_t code = 0;
  int n = 0;
  for (int8_t x : order) {
    if (set & (1u << x)) code |= uint64_t(x + 1) << (4 * n++);
  }
  if (length) *length = n;
  return code;
}

}  // namespace

size_t SpaceCounter::OrderSigHash::operator()(const OrderSig& s) const {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t v : s.order) h = (h ^ v) * 1099511628211ull;
  return static_cast<size_t>(h);
}

SpaceCounter::Data& SpaceCounter::DataOf(int id) {
  if (data_.size() <= static_cast<size_t>(id)) data_.resize(static_cast<size_t>(id) + 1);
  if (!data_[id]) data_[id] = std::make_unique<Data>();
  return *data_[id];
}

void SpaceCounter::Charge(size_t work) {
  if (work > budget_) throw CountBudgetExceeded{};
  budget_ -= work;
}

std::optional<u128> SpaceCounter::CountAll(int max_temporary_order, size_t budget) {
  budget_ = budget;
  try {
    u128 total = 0;
    for (const auto& [sig, count] : Counts(sub_.root(), max_temporary_order)) {
      total = SaturatingAdd(total, count);
    }
    return total;
  } catch (const CountBudgetExceeded&) {
    for (auto& data : data_) {
      if (data) data->counting.clear();
    }
    return std::nullopt;
  }
}

// Trees of problem `id` whose temporaries have order <= max_order, per order signature.
const SpaceCounter::SigCounts& SpaceCounter::Counts(int id, int max_order) {
  Data& d = DataOf(id);
  auto done = d.counts.find(max_order);
  if (done != d.counts.end()) return done->second;
  if (d.counting.count(max_order))
    throw InternalError("SparseAuto: cyclic sub-problem " + sub_.problem(id).key);
  d.counting.insert(max_order);
  const Problem q = sub_.problem(id);
  SigCounts counts;
  const size_t nf = q.factors.size();
  sub_.ForEachOrder(q, [&](const std::vector<int8_t>& order) {
    Charge(1);
    OrderSig sig;
    if (q.lhs.temp) sig.order[0] = OrderCode(order, q.lhs.set, nullptr);
    for (size_t k = 0; k < nf; ++k) {
      if (q.factors[k].temp) sig.order[1 + k] = OrderCode(order, q.factors[k].set, nullptr);
    }
    u128& n = counts[sig];
    n = SaturatingAdd(n, 1);
  });
  const std::vector<SplitCase>& splits = sub_.AllSplits(id);
  Charge(splits.size());
  for (const SplitCase& sc : splits) {
    if (Count(sc.shared) > max_order) continue;
    Charge(sc.orders.size());
    // Finished problems never change and live behind stable pointers.
    const auto& pc = Counts(sc.split.producer, max_order);
    const auto& cc = Counts(sc.split.consumer, max_order);
    // Per slot of q: where the rest of its order comes from (>= 0: consumer slot, < 0:
    // producer slot -from-1).
    int from[9] = {0};
    for (size_t k = 0; k < nf; ++k) {
      if (!q.factors[k].temp) continue;
      const bool in_p = sc.pset & (1u << k);
      from[1 + k] = in_p ? -(1 + sc.child_pos[k]) - 1 : 1 + sc.child_pos[k];
    }
    // Fused orders that give the same prefixes count together.
    std::map<std::pair<std::array<uint64_t, 9>, std::array<int, 9>>, u128> groups;
    for (const auto& fused : sc.orders) {
      std::array<uint64_t, 9> prefix{};
      std::array<int, 9> length{};
      if (q.lhs.temp) prefix[0] = OrderCode(fused, q.lhs.set, &length[0]);
      for (size_t k = 0; k < nf; ++k) {
        if (q.factors[k].temp) prefix[1 + k] = OrderCode(fused, q.factors[k].set, &length[1 + k]);
      }
      u128& n = groups[{prefix, length}];
      n = SaturatingAdd(n, 1);
    }
    // Producers by the order in which they write the temporary, which the consumer must
    // read in the same order.
    std::unordered_map<uint64_t, std::vector<std::pair<const OrderSig*, u128>>> by_write;
    for (const auto& [psig, pcount] : pc) by_write[psig.order[0]].emplace_back(&psig, pcount);
    for (const auto& [group, multiplicity] : groups) {
      const auto& [prefix, length] = group;
      for (const auto& [csig, ccount] : cc) {
        auto match = by_write.find(csig.order[1 + sc.temp_pos]);
        Charge(1 + (match == by_write.end() ? 0 : match->second.size()));
        if (match == by_write.end()) continue;
        for (const auto& [psig_ptr, pcount] : match->second) {
          const OrderSig& psig = *psig_ptr;
          OrderSig sig;
          sig.order = prefix;
          for (size_t slot = 0; slot <= nf; ++slot) {
            if (slot == 0 ? !q.lhs.temp : !q.factors[slot - 1].temp) continue;
            const uint64_t inner =
                from[slot] >= 0 ? csig.order[from[slot]] : psig.order[-from[slot] - 1];
            sig.order[slot] |= inner << (4 * length[slot]);
          }
          u128& n = counts[sig];
          n = SaturatingAdd(n, SaturatingMul(multiplicity, SaturatingMul(pcount, ccount)));
        }
      }
    }
  }
  Data& finished = DataOf(id);
  finished.counting.erase(max_order);
  return finished.counts[max_order] = std::move(counts);
}

}  // namespace sparsetune::sparseauto_internal
