// Enumeration of the space (Algorithm 1 of the paper): memoized sub-problems, the loop orders
// that respect the sparse operand's level order, and the splits (fission with a temporary,
// fused or not) between sub-problems.

#include <algorithm>

#include "base/errors.hpp"
#include "sparseauto/space_internal.hpp"

namespace sparsetune::sparseauto_internal {

int PolyTable::Intern(const Polynomial& p) {
  auto it = ids_.find(p);
  if (it != ids_.end()) return it->second;
  polys_.push_back(p);
  const int id = static_cast<int>(polys_.size()) - 1;
  ids_.emplace(p, id);
  return id;
}

int PolyTable::Add(int a, int b) {
  if (a > b) std::swap(a, b);
  if (a == 0) return b;
  const uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
  auto it = add_.find(key);
  if (it != add_.end()) return it->second;
  const int id = Intern(polys_[a] + polys_[b]);
  add_.emplace(key, id);
  return id;
}

int PolyTable::Mul(int a, int b) {
  if (a > b) std::swap(a, b);
  const uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
  auto it = mul_.find(key);
  if (it != mul_.end()) return it->second;
  const int id = Intern(polys_[a] * polys_[b]);
  mul_.emplace(key, id);
  return id;
}

Subproblems::Subproblems(const Expression& expression, int max_memory_depth)
    : e_(expression), vars_(MakeCostVariables(expression)), max_memory_depth_(max_memory_depth) {
  if (e_.indices.size() > 15) {
    throw InputError("the expression has " + std::to_string(e_.indices.size()) +
                     " indices; SparseAuto's enumeration handles at most 15");
  }
  num_inputs_ = static_cast<int>(e_.tensors.size()) - 1;
  if (num_inputs_ > 6) {
    throw InputError("the expression has " + std::to_string(num_inputs_) +
                     " inputs; SparseAuto's enumeration handles at most 6");
  }
  Problem p;
  p.lhs = MakeOperand(0, false, IndicesOf(0));
  for (int t = 1; t <= num_inputs_; ++t) {
    p.factors.push_back(MakeOperand(1u << (t - 1), false, IndicesOf(t)));
  }
  root_ = Intern(std::move(p));
}

std::vector<int8_t> Subproblems::IndicesOf(int tensor) const {
  std::vector<int8_t> out;
  for (const auto& index : e_.tensors[tensor].indices) out.push_back(int8_t(e_.IndexId(index)));
  return out;
}

Operand Subproblems::MakeOperand(uint32_t mask, bool temp, std::vector<int8_t> indices) {
  Operand o;
  o.mask = mask;
  o.temp = temp;
  o.indices = std::move(indices);
  for (int8_t x : o.indices) o.set |= 1u << x;
  return o;
}

Operand Subproblems::Strip(const Operand& o, IndexSet fused) {
  std::vector<int8_t> kept;
  for (int8_t x : o.indices) {
    if (!(fused & (1u << x))) kept.push_back(x);
  }
  return MakeOperand(o.mask, o.temp, kept);
}

bool Subproblems::IsSparseInput(const Operand& o) const {
  return !o.temp && o.mask == (1u << (e_.sparse - 1));
}

int Subproblems::Intern(Problem p) {
  std::sort(p.factors.begin(), p.factors.end(),
            [](const Operand& a, const Operand& b) { return a.mask < b.mask; });
  std::string key;
  auto put = [&](const Operand& o) {
    key += std::to_string(o.mask) + (o.temp ? "t" : "i") + "(";
    for (int8_t x : o.indices) key += char('a' + x);
    key += ")";
  };
  put(p.lhs);
  key += "=";
  for (const auto& f : p.factors) put(f);
  auto it = problem_ids_.find(key);
  if (it != problem_ids_.end()) return it->second;

  p.key = key;
  p.all = p.lhs.set;
  for (size_t k = 0; k < p.factors.size(); ++k) {
    p.all |= p.factors[k].set;
    if (IsSparseInput(p.factors[k])) {
      p.sparse = static_cast<int>(k);
      p.chain_sparse = p.factors[k].indices;
    }
  }
  if (!p.lhs.temp && p.lhs.mask == 0 && e_.sparse_output_prefix > 0) {
    const auto& out = e_.tensors[0].indices;
    for (int m = 0; m < e_.sparse_output_prefix; ++m) {
      const int x = e_.IndexId(out[m]);
      if (p.lhs.set & (1u << x)) p.chain_output.push_back(int8_t(x));
    }
  }
  auto entry = std::make_unique<Entry>();
  entry->problem = std::move(p);
  problems_.push_back(std::move(entry));
  const int id = static_cast<int>(problems_.size()) - 1;
  problem_ids_.emplace(key, id);
  return id;
}

// May index x be looped next, once the indices in `placed` enclose it? The sparse operand's
// remaining modes are looped in storage order; a sparse output's remaining leading indices
// come first, in order (its values are stored under the sparse operand's levels).
bool Subproblems::CanPlace(const Problem& q, int x, IndexSet placed) {
  for (const auto* chain : {&q.chain_sparse, &q.chain_output}) {
    if (std::find(chain->begin(), chain->end(), int8_t(x)) == chain->end()) continue;
    for (int8_t y : *chain) {
      if (y == x) break;
      if (!(placed & (1u << y))) return false;
    }
  }
  if (!q.chain_output.empty() && std::find(q.chain_output.begin(), q.chain_output.end(),
                                           int8_t(x)) == q.chain_output.end()) {
    for (int8_t y : q.chain_output) {
      if (!(placed & (1u << y))) return false;
    }
  }
  return true;
}

void Subproblems::ForEachOrder(const Problem& q,
                               const std::function<void(const std::vector<int8_t>&)>& f) {
  std::vector<int8_t> order;
  std::function<void(IndexSet)> rec = [&](IndexSet placed) {
    if (placed == q.all) {
      f(order);
      return;
    }
    for (int x = 0; x < 16; ++x) {
      if (!(q.all & (1u << x)) || (placed & (1u << x)) || !CanPlace(q, x, placed)) continue;
      order.push_back(int8_t(x));
      rec(placed | (1u << x));
      order.pop_back();
    }
  };
  rec(0);
}

// Every fused prefix F of a split (Algorithm 1): F is the longest common prefix of the
// producer's and the consumer's loop orders for some valid loop order of the problem; an
// empty F is an unfused fission.
void Subproblems::ForEachFused(
    const Problem& q, IndexSet prod, IndexSet cons,
    const std::function<void(const std::vector<int8_t>&, IndexSet)>& f) {
  const IndexSet common = prod & cons;
  std::vector<int8_t> fused;
  std::function<void(IndexSet)> rec = [&](IndexSet placed) {
    const IndexSet rp = prod & ~placed, rc = cons & ~placed;
    // Both sides keep a loop of their own: a side without loops multiplies values that the
    // fused loops already fix, which only adds iterations (merging it into the other side
    // gives a tree with fewer iterations and no more memory, which the space contains).
    bool longest = false;
    for (int x = 0; x < 16 && rp != 0 && rc != 0 && !longest; ++x) {
      if (((rp ^ rc) & (1u << x)) && CanPlace(q, x, placed)) longest = true;
    }
    if (longest) f(fused, placed);
    for (int x = 0; x < 16; ++x) {
      if (!(common & (1u << x)) || (placed & (1u << x)) || !CanPlace(q, x, placed)) continue;
      fused.push_back(int8_t(x));
      rec(placed | (1u << x));
      fused.pop_back();
    }
  };
  rec(0);
}

// The two sub-problems of splitting q by producer factor set `pset` under fused loops.
Split Subproblems::MakeSplit(const Problem& q, uint32_t pset, IndexSet fused_set) {
  IndexSet prod = 0, cons = q.lhs.set;
  uint32_t temp_mask = 0;
  for (size_t k = 0; k < q.factors.size(); ++k) {
    if (pset & (1u << k)) {
      prod |= q.factors[k].set;
      temp_mask |= q.factors[k].mask;
    } else {
      cons |= q.factors[k].set;
    }
  }
  Split s;
  s.shared = prod & cons & ~fused_set;
  s.temp_mask = temp_mask;
  std::vector<int8_t> shared;
  for (int x = 0; x < 16; ++x) {
    if (s.shared & (1u << x)) shared.push_back(int8_t(x));
  }
  const Operand temp = MakeOperand(temp_mask, true, shared);
  Problem p, c;
  p.lhs = temp;
  c.lhs = Strip(q.lhs, fused_set);
  for (size_t k = 0; k < q.factors.size(); ++k) {
    ((pset & (1u << k)) ? p : c).factors.push_back(Strip(q.factors[k], fused_set));
  }
  c.factors.push_back(temp);
  s.producer = Intern(std::move(p));
  s.consumer = Intern(std::move(c));
  return s;
}

// Producer factor sets worth splitting off: at least one factor, not all of them, and not a
// lone temporary (copying a temporary changes nothing and would recurse forever).
std::vector<uint32_t> Subproblems::ProducerSets(const Problem& q) {
  std::vector<uint32_t> sets;
  const int nf = static_cast<int>(q.factors.size());
  if (nf <= 2) return sets;
  for (uint32_t pset = 1; pset + 1 < (1u << nf); ++pset) {
    if (Count(pset) == 1 && q.factors[__builtin_ctz(pset)].temp) continue;
    sets.push_back(pset);
  }
  return sets;
}

int Subproblems::FactorPosition(const Problem& q, uint32_t mask, bool temp) {
  for (size_t k = 0; k < q.factors.size(); ++k) {
    if (q.factors[k].mask == mask && q.factors[k].temp == temp) return static_cast<int>(k);
  }
  return -1;
}

int Subproblems::ChildPosition(const Problem& q, int k, const Problem& child) {
  return FactorPosition(child, q.factors[k].mask, q.factors[k].temp);
}

int Subproblems::LoopVariable(const Problem& q, int x) const {
  if (q.sparse >= 0 && vars_.fiber[x] >= 0 && (q.factors[q.sparse].set & (1u << x))) {
    return vars_.fiber[x];
  }
  return vars_.dim[x];
}

int Subproblems::LoopProduct(const Problem& q, IndexSet loops) {
  std::vector<int> v;
  for (int x = 0; x < 16; ++x) {
    if (loops & (1u << x)) v.push_back(LoopVariable(q, x));
  }
  return polys_.Intern(Polynomial::Product(v));
}

int Subproblems::TempSize(IndexSet shared) {
  if (shared == 0) return 0;  // a scalar lives in a register: no auxiliary memory
  std::vector<int> v;
  for (int x = 0; x < 16; ++x) {
    if (shared & (1u << x)) v.push_back(vars_.dim[x]);
  }
  return polys_.Intern(Polynomial::Product(v));
}

// Order bit of a two-index set along a path: fused loops first, then the child's order.
uint32_t Subproblems::ComposeBit(const std::vector<int8_t>& fused, IndexSet set,
                                 uint32_t child_bit) {
  if (Count(set) < 2) return 0;
  const int a = __builtin_ctz(set), b = 31 - __builtin_clz(set);
  int ia = -1, ib = -1;
  for (size_t k = 0; k < fused.size(); ++k) {
    if (fused[k] == a) ia = static_cast<int>(k);
    if (fused[k] == b) ib = static_cast<int>(k);
  }
  if (ia >= 0 && ib >= 0) return ia > ib ? 1 : 0;
  if (ia >= 0) return 0;
  if (ib >= 0) return 1;
  return child_bit;
}

uint32_t Subproblems::LeafSig(const Problem& q, const std::vector<int8_t>& order) {
  uint32_t sig = q.lhs.temp ? ComposeBit(order, q.lhs.set, 0) : 0;
  for (size_t k = 0; k < q.factors.size(); ++k) {
    if (q.factors[k].temp) sig |= ComposeBit(order, q.factors[k].set, 0) << (1 + k);
  }
  return sig;
}

uint32_t Subproblems::ComposeSig(const Problem& q, const SplitCase& sc,
                                 const std::vector<int8_t>& fused, uint32_t psig, uint32_t csig) {
  uint32_t sig = q.lhs.temp ? ComposeBit(fused, q.lhs.set, csig & 1) : 0;
  for (size_t k = 0; k < q.factors.size(); ++k) {
    if (!q.factors[k].temp) continue;
    const uint32_t inner = (((sc.pset & (1u << k)) ? psig : csig) >> (1 + sc.child_pos[k])) & 1;
    sig |= ComposeBit(fused, q.factors[k].set, inner) << (1 + k);
  }
  return sig;
}

// Every split of problem `id` whose temporary has at most `max_shared` indices, one case per
// (producer set, fused set) so that each sub-problem pair is made once.
std::vector<SplitCase> Subproblems::EnumerateSplits(int id, int max_shared) {
  const Problem q = problems_[id]->problem;
  const size_t nf = q.factors.size();
  std::vector<SplitCase> cases;
  for (uint32_t pset : ProducerSets(q)) {
    IndexSet prod = 0, cons = q.lhs.set;
    for (size_t k = 0; k < nf; ++k) ((pset & (1u << k)) ? prod : cons) |= q.factors[k].set;
    std::map<IndexSet, std::vector<std::vector<int8_t>>> by_set;
    ForEachFused(q, prod, cons, [&](const std::vector<int8_t>& fused, IndexSet fused_set) {
      by_set[fused_set].push_back(fused);
    });
    for (auto& [fused_set, orders] : by_set) {
      SplitCase sc;
      sc.pset = pset;
      sc.fused_set = fused_set;
      sc.shared = prod & cons & ~fused_set;
      if (Count(sc.shared) > max_shared) continue;
      sc.split = MakeSplit(q, pset, fused_set);
      const Problem& pp = problems_[sc.split.producer]->problem;
      const Problem& cp = problems_[sc.split.consumer]->problem;
      sc.temp_pos = FactorPosition(cp, sc.split.temp_mask, true);
      for (size_t k = 0; k < nf; ++k) {
        sc.child_pos.push_back(ChildPosition(q, int(k), (pset & (1u << k)) ? pp : cp));
      }
      sc.fused_time = LoopProduct(q, fused_set);
      sc.temp_size = TempSize(sc.shared);
      sc.orders = std::move(orders);
      {
        std::map<uint64_t, size_t> group_of;
        for (const auto& order : sc.orders) {
          uint64_t key = 0;
          for (size_t slot = 0; slot <= nf; ++slot) {
            const IndexSet set = slot == 0
                                     ? (q.lhs.temp ? q.lhs.set : 0)
                                     : (q.factors[slot - 1].temp ? q.factors[slot - 1].set : 0);
            const uint32_t zero = ComposeBit(order, set, 0), one = ComposeBit(order, set, 1);
            key |= uint64_t(zero == one ? zero : 2) << (2 * slot);
          }
          auto it = group_of.find(key);
          if (it == group_of.end()) {
            group_of.emplace(key, sc.bit_groups.size());
            sc.bit_groups.emplace_back(order, 1);
          } else {
            sc.bit_groups[it->second].second += 1;
          }
        }
      }
      cases.push_back(std::move(sc));
    }
  }
  return cases;
}

const std::vector<SplitCase>& Subproblems::AllSplits(int id) {
  Entry& d = *problems_[id];
  if (!d.has_all_splits) {
    d.all_splits = EnumerateSplits(id, 16);
    d.has_all_splits = true;
  }
  return d.all_splits;
}

const std::vector<const SplitCase*>& Subproblems::Stage1Splits(int id) {
  Entry& d = *problems_[id];
  if (!d.has_stage1_splits) {
    if (!d.has_all_splits) {
      std::vector<SplitCase> cases = EnumerateSplits(id, max_memory_depth_);
      Entry& fresh = *problems_[id];
      fresh.own_stage1_splits = std::move(cases);
      for (const SplitCase& sc : fresh.own_stage1_splits) fresh.stage1_splits.push_back(&sc);
    } else {
      for (const SplitCase& sc : d.all_splits) {
        if (Count(sc.shared) <= max_memory_depth_) d.stage1_splits.push_back(&sc);
      }
    }
    problems_[id]->has_stage1_splits = true;
  }
  return problems_[id]->stage1_splits;
}

}  // namespace sparsetune::sparseauto_internal
