#include "sparseauto/space.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "base/errors.hpp"

namespace sparsetune {

namespace {

using IndexSet = uint32_t;
using u128 = unsigned __int128;

int Count(uint32_t bits) {
  return __builtin_popcount(bits);
}

u128 SaturatingAdd(u128 a, u128 b) {
  const u128 s = a + b;
  return s < a ? ~u128(0) : s;
}

u128 SaturatingMul(u128 a, u128 b) {
  if (a == 0 || b == 0) return 0;
  if (a > ~u128(0) / b) return ~u128(0);
  return a * b;
}

std::string AccessText(const std::string& name, const std::vector<std::string>& indices) {
  if (indices.empty()) return name;
  std::string out = name + "(";
  for (size_t k = 0; k < indices.size(); ++k) out += (k ? "," : "") + indices[k];
  return out + ")";
}

// An operand of a sub-problem: an input of the expression, a temporary or the output, with the
// indices that enclosing fused loops have not fixed yet.
struct Operand {
  uint32_t mask = 0;  // expression inputs it combines: bit t-1 for tensor t; 0 for the output
  bool temp = false;
  std::vector<int8_t> indices;  // tensor order for inputs and the output, ascending for temps
  IndexSet set = 0;
};

// lhs += product of factors, summed over the indices absent from lhs.
struct Problem {
  Operand lhs;
  std::vector<Operand> factors;  // sorted by mask (masks are disjoint)
  IndexSet all = 0;
  int sparse = -1;                   // factor position of the sparse input, when present
  std::vector<int8_t> chain_sparse;  // its remaining modes, to be looped in this order
  std::vector<int8_t> chain_output;  // remaining sparse-output prefix: looped first, in order
  std::string key;
};

// Order of each temporary's indices along the path to the compute that writes (entry 0, the
// left-hand side) or reads it (entry 1 + factor position), 4 bits per index (id + 1), outer
// first in the low bits; 0 for non-temporaries.
struct OrderSig {
  std::array<uint64_t, 9> order{};
  bool operator==(const OrderSig& o) const { return order == o.order; }
};
struct OrderSigHash {
  size_t operator()(const OrderSig& s) const {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t v : s.order) h = (h ^ v) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Thrown when counting the whole space would take more work than allowed.
struct CountBudgetExceeded {};

struct Split {
  int producer = -1, consumer = -1;  // problem ids
  IndexSet shared = 0;               // the temporary's indices
  uint32_t temp_mask = 0;
};

// A split of a problem: a producer factor set and a fused index set, with every valid order
// of the fused loops (each order is a different tree).
struct SplitCase {
  uint32_t pset = 0;
  IndexSet fused_set = 0, shared = 0;
  Split split;
  int temp_pos = 0;            // the temporary's factor position in the consumer
  std::vector<int> child_pos;  // per factor of q: its position in the child it goes to
  int fused_time = 0, temp_size = 0;
  std::vector<std::vector<int8_t>> orders;
  // The orders grouped by how they order each two-index temporary (all that the Stage-1
  // signature sees): a representative order and how many orders share it.
  std::vector<std::pair<std::vector<int8_t>, u128>> bit_groups;
};

struct ProblemData {
  Problem problem;
  // Trees per order signature, by the bound on temporary order they were counted under.
  std::map<int, std::unordered_map<OrderSig, u128, OrderSigHash>> counts;
  std::set<int> counting;
  bool has_all_splits = false, has_stage1_splits = false;
  std::vector<SplitCase> all_splits;            // every split, for the whole-space count
  std::vector<SplitCase> own_stage1_splits;     // Stage-1 splits made without the others
  std::vector<const SplitCase*> stage1_splits;  // the splits within the memory-depth bound
  // Stage-1 summaries per order signature: how many trees have each (loop depth, memory
  // depth), packed as depth * 256 + memory depth; and the distinct (time id, memory id) pairs.
  bool summarizing = false, summarized = false;
  std::map<uint32_t, std::map<int, u128>> depths;
  bool classifying = false, classified = false;
  std::map<uint32_t, std::unordered_set<uint64_t>> classes;
  // Materialized trees within depth bounds, by max loop depth * 256 + max memory depth.
  std::map<int, std::vector<int32_t>> built;
};

// A materialized (sub-)tree. Temporaries here have at most two indices (Stage 1), so the order
// signature is one bit per temporary: whether its two indices are visited in descending id
// order. Bit 0: the left-hand side; bit 1 + p: factor p.
struct Node {
  int32_t problem = -1;
  int32_t producer = -1, consumer = -1;  // -1: a leaf
  uint32_t producer_set = 0;             // factor positions multiplied by the producer
  uint64_t loops = 0;                    // 4 bits per loop, outer first
  uint8_t num_loops = 0;
  uint8_t loop_depth = 0, memory_depth = 0;
  uint32_t sig = 0;
  int32_t time = 0, memory = 0;
};

int LoopAt(const Node& n, int k) {
  return int((n.loops >> (4 * k)) & 0xF);
}

uint64_t PackLoops(const std::vector<int8_t>& loops) {
  uint64_t packed = 0;
  for (size_t k = 0; k < loops.size(); ++k) packed |= uint64_t(loops[k]) << (4 * k);
  return packed;
}

class PolyTable {
 public:
  PolyTable() { Intern(Polynomial()); }
  int Intern(const Polynomial& p) {
    auto it = ids_.find(p);
    if (it != ids_.end()) return it->second;
    polys_.push_back(p);
    const int id = static_cast<int>(polys_.size()) - 1;
    ids_.emplace(p, id);
    return id;
  }
  const Polynomial& Get(int id) const { return polys_[id]; }
  int Add(int a, int b) {
    if (a > b) std::swap(a, b);
    if (a == 0) return b;
    const uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    auto it = add_.find(key);
    if (it != add_.end()) return it->second;
    const int id = Intern(polys_[a] + polys_[b]);
    add_.emplace(key, id);
    return id;
  }
  int Mul(int a, int b) {
    if (a > b) std::swap(a, b);
    const uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    auto it = mul_.find(key);
    if (it != mul_.end()) return it->second;
    const int id = Intern(polys_[a] * polys_[b]);
    mul_.emplace(key, id);
    return id;
  }

 private:
  std::vector<Polynomial> polys_;
  std::unordered_map<Polynomial, int, PolynomialHash> ids_;
  std::unordered_map<uint64_t, int> add_, mul_;
};

}  // namespace

int CostVariables::Find(const std::string& name) const {
  for (int v = 0; v < size(); ++v) {
    if (names[v] == name) return v;
  }
  return -1;
}

CostVariables MakeCostVariables(const Expression& e) {
  CostVariables vars;
  const auto& modes = e.sparse_input().indices;
  vars.dim.assign(e.indices.size(), -1);
  vars.fiber.assign(e.indices.size(), -1);
  vars.root_index = e.IndexId(modes[0]);
  std::vector<int> order;
  for (const auto& mode : modes) order.push_back(e.IndexId(mode));
  std::vector<int> rest;
  for (size_t x = 0; x < e.indices.size(); ++x) {
    if (!e.IsSparseIndex(e.indices[x])) rest.push_back(static_cast<int>(x));
  }
  std::sort(rest.begin(), rest.end(), [&](int a, int b) { return e.indices[a] < e.indices[b]; });
  order.insert(order.end(), rest.begin(), rest.end());
  for (int x : order) {
    const std::string& index = e.indices[x];
    std::string upper = index;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    vars.dim[x] = vars.size();
    vars.names.push_back(index);
    vars.display.push_back(upper);
    vars.is_fiber.push_back(false);
    vars.index_of.push_back(x);
    if (e.IsSparseIndex(index) && index != modes[0]) {
      vars.fiber[x] = vars.size();
      vars.names.push_back(index + "pos");
      vars.display.push_back(index + "pos");
      vars.is_fiber.push_back(true);
      vars.index_of.push_back(x);
    }
  }
  if (vars.size() > kMaxPolyVars) {
    throw InputError("the expression has too many indices for SparseAuto's cost model (at most " +
                     std::to_string(kMaxPolyVars) + " variables)");
  }
  return vars;
}

std::vector<std::pair<std::string, LevelKind>> SparseAutoFormat(const Expression& e) {
  std::vector<std::pair<std::string, LevelKind>> format;
  const auto& modes = e.sparse_input().indices;
  for (size_t m = 0; m < modes.size(); ++m) {
    const bool dense_root = modes.size() == 2 && m == 0;
    format.emplace_back(modes[m], dense_root ? LevelKind::kDense : LevelKind::kCompressed);
  }
  return format;
}

std::string CountText(unsigned __int128 count) {
  if (count == 0) return "0";
  std::string out;
  while (count > 0) {
    out += char('0' + int(count % 10));
    count /= 10;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

struct BigSpace::Impl {
  Expression e;
  CostVariables vars;
  int max_memory_depth = 2;
  int num_inputs = 0;
  std::vector<std::unique_ptr<ProblemData>> problems;  // stable addresses
  std::unordered_map<std::string, int> problem_ids;
  std::vector<Node> nodes;
  PolyTable polys;
  int root = -1;
  size_t limit = 0;
  size_t count_budget = 0;     // combination steps the whole-space count may still take
  std::vector<int32_t> trees;  // materialized root trees, in the order first materialized
  std::unordered_map<int32_t, size_t> tree_of;

  Impl(const Expression& expression, int max_depth)
      : e(expression), vars(MakeCostVariables(expression)), max_memory_depth(max_depth) {
    if (e.indices.size() > 15) {
      throw InputError("the expression has " + std::to_string(e.indices.size()) +
                       " indices; SparseAuto's enumeration handles at most 15");
    }
    num_inputs = static_cast<int>(e.tensors.size()) - 1;
    if (num_inputs > 6) {
      throw InputError("the expression has " + std::to_string(num_inputs) +
                       " inputs; SparseAuto's enumeration handles at most 6");
    }
    Problem p;
    p.lhs = MakeOperand(0, false, IndicesOf(0));
    for (int t = 1; t <= num_inputs; ++t) {
      p.factors.push_back(MakeOperand(1u << (t - 1), false, IndicesOf(t)));
    }
    root = Intern(std::move(p));
  }

  std::vector<int8_t> IndicesOf(int tensor) const {
    std::vector<int8_t> out;
    for (const auto& index : e.tensors[tensor].indices) out.push_back(int8_t(e.IndexId(index)));
    return out;
  }

  static Operand MakeOperand(uint32_t mask, bool temp, std::vector<int8_t> indices) {
    Operand o;
    o.mask = mask;
    o.temp = temp;
    o.indices = std::move(indices);
    for (int8_t x : o.indices) o.set |= 1u << x;
    return o;
  }

  static Operand Strip(const Operand& o, IndexSet fused) {
    std::vector<int8_t> kept;
    for (int8_t x : o.indices) {
      if (!(fused & (1u << x))) kept.push_back(x);
    }
    return MakeOperand(o.mask, o.temp, kept);
  }

  bool IsSparseInput(const Operand& o) const { return !o.temp && o.mask == (1u << (e.sparse - 1)); }

  int Intern(Problem p) {
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
    auto it = problem_ids.find(key);
    if (it != problem_ids.end()) return it->second;

    p.key = key;
    p.all = p.lhs.set;
    for (size_t k = 0; k < p.factors.size(); ++k) {
      p.all |= p.factors[k].set;
      if (IsSparseInput(p.factors[k])) {
        p.sparse = static_cast<int>(k);
        p.chain_sparse = p.factors[k].indices;
      }
    }
    if (!p.lhs.temp && p.lhs.mask == 0 && e.sparse_output_prefix > 0) {
      const auto& out = e.tensors[0].indices;
      for (int m = 0; m < e.sparse_output_prefix; ++m) {
        const int x = e.IndexId(out[m]);
        if (p.lhs.set & (1u << x)) p.chain_output.push_back(int8_t(x));
      }
    }
    auto data = std::make_unique<ProblemData>();
    data->problem = std::move(p);
    problems.push_back(std::move(data));
    const int id = static_cast<int>(problems.size()) - 1;
    problem_ids.emplace(key, id);
    return id;
  }

  // May index x be looped next, once the indices in `placed` enclose it? The sparse operand's
  // remaining modes are looped in storage order; a sparse output's remaining leading indices
  // come first, in order (its values are stored under the sparse operand's levels).
  static bool CanPlace(const Problem& q, int x, IndexSet placed) {
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

  // Every loop order of the problem's indices that respects its chains.
  void ForEachOrder(const Problem& q, const std::function<void(const std::vector<int8_t>&)>& f) {
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
  void ForEachFused(const Problem& q, IndexSet prod, IndexSet cons,
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
  Split MakeSplit(const Problem& q, uint32_t pset, IndexSet fused_set) {
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
  static std::vector<uint32_t> ProducerSets(const Problem& q) {
    std::vector<uint32_t> sets;
    const int nf = static_cast<int>(q.factors.size());
    if (nf <= 2) return sets;
    for (uint32_t pset = 1; pset + 1 < (1u << nf); ++pset) {
      if (Count(pset) == 1 && q.factors[__builtin_ctz(pset)].temp) continue;
      sets.push_back(pset);
    }
    return sets;
  }

  static int FactorPosition(const Problem& q, uint32_t mask, bool temp) {
    for (size_t k = 0; k < q.factors.size(); ++k) {
      if (q.factors[k].mask == mask && q.factors[k].temp == temp) return static_cast<int>(k);
    }
    return -1;
  }

  // Position in the child problem of factor k of q (which the split sends to that child).
  static int ChildPosition(const Problem& q, int k, const Problem& child) {
    return FactorPosition(child, q.factors[k].mask, q.factors[k].temp);
  }

  int LoopVariable(const Problem& q, int x) const {
    if (q.sparse >= 0 && vars.fiber[x] >= 0 && (q.factors[q.sparse].set & (1u << x))) {
      return vars.fiber[x];
    }
    return vars.dim[x];
  }

  int LoopProduct(const Problem& q, IndexSet loops) {
    std::vector<int> v;
    for (int x = 0; x < 16; ++x) {
      if (loops & (1u << x)) v.push_back(LoopVariable(q, x));
    }
    return polys.Intern(Polynomial::Product(v));
  }

  int TempSize(IndexSet shared) {
    if (shared == 0) return 0;  // a scalar lives in a register: no auxiliary memory
    std::vector<int> v;
    for (int x = 0; x < 16; ++x) {
      if (shared & (1u << x)) v.push_back(vars.dim[x]);
    }
    return polys.Intern(Polynomial::Product(v));
  }

  // Order bit of a two-index set along a path: fused loops first, then the child's order.
  static uint32_t ComposeBit(const std::vector<int8_t>& fused, IndexSet set, uint32_t child_bit) {
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

  static uint32_t LeafSig(const Problem& q, const std::vector<int8_t>& order) {
    uint32_t sig = q.lhs.temp ? ComposeBit(order, q.lhs.set, 0) : 0;
    for (size_t k = 0; k < q.factors.size(); ++k) {
      if (q.factors[k].temp) sig |= ComposeBit(order, q.factors[k].set, 0) << (1 + k);
    }
    return sig;
  }

  static uint32_t ComposeSig(const Problem& q, const SplitCase& sc,
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
  std::vector<SplitCase> EnumerateSplits(int id, int max_shared) {
    const Problem q = problems[id]->problem;
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
        const Problem& pp = problems[sc.split.producer]->problem;
        const Problem& cp = problems[sc.split.consumer]->problem;
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

  // Every split of a problem, made once; the whole-space count walks all of them.
  const std::vector<SplitCase>& AllSplits(int id) {
    ProblemData& d = *problems[id];
    if (!d.has_all_splits) {
      d.all_splits = EnumerateSplits(id, 16);
      d.has_all_splits = true;
    }
    return d.all_splits;
  }

  // The splits whose temporary has order <= the memory-depth bound (Stage 1), made without the
  // sub-problems of larger temporaries unless the whole space was enumerated already.
  const std::vector<const SplitCase*>& Stage1Splits(int id) {
    ProblemData& d = *problems[id];
    if (!d.has_stage1_splits) {
      if (!d.has_all_splits) {
        std::vector<SplitCase> cases = EnumerateSplits(id, max_memory_depth);
        ProblemData& fresh = *problems[id];
        fresh.own_stage1_splits = std::move(cases);
        for (const SplitCase& sc : fresh.own_stage1_splits) fresh.stage1_splits.push_back(&sc);
      } else {
        for (const SplitCase& sc : d.all_splits) {
          if (Count(sc.shared) <= max_memory_depth) d.stage1_splits.push_back(&sc);
        }
      }
      problems[id]->has_stage1_splits = true;
    }
    return problems[id]->stage1_splits;
  }

  void Charge(size_t work) {
    if (work > count_budget) throw CountBudgetExceeded{};
    count_budget -= work;
  }

  // ---- counting the whole space ------------------------------------------------------------

  // Code of the indices of `set` in `order`, and how many there are.
  static uint64_t OrderCode(const std::vector<int8_t>& order, IndexSet set, int* length) {
    uint64_t code = 0;
    int n = 0;
    for (int8_t x : order) {
      if (set & (1u << x)) code |= uint64_t(x + 1) << (4 * n++);
    }
    if (length) *length = n;
    return code;
  }

  // Trees of problem `id` whose temporaries have order <= max_order, per order signature.
  const std::unordered_map<OrderSig, u128, OrderSigHash>& Counts(int id, int max_order) {
    ProblemData& d = *problems[id];
    auto done = d.counts.find(max_order);
    if (done != d.counts.end()) return done->second;
    if (d.counting.count(max_order))
      throw InternalError("SparseAuto: cyclic sub-problem " + d.problem.key);
    d.counting.insert(max_order);
    const Problem q = d.problem;
    std::unordered_map<OrderSig, u128, OrderSigHash> counts;
    const size_t nf = q.factors.size();
    ForEachOrder(q, [&](const std::vector<int8_t>& order) {
      Charge(1);
      OrderSig sig;
      if (q.lhs.temp) sig.order[0] = OrderCode(order, q.lhs.set, nullptr);
      for (size_t k = 0; k < nf; ++k) {
        if (q.factors[k].temp) sig.order[1 + k] = OrderCode(order, q.factors[k].set, nullptr);
      }
      u128& n = counts[sig];
      n = SaturatingAdd(n, 1);
    });
    const std::vector<SplitCase>& splits = AllSplits(id);
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
    ProblemData& finished = *problems[id];
    finished.counting.erase(max_order);
    return finished.counts[max_order] = std::move(counts);
  }

  // ---- Stage 1: summaries and materialized trees -------------------------------------------

  // How many Stage-1 trees have each (loop depth, memory depth), per signature.
  const std::map<uint32_t, std::map<int, u128>>& Depths(int id) {
    ProblemData& d = *problems[id];
    if (d.summarized) return d.depths;
    if (d.summarizing) throw InternalError("SparseAuto: cyclic sub-problem " + d.problem.key);
    d.summarizing = true;
    const Problem q = d.problem;
    std::map<uint32_t, std::map<int, u128>> out;
    const int leaf = Count(q.all) * 256;
    ForEachOrder(q, [&](const std::vector<int8_t>& order) {
      u128& n = out[LeafSig(q, order)][leaf];
      n = SaturatingAdd(n, 1);
    });
    for (const SplitCase* split : Stage1Splits(id)) {
      const SplitCase& sc = *split;
      const auto& pp = Depths(sc.split.producer);
      const auto& cp = Depths(sc.split.consumer);
      const int fl = Count(sc.fused_set), sm = Count(sc.shared);
      for (const auto& [fused, multiplicity] : sc.bit_groups) {
        for (const auto& [csig, cmap] : cp) {
          const uint32_t want = (csig >> (1 + sc.temp_pos)) & 1;
          for (const auto& [psig, pmap] : pp) {
            if ((psig & 1) != want) continue;
            auto& target = out[ComposeSig(q, sc, fused, psig, csig)];
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
    ProblemData& done = *problems[id];
    done.depths = std::move(out);
    done.summarized = true;
    done.summarizing = false;
    return done.depths;
  }

  // The distinct (time, memory) pairs of the Stage-1 trees, per signature; false when more
  // than `budget` pairs of sub-tree classes would have to be combined.
  bool Classes(int id, size_t& budget) {
    ProblemData& d = *problems[id];
    if (d.classified) return true;
    if (d.classifying) throw InternalError("SparseAuto: cyclic sub-problem " + d.problem.key);
    d.classifying = true;
    const Problem q = d.problem;
    std::map<uint32_t, std::unordered_set<uint64_t>> out;
    const uint64_t leaf = uint64_t(uint32_t(LoopProduct(q, q.all))) << 32;
    ForEachOrder(q, [&](const std::vector<int8_t>& order) { out[LeafSig(q, order)].insert(leaf); });
    for (const SplitCase* split : Stage1Splits(id)) {
      const SplitCase& sc = *split;
      if (!Classes(sc.split.producer, budget) || !Classes(sc.split.consumer, budget)) {
        problems[id]->classifying = false;
        return false;
      }
      const auto& pp = problems[sc.split.producer]->classes;
      const auto& cp = problems[sc.split.consumer]->classes;
      for (const auto& [fused, multiplicity] : sc.bit_groups) {
        for (const auto& [csig, cset] : cp) {
          const uint32_t want = (csig >> (1 + sc.temp_pos)) & 1;
          for (const auto& [psig, pset] : pp) {
            if ((psig & 1) != want) continue;
            const size_t work = cset.size() * pset.size();
            if (work > budget) {
              problems[id]->classifying = false;
              return false;
            }
            budget -= work;
            auto& target = out[ComposeSig(q, sc, fused, psig, csig)];
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
    ProblemData& done = *problems[id];
    done.classes = std::move(out);
    done.classified = true;
    done.classifying = false;
    return true;
  }

  // Materializes the Stage-1 trees with loop depth <= max_loop and memory depth <= max_memory.
  const std::vector<int32_t>& Build(int id, int max_loop, int max_memory) {
    const int bounds = max_loop * 256 + max_memory;
    {
      auto it = problems[id]->built.find(bounds);
      if (it != problems[id]->built.end()) return it->second;
    }
    const Problem q = problems[id]->problem;
    std::vector<int32_t> out;
    auto add = [&](const Node& n) {
      if (nodes.size() >= limit) {
        throw InputError("the SparseAuto space of " + e.text + " has too many trees within " +
                         "the depth bounds to materialize");
      }
      nodes.push_back(n);
      out.push_back(static_cast<int32_t>(nodes.size()) - 1);
    };
    if (Count(q.all) <= max_loop) {
      const int leaf_time = LoopProduct(q, q.all);
      ForEachOrder(q, [&](const std::vector<int8_t>& order) {
        Node n;
        n.problem = id;
        n.loops = PackLoops(order);
        n.num_loops = uint8_t(order.size());
        n.loop_depth = uint8_t(order.size());
        n.time = leaf_time;
        n.sig = LeafSig(q, order);
        add(n);
      });
    }
    for (const SplitCase* split : Stage1Splits(id)) {
      const SplitCase& sc = *split;
      const int fl = Count(sc.fused_set);
      if (fl > max_loop || Count(sc.shared) > max_memory) continue;
      const std::vector<int32_t>& pn = Build(sc.split.producer, max_loop - fl, max_memory);
      const std::vector<int32_t>& cn = Build(sc.split.consumer, max_loop - fl, max_memory);
      std::vector<int32_t> by_bit[2];
      for (int32_t p : pn) by_bit[nodes[p].sig & 1].push_back(p);
      for (const auto& fused : sc.orders) {
        const uint64_t packed = PackLoops(fused);
        for (int32_t c : cn) {
          const Node cnode = nodes[c];
          const uint32_t want = (cnode.sig >> (1 + sc.temp_pos)) & 1;
          for (int32_t p : by_bit[want]) {
            const Node pnode = nodes[p];
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
            n.sig = ComposeSig(q, sc, fused, pnode.sig, cnode.sig);
            add(n);
          }
        }
      }
    }
    return problems[id]->built[bounds] = std::move(out);
  }

  // ---- schedules --------------------------------------------------------------------------

  // Order of an operand's remaining indices along the path to the compute that uses it:
  // which = -1 for the left-hand side, else a factor position.
  std::vector<int8_t> PathOrder(int32_t node, int which) const {
    const Node& n = nodes[node];
    const Problem& q = problems[n.problem]->problem;
    const IndexSet set = which < 0 ? q.lhs.set : q.factors[which].set;
    std::vector<int8_t> out;
    for (int k = 0; k < n.num_loops; ++k) {
      if (set & (1u << LoopAt(n, k))) out.push_back(int8_t(LoopAt(n, k)));
    }
    if (n.producer < 0) return out;
    int32_t child = n.consumer;
    int child_which = -1;
    if (which >= 0) {
      const bool in_p = n.producer_set & (1u << which);
      child = in_p ? n.producer : n.consumer;
      child_which = ChildPosition(q, which, problems[nodes[child].problem]->problem);
    }
    const auto inner = PathOrder(child, child_which);
    out.insert(out.end(), inner.begin(), inner.end());
    return out;
  }

  struct RenderState {
    std::vector<std::string> taken;
    int scalars = 0, dense = 0;
  };

  std::string TempName(bool scalar, RenderState& st) const {
    const std::string base = scalar ? "t" : "T";
    int& counter = scalar ? st.scalars : st.dense;
    for (;;) {
      ++counter;
      const std::string name = counter == 1 ? base : base + std::to_string(counter);
      if (std::find(st.taken.begin(), st.taken.end(), name) == st.taken.end()) return name;
    }
  }

  void Render(int32_t node, ScheduleNode& out, const std::string& lhs_text,
              std::map<uint32_t, std::string> scope, RenderState& st) const {
    const Node& n = nodes[node];
    const Problem& q = problems[n.problem]->problem;
    for (int k = 0; k < n.num_loops; ++k) out.loops.push_back(e.indices[LoopAt(n, k)]);
    if (n.producer < 0) {
      // Factors ordered by the first expression tensor they contain.
      std::vector<std::pair<int, std::string>> factors;
      for (const auto& f : q.factors) {
        const int first = __builtin_ctz(f.mask) + 1;
        factors.emplace_back(first,
                             f.temp ? scope.at(f.mask)
                                    : AccessText(e.tensors[first].name, e.tensors[first].indices));
      }
      std::sort(factors.begin(), factors.end());
      out.compute = lhs_text + " +=";
      for (size_t k = 0; k < factors.size(); ++k) {
        out.compute += (k ? " * " : " ") + factors[k].second;
      }
      return;
    }
    uint32_t temp_mask = 0;
    IndexSet shared = 0;
    for (size_t k = 0; k < q.factors.size(); ++k) {
      if (n.producer_set & (1u << k)) temp_mask |= q.factors[k].mask;
    }
    const std::vector<int8_t> order = PathOrder(n.producer, -1);
    for (int8_t x : order) shared |= 1u << x;
    std::vector<std::string> temp_indices;
    for (int8_t x : order) temp_indices.push_back(e.indices[x]);
    const std::string temp_text = AccessText(TempName(shared == 0, st), temp_indices);
    out.temp = temp_text;
    out.producer = std::make_unique<ScheduleNode>();
    out.consumer = std::make_unique<ScheduleNode>();
    Render(n.producer, *out.producer, temp_text, scope, st);
    scope[temp_mask] = temp_text;
    Render(n.consumer, *out.consumer, lhs_text, scope, st);
  }

  Schedule ToSchedule(int32_t node) const {
    Schedule s;
    s.format = SparseAutoFormat(e);
    RenderState st;
    for (const auto& t : e.tensors) st.taken.push_back(t.name);
    for (const auto& index : e.indices) st.taken.push_back(index);
    Render(node, s.root, AccessText(e.tensors[0].name, e.tensors[0].indices), {}, st);
    s.chunk = 16;
    s.threads = 0;
    if (!s.root.loops.empty()) {
      s.parallel = s.root.loops[0];
    } else if (s.root.is_where() && !s.root.producer->loops.empty() &&
               !s.root.consumer->loops.empty() &&
               s.root.producer->loops[0] == s.root.consumer->loops[0]) {
      s.parallel = s.root.producer->loops[0];
    }
    return s;
  }
};

BigSpace::BigSpace(const Expression& expression, int max_memory_depth)
    : impl_(std::make_unique<Impl>(expression, max_memory_depth)) {}
BigSpace::~BigSpace() = default;

const Expression& BigSpace::expression() const {
  return impl_->e;
}
const CostVariables& BigSpace::variables() const {
  return impl_->vars;
}

std::optional<unsigned __int128> BigSpace::CountAll(int max_temporary_order, size_t budget) {
  impl_->count_budget = budget;
  try {
    u128 total = 0;
    for (const auto& [sig, count] : impl_->Counts(impl_->root, max_temporary_order)) {
      total = SaturatingAdd(total, count);
    }
    return total;
  } catch (const CountBudgetExceeded&) {
    for (auto& problem : impl_->problems) problem->counting.clear();
    return std::nullopt;
  }
}

std::vector<BigSpace::DepthCount> BigSpace::Stage1Depths() {
  std::map<int, u128> merged;
  for (const auto& [sig, depths] : impl_->Depths(impl_->root)) {
    for (const auto& [key, count] : depths) merged[key] = SaturatingAdd(merged[key], count);
  }
  std::vector<DepthCount> out;
  for (const auto& [key, count] : merged) out.push_back({key / 256, key % 256, count});
  return out;
}

int64_t BigSpace::Stage1Classes(size_t budget) {
  if (!impl_->Classes(impl_->root, budget)) return -1;
  std::unordered_set<uint64_t> all;
  for (const auto& [sig, classes] : impl_->problems[impl_->root]->classes) {
    all.insert(classes.begin(), classes.end());
  }
  return static_cast<int64_t>(all.size());
}

std::vector<size_t> BigSpace::Materialize(int max_loop_depth, int max_memory_depth, size_t limit) {
  // Signatures of materialized trees hold one bit per temporary: two indices at most.
  if (std::min(max_memory_depth, impl_->max_memory_depth) > 2) {
    throw InternalError("SparseAuto materializes trees with temporaries of order <= 2 only");
  }
  impl_->limit = impl_->nodes.size() + limit;
  const std::vector<int32_t> roots = impl_->Build(impl_->root, max_loop_depth, max_memory_depth);
  std::vector<size_t> out;
  for (int32_t r : roots) {
    auto it = impl_->tree_of.find(r);
    if (it == impl_->tree_of.end()) {
      impl_->trees.push_back(r);
      it = impl_->tree_of.emplace(r, impl_->trees.size() - 1).first;
    }
    out.push_back(it->second);
  }
  return out;
}

size_t BigSpace::size() const {
  return impl_->trees.size();
}

int BigSpace::loop_depth(size_t tree) const {
  return impl_->nodes[impl_->trees.at(tree)].loop_depth;
}
int BigSpace::memory_depth(size_t tree) const {
  return impl_->nodes[impl_->trees.at(tree)].memory_depth;
}
int BigSpace::time_id(size_t tree) const {
  return impl_->nodes[impl_->trees.at(tree)].time;
}
int BigSpace::memory_id(size_t tree) const {
  return impl_->nodes[impl_->trees.at(tree)].memory;
}
const Polynomial& BigSpace::polynomial(int id) const {
  return impl_->polys.Get(id);
}
Schedule BigSpace::ToSchedule(size_t tree) const {
  return impl_->ToSchedule(impl_->trees.at(tree));
}
size_t BigSpace::problem_count() const {
  return impl_->problems.size();
}
size_t BigSpace::node_count() const {
  return impl_->nodes.size();
}

}  // namespace sparsetune
