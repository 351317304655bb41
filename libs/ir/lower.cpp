#include <algorithm>
#include <functional>
#include <set>

#include "base/errors.hpp"
#include "base/strings.hpp"
#include "ir/loop_nest.hpp"

namespace sparsetune {

namespace {

// Unwinds lowering with the reason a schedule does not apply.
struct Invalid {
  std::string reason;
};

[[noreturn]] void Fail(const std::string& reason) {
  throw Invalid{reason};
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// Information gathered about each compute while walking the tree.
struct ComputeSite {
  NestNode* compute = nullptr;
  NestNode* update = nullptr;           // the node that writes lhs: the compute or its reduce
  std::vector<NestNode*> loops;         // enclosing loops, outer to inner
  std::vector<NestNode*> update_loops;  // loops enclosing the update point
  bool in_producer_of_output = false;
};

class Lowerer {
 public:
  Lowerer(const Expression& e, const Schedule& s) : e_(e), s_(s) { s_.Canonicalize(); }

  std::unique_ptr<LoopNest> Run() {
    nest_ = std::make_unique<LoopNest>();
    nest_->expression = e_;
    // FromJson checks the same bounds; schedules built in code reach here unchecked.
    if (std::string violation = s_.LimitViolation(); !violation.empty()) Fail(violation);
    ResolveVariables();
    ResolveFormat();
    ResolveTransposed();
    std::vector<int> scope;
    nest_->root = BuildSection(s_.root, scope, /*is_root=*/true, /*producer_of=*/-1);
    std::vector<NestNode*> stack;
    Walk(nest_->root.get(), stack);
    CheckUses();
    MarkSparseLevels();
    CheckSlicedLevels();
    CheckSingletonLevels();
    CheckSparseOutput();
    CheckTemporaries();
    MarkParallel();
    MarkAtomicsAndAssign();
    MarkSimd(nest_->root.get());
    MarkVectorReductions(nest_->root.get());
    if (s_.prefetch > 0) MarkPrefetches(nest_->root.get());
    MarkRegisterTiles();
    nest_->schedule = s_;
    return std::move(nest_);
  }

 private:
  // ---- variables and format ----------------------------------------------------------------

  void ResolveVariables() {
    for (const auto& split : s_.splits) {
      if (e_.IndexId(split.first) < 0)
        Fail("split of " + split.first + ": the expression has no index " + split.first);
    }
    for (const auto& index : e_.indices) {
      const int64_t split = s_.SplitOf(index);
      nest_->splits[index] = split;
      std::vector<SplitPart> parts =
          split > 1 ? std::vector<SplitPart>{SplitPart::kOuter, SplitPart::kInner}
                    : std::vector<SplitPart>{SplitPart::kWhole};
      for (SplitPart part : parts) {
        LoopVar v{SplitVarName(index, part), index, part};
        if (split > 1 && e_.IndexId(v.name) >= 0) {
          Fail("index " + index + " is split into " + v.name + ", which is also an index name");
        }
        vars_[v.name] = v;
        parts_[index].push_back(v.name);
      }
    }
  }

  const LoopVar& Var(const std::string& name, const std::string& where) {
    auto it = vars_.find(name);
    if (it == vars_.end()) {
      std::string hint;
      for (const auto& [index, parts] : parts_) {
        if (name == index && parts.size() == 2)
          hint = " (" + index + " is split: use " + Join(parts, ",") + ")";
        if (parts.size() == 1 && (name == index + "1" || name == index + "0")) {
          hint = " (" + index + " is not split)";
        }
      }
      Fail(where + " names an unknown loop variable " + name + hint);
    }
    return it->second;
  }

  void ResolveFormat() {
    const TensorInfo& sparse = e_.sparse_input();
    std::vector<std::string> expected;
    for (const auto& index : sparse.indices) {
      for (const auto& v : parts_[index]) expected.push_back(v);
    }
    StorageFormat f;
    for (const auto& index : sparse.indices) f.split.push_back(nest_->splits[index]);
    std::vector<std::string> seen;
    for (const auto& [name, kind] : s_.format) {
      const LoopVar& v = Var(name, "the format");
      auto mode = std::find(sparse.indices.begin(), sparse.indices.end(), v.index);
      if (mode == sparse.indices.end()) {
        Fail("the format names " + name + ", but " + v.index +
             " is not an index of the sparse operand " + sparse.name);
      }
      if (Contains(seen, name)) Fail("the format lists " + name + " twice");
      seen.push_back(name);
      auto group = s_.groups.find(name);
      f.levels.push_back({int(mode - sparse.indices.begin()), v.part, kind,
                          group == s_.groups.end() ? 1 : group->second});
      nest_->level_vars.push_back(v);
    }
    for (const auto& name : expected) {
      if (!Contains(seen, name)) {
        Fail("the format of " + sparse.name + " has no level for " + name + " (it needs one per " +
             "variable: " + Join(expected, ",") + ")");
      }
    }
    for (const auto& [name, group] : s_.groups) {
      if (!Contains(seen, name)) Fail("the format groups " + name + ", which it does not list");
    }
    f.ordering = s_.ordering;
    if (f.ordering != OrderingKind::kNone && sparse.indices.size() != 2)
      Fail(std::string("the ") + OrderingName(f.ordering) + " ordering renumbers a matrix's rows " +
           "and columns; " + sparse.name + " has " + std::to_string(sparse.indices.size()) +
           " indices");
    f.uniform_values = s_.uniform_values;
    if (std::string refusal = f.UniformValuesRefusal(); !refusal.empty())
      Fail("\"uniform_values\": " + refusal);
    nest_->storage = f;
  }

  void ResolveTransposed() {
    nest_->transposed.assign(e_.tensors.size(), false);
    for (const auto& name : s_.transposed) {
      const int id = e_.TensorId(name);
      if (id < 0) Fail("transpose names " + name + ", which is not a tensor of the expression");
      if (id == 0 || id == e_.sparse || e_.tensors[id].indices.size() != 2)
        Fail("transpose names " + name + ": only dense inputs of order 2 can be transposed");
      nest_->transposed[id] = true;
    }
  }

  // ---- building -------------------------------------------------------------------------------

  NestAccess ResolveAccess(const Access& a, const std::vector<int>& scope,
                           const std::string& what) {
    NestAccess out;
    out.indices = a.indices;
    for (int t : scope) {
      if (nest_->temps[t].name == a.tensor) {
        out.temp = t;
        if (a.indices != nest_->temps[t].indices) {
          Fail(what + ": temporary " + a.tensor + " is declared as " + TempText(t) +
               " but used with indices (" + Join(a.indices, ",") + ")");
        }
        return out;
      }
    }
    const int id = e_.TensorId(a.tensor);
    if (id < 0)
      Fail(what + ": " + a.tensor +
           " is neither a tensor of the expression nor a temporary in scope");
    if (a.indices != e_.tensors[id].indices) {
      Fail(what + ": " + a.tensor + " is indexed (" + Join(e_.tensors[id].indices, ",") +
           ") in the expression, not (" + Join(a.indices, ",") + ")");
    }
    out.tensor = id;
    return out;
  }

  std::string TempText(int t) const {
    const Temporary& temp = nest_->temps[t];
    return temp.indices.empty() ? temp.name : temp.name + "(" + Join(temp.indices, ",") + ")";
  }

  std::unique_ptr<NestNode> BuildSection(const ScheduleNode& section, std::vector<int>& scope,
                                         bool is_root, int producer_of) {
    std::unique_ptr<NestNode> terminal;
    NestAccess lhs;
    if (section.is_where()) {
      Access t = ParseAccess(section.temp, "temporary \"" + section.temp + "\"");
      if (e_.TensorId(t.tensor) >= 0)
        Fail("temporary " + t.tensor + " has the name of a tensor of the expression");
      for (const auto& temp : nest_->temps) {
        if (temp.name == t.tensor) Fail("temporary " + t.tensor + " is declared twice");
      }
      for (const auto& index : t.indices) {
        if (e_.IndexId(index) < 0)
          Fail("temporary " + section.temp + " uses unknown index " + index);
      }
      nest_->temps.push_back({t.tensor, t.indices, false});
      const int id = static_cast<int>(nest_->temps.size()) - 1;
      terminal = std::make_unique<NestNode>();
      terminal->kind = NestNode::Kind::kWhere;
      terminal->temp = id;
      scope.push_back(id);
      terminal->children.push_back(BuildSection(*section.producer, scope, false, id));
      terminal->children.push_back(BuildSection(*section.consumer, scope, false, producer_of));
      scope.pop_back();
    } else {
      terminal = std::make_unique<NestNode>();
      terminal->kind = NestNode::Kind::kCompute;
      if (section.compute.empty()) {
        if (!is_root) Fail("a producer or consumer section needs a \"compute\" or a \"where\"");
        terminal->lhs = NestAccess{0, -1, e_.tensors[0].indices};
        for (size_t t = 1; t < e_.tensors.size(); ++t) {
          terminal->factors.push_back(NestAccess{int(t), -1, e_.tensors[t].indices});
        }
      } else {
        const std::string what = "compute \"" + section.compute + "\"";
        Assignment a = ParseAssignment(section.compute, what);
        terminal->lhs = ResolveAccess(a.lhs, scope, what);
        if (terminal->lhs.tensor > 0) Fail(what + " writes the input " + a.lhs.tensor);
        if (terminal->lhs.temp >= 0 && terminal->lhs.temp != producer_of) {
          Fail(what + " writes temporary " + a.lhs.tensor +
               " outside the producer of its where node");
        }
        if (terminal->lhs.tensor == 0 && producer_of >= 0) {
          Fail(what + " writes the output inside the producer of temporary " +
               nest_->temps[producer_of].name);
        }
        for (const Access& f : a.factors)
          terminal->factors.push_back(ResolveAccess(f, scope, what));
      }
      lhs = terminal->lhs;
    }

    // The chain of loops; a compute's reduction loops (those below the last loop that selects
    // its output element) go under a reduce node that sums into a register.
    std::vector<const LoopVar*> loop_vars;
    for (const auto& name : section.loops) loop_vars.push_back(&Var(name, "loop " + name));
    int reduce_at = -1;
    if (terminal->kind == NestNode::Kind::kCompute) {
      int last_selecting = -1;
      for (size_t k = 0; k < loop_vars.size(); ++k) {
        if (Contains(lhs.indices, loop_vars[k]->index)) last_selecting = static_cast<int>(k);
      }
      if (last_selecting + 1 < static_cast<int>(loop_vars.size())) reduce_at = last_selecting + 1;
    }
    std::unique_ptr<NestNode> body = std::move(terminal);
    for (int k = static_cast<int>(loop_vars.size()) - 1; k >= 0; --k) {
      auto loop = std::make_unique<NestNode>();
      loop->kind = NestNode::Kind::kLoop;
      loop->var = *loop_vars[k];
      loop->children.push_back(std::move(body));
      body = std::move(loop);
      if (k == reduce_at) body = MakeReduce(std::move(body), lhs);
    }
    return body;
  }

  std::unique_ptr<NestNode> MakeReduce(std::unique_ptr<NestNode> body, const NestAccess& lhs) {
    auto reduce = std::make_unique<NestNode>();
    reduce->kind = NestNode::Kind::kReduce;
    reduce->lhs = lhs;
    reduce->accumulator = nest_->num_accumulators++;
    // The compute at the bottom of this chain adds into the accumulator.
    NestNode* n = body.get();
    while (n->kind == NestNode::Kind::kLoop) n = n->children[0].get();
    n->accumulator = reduce->accumulator;
    reduce->children.push_back(std::move(body));
    return reduce;
  }

  // ---- checks over root-to-leaf paths -------------------------------------------------------

  void Walk(NestNode* node, std::vector<NestNode*>& stack) {
    switch (node->kind) {
      case NestNode::Kind::kLoop: {
        for (NestNode* outer : stack) {
          if (outer->kind == NestNode::Kind::kLoop && outer->var.name == node->var.name) {
            Fail("loop " + node->var.name + " is nested inside another loop " + node->var.name);
          }
        }
        if (node->var.part == SplitPart::kInner) {
          const std::string outer_name = SplitVarName(node->var.index, SplitPart::kOuter);
          bool found = false;
          for (NestNode* outer : stack)
            found |= outer->kind == NestNode::Kind::kLoop && outer->var.name == outer_name;
          if (!found) Fail("loop " + node->var.name + " must be inside loop " + outer_name);
        }
        break;
      }
      case NestNode::Kind::kWhere:
        where_loops_[node->temp] = Loops(stack);
        where_nodes_[node->temp] = node;
        break;
      case NestNode::Kind::kCompute: {
        ComputeSite site;
        site.compute = node;
        site.loops = Loops(stack);
        site.update = node;
        site.update_loops = site.loops;
        if (node->accumulator >= 0) {
          // The reduce node is the nearest enclosing kReduce.
          for (int k = static_cast<int>(stack.size()) - 1; k >= 0; --k) {
            if (stack[k]->kind == NestNode::Kind::kReduce) {
              site.update = stack[k];
              site.update_loops = Loops(std::vector<NestNode*>(stack.begin(), stack.begin() + k));
              break;
            }
          }
        }
        CheckCoverage(site);
        sites_.push_back(site);
        return;
      }
      case NestNode::Kind::kReduce:
        break;
    }
    stack.push_back(node);
    for (auto& child : node->children) Walk(child.get(), stack);
    stack.pop_back();
  }

  static std::vector<NestNode*> Loops(const std::vector<NestNode*>& stack) {
    std::vector<NestNode*> loops;
    for (NestNode* n : stack) {
      if (n->kind == NestNode::Kind::kLoop) loops.push_back(n);
    }
    return loops;
  }

  std::vector<std::string> ComputeIndices(const NestNode* c) const {
    std::vector<std::string> indices = c->lhs.indices;
    for (const auto& f : c->factors) {
      for (const auto& index : f.indices) {
        if (!Contains(indices, index)) indices.push_back(index);
      }
    }
    return indices;
  }

  std::string ComputeText(const NestNode* c) const {
    auto text = [&](const NestAccess& a) {
      const std::string name = a.temp >= 0 ? nest_->temps[a.temp].name : e_.tensors[a.tensor].name;
      return a.indices.empty() ? name : name + "(" + Join(a.indices, ",") + ")";
    };
    std::string out = text(c->lhs) + " += ";
    for (size_t k = 0; k < c->factors.size(); ++k) out += (k ? " * " : "") + text(c->factors[k]);
    return out;
  }

  void CheckCoverage(const ComputeSite& site) {
    std::vector<std::string> enclosing;
    for (NestNode* l : site.loops) enclosing.push_back(l->var.name);
    for (const auto& index : ComputeIndices(site.compute)) {
      for (const auto& part : parts_[index]) {
        if (!Contains(enclosing, part)) {
          Fail("compute " + ComputeText(site.compute) + " uses index " + index + " but no loop " +
               part + " encloses it");
        }
      }
    }
  }

  void CheckUses() {
    std::vector<int> input_uses(e_.tensors.size(), 0);
    std::vector<int> temp_writes(nest_->temps.size(), 0), temp_reads(nest_->temps.size(), 0);
    int output_writes = 0;
    for (const auto& site : sites_) {
      const NestNode* c = site.compute;
      if (c->lhs.tensor == 0) ++output_writes;
      if (c->lhs.temp >= 0) ++temp_writes[c->lhs.temp];
      for (const auto& f : c->factors) {
        if (f.tensor >= 0) ++input_uses[f.tensor];
        if (f.temp >= 0) ++temp_reads[f.temp];
      }
    }
    if (output_writes != 1) {
      Fail("the output " + e_.tensors[0].name + " is written by " + std::to_string(output_writes) +
           " computes; exactly one must write it");
    }
    for (size_t t = 1; t < e_.tensors.size(); ++t) {
      if (input_uses[t] != 1) {
        Fail("input " + e_.tensors[t].name + " is used by " + std::to_string(input_uses[t]) +
             " computes; each input must be used exactly once");
      }
    }
    for (size_t t = 0; t < nest_->temps.size(); ++t) {
      if (temp_writes[t] != 1 || temp_reads[t] != 1) {
        Fail("temporary " + nest_->temps[t].name +
             " must be written once by its producer and read once by its consumer");
      }
    }
  }

  // The loops on the path to the compute that reads the sparse operand iterate its levels, in
  // storage order; every other loop is a plain range.
  void MarkSparseLevels() {
    const ComputeSite* sparse_site = nullptr;
    for (const auto& site : sites_) {
      for (const auto& f : site.compute->factors) {
        if (f.tensor == e_.sparse) sparse_site = &site;
      }
    }
    std::vector<std::string> order;
    for (const auto& v : nest_->level_vars) order.push_back(v.name);
    std::vector<std::string> path;
    for (NestNode* l : sparse_site->loops) {
      auto it = std::find(order.begin(), order.end(), l->var.name);
      if (it == order.end()) continue;
      const int level = static_cast<int>(it - order.begin());
      if (level != static_cast<int>(path.size())) {
        Fail("loop " + l->var.name + " visits level " + std::to_string(level) + " (" + l->var.name +
             ") of " + e_.sparse_input().name + " before the levels above it; the loops over " +
             e_.sparse_input().name + " must follow its level order " + Join(order, " "));
      }
      path.push_back(l->var.name);
      l->level = level;
      const LevelKind kind = nest_->storage.levels[level].kind;
      l->loop_kind = kind == LevelKind::kDense       ? LoopKind::kLevelU
                     : kind == LevelKind::kSliced    ? LoopKind::kLevelS
                     : kind == LevelKind::kSingleton ? LoopKind::kLevelQ
                                                     : LoopKind::kLevelC;
      l->group = nest_->storage.levels[level].group;
      if (l->group > 1 && s_.parallel == l->var.name)
        Fail("grouped level " + l->var.name + " cannot be the parallel loop");
      if (l->group > 1 && s_.unroll > 1)
        Fail("grouped level " + l->var.name + " already walks fixed groups; drop \"unroll\"");
      if (l->group > 1 && e_.sparse_output_prefix > 0)
        Fail("grouped level " + l->var.name + ": its padding has no place in a sparse output");
    }
  }

  bool AboveSingleton(int level) const {
    const auto& levels = nest_->storage.levels;
    return level >= 0 && level + 1 < static_cast<int>(levels.size()) &&
           levels[level + 1].kind == LevelKind::kSingleton;
  }

  // A singleton's coordinates sit at the positions of the compressed level right above it; only
  // singletons may follow it.
  void CheckSingletonLevels() {
    const auto& levels = nest_->storage.levels;
    for (size_t l = 0; l < levels.size(); ++l) {
      if (levels[l].kind != LevelKind::kSingleton) continue;
      const std::string name = nest_->level_vars[l].name;
      const LevelKind above = l > 0 ? levels[l - 1].kind : LevelKind::kDense;
      if (above != LevelKind::kCompressed && above != LevelKind::kSingleton)
        Fail("singleton level " + name +
             " must follow a compressed level (which then lists each entry) or another singleton");
      if (levels[l - 1].group > 1)
        Fail("singleton level " + name + " cannot follow a grouped level");
      if (l + 1 < levels.size() && levels[l + 1].kind != LevelKind::kSingleton)
        Fail("singleton level " + name + " can only be followed by singletons, not " +
             nest_->level_vars[l + 1].name + ":" + LevelKindLetter(levels[l + 1].kind));
    }
  }

  // A sliced level's loop holds its lanes' loop directly: the lanes define its coordinate.
  void CheckSlicedLevels() {
    const auto& levels = nest_->storage.levels;
    for (size_t l = 0; l < levels.size(); ++l) {
      if (levels[l].kind != LevelKind::kSliced) continue;
      const std::string name = nest_->level_vars[l].name;
      const bool lanes = l + 1 < levels.size() && levels[l + 1].kind == LevelKind::kDense &&
                         levels[l + 1].part == SplitPart::kInner &&
                         levels[l + 1].mode != levels[l].mode;
      if (!lanes)
        Fail("sliced level " + name + " must be followed in the format by a U level over the " +
             "inner part of another split index (its lanes), such as i0");
      if (e_.sparse_output_prefix > 0)
        Fail("sliced level " + name + ": a sliced format cannot hold a sparse output");
    }
    std::function<void(NestNode*)> visit = [&](NestNode* n) {
      if (n->kind == NestNode::Kind::kLoop && n->loop_kind == LoopKind::kLevelS) {
        const std::string lanes = nest_->level_vars[n->level + 1].name;
        NestNode* child = n->children[0].get();
        if (child->kind != NestNode::Kind::kLoop || child->level != n->level + 1)
          Fail("loop " + n->var.name + " over a sliced level must directly enclose the loop " +
               lanes + " over its lanes");
        child->sliced_level = n->level;
      }
      for (auto& c : n->children) visit(c.get());
    };
    visit(nest_->root.get());
  }

  void CheckSparseOutput() {
    const int prefix = e_.sparse_output_prefix;
    if (prefix == 0) return;
    const auto& modes = e_.sparse_input().indices;
    const auto& levels = nest_->storage.levels;
    size_t shared = 0;
    while (shared < levels.size() && levels[shared].mode < prefix) ++shared;
    for (size_t l = shared; l < levels.size(); ++l) {
      if (levels[l].mode < prefix) {
        Fail("the output " + e_.tensors[0].name + " is sparse over (" +
             Join(std::vector<std::string>(modes.begin(), modes.begin() + prefix), ",") +
             "), so those levels of " + e_.sparse_input().name + " must come first in the format");
      }
    }
    output_levels_ = static_cast<int>(shared);
    for (const auto& site : sites_) {
      if (site.compute->lhs.tensor != 0) continue;
      int found = 0;
      for (NestNode* l : site.update_loops) found += l->level >= 0 && l->level < output_levels_;
      if (found != output_levels_) {
        Fail("the sparse output " + e_.tensors[0].name +
             " is written outside the loops over its levels of " + e_.sparse_input().name);
      }
    }
  }

  void CheckTemporaries() {
    // A loop whose index a compute does not use repeats that compute; that is only right when
    // the compute reads or writes a temporary that the loop re-creates on every iteration.
    for (const auto& site : sites_) {
      const auto indices = ComputeIndices(site.compute);
      for (NestNode* loop : site.update_loops) {
        if (Contains(indices, loop->var.index)) continue;
        bool justified = false;
        std::vector<NestAccess> accesses = site.compute->factors;
        accesses.push_back(site.compute->lhs);
        for (const auto& a : accesses) {
          if (a.temp < 0) continue;
          const auto& wl = where_loops_[a.temp];
          justified |= std::find(wl.begin(), wl.end(), loop) != wl.end();
        }
        if (!justified) {
          Fail("loop " + loop->var.name + " encloses compute " + ComputeText(site.compute) +
               ", which does not use " + loop->var.index + ", so it would be repeated");
        }
      }
    }
    // A temporary must carry every index that its producer and consumer share outside the loops
    // enclosing the where node.
    for (size_t t = 0; t < nest_->temps.size(); ++t) {
      NestNode* where = where_nodes_[t];
      std::set<std::string> enclosing;
      for (NestNode* l : where_loops_[t]) enclosing.insert(l->var.index);
      const auto producer = SubtreeIndices(where->children[0].get(), int(t));
      const auto consumer = SubtreeIndices(where->children[1].get(), int(t));
      const Temporary& temp = nest_->temps[t];
      for (const auto& index : temp.indices) {
        if (!producer.count(index))
          Fail("temporary " + TempText(int(t)) + " has index " + index +
               ", which its producer does not use");
      }
      for (const auto& index : producer) {
        if (consumer.count(index) && !enclosing.count(index) && !Contains(temp.indices, index)) {
          Fail("temporary " + TempText(int(t)) + " must be indexed by " + index +
               ": both its producer and its consumer use it outside the enclosing loops");
        }
      }
    }
  }

  // Indices of everything a subtree reads or writes, except the temporary `self`.
  std::set<std::string> SubtreeIndices(const NestNode* node, int self) const {
    std::set<std::string> out;
    std::function<void(const NestNode*)> visit = [&](const NestNode* n) {
      if (n->kind == NestNode::Kind::kCompute) {
        std::vector<NestAccess> accesses = n->factors;
        accesses.push_back(n->lhs);
        for (const auto& a : accesses) {
          if (a.temp == self) continue;
          out.insert(a.indices.begin(), a.indices.end());
        }
      }
      for (const auto& c : n->children) visit(c.get());
    };
    visit(node);
    return out;
  }

  void MarkParallel() {
    if (s_.parallel.empty()) return;
    Var(s_.parallel, "the parallel loop");  // the chunk's range: LimitViolation, in Run
    int marked = 0;
    std::function<void(NestNode*, bool)> visit = [&](NestNode* n, bool inside) {
      if (n->kind == NestNode::Kind::kLoop && n->var.name == s_.parallel && !inside) {
        // Slots of one slice update the same lanes' outputs.
        if (n->loop_kind == LoopKind::kLevelS)
          Fail("loop " + n->var.name + " over a sliced level cannot be parallel");
        // A coordinate list repeats coordinates across positions: threads splitting its
        // positions would update the same output elements.
        if (n->loop_kind == LoopKind::kLevelQ ||
            (n->loop_kind == LoopKind::kLevelC && AboveSingleton(n->level)))
          Fail("loop " + n->var.name + " over a coordinate list (a compressed level above a " +
               "singleton, or the singleton) cannot be parallel; parallelize a loop above it");
        n->parallel = true;
        n->balanced = s_.partition == Partition::kBalanced;
        inside = true;
        ++marked;
      }
      for (auto& c : n->children) visit(c.get(), inside);
    };
    visit(nest_->root.get(), false);
    if (marked == 0) Fail("the parallel loop " + s_.parallel + " is not in the nest");
    // A parallel loop between a reduce node and its compute sums the accumulator per thread.
    for (const auto& site : sites_) {
      if (site.compute->accumulator < 0) continue;
      for (NestNode* l : site.loops) {
        const bool below_reduce = std::find(site.update_loops.begin(), site.update_loops.end(),
                                            l) == site.update_loops.end();
        if (l->parallel && below_reduce) l->reductions.push_back(site.compute->accumulator);
      }
    }
    // Temporaries created inside a parallel loop are private to its threads.
    for (size_t t = 0; t < nest_->temps.size(); ++t) {
      for (NestNode* l : where_loops_[t]) {
        if (l->parallel) {
          nest_->temps[t].per_thread = true;
          if (!nest_->temps[t].scalar()) l->thread_temps.push_back(int(t));
        }
      }
    }
  }

  void MarkAtomicsAndAssign() {
    for (const auto& site : sites_) {
      NestNode* update = site.update;
      const NestAccess& lhs = update->lhs;
      NestNode* parallel = nullptr;
      for (NestNode* l : site.update_loops) {
        if (l->parallel) parallel = l;
      }
      if (parallel) {
        bool private_temp = false;
        if (lhs.temp >= 0) {
          const auto& wl = where_loops_[lhs.temp];
          private_temp = std::find(wl.begin(), wl.end(), parallel) != wl.end();
        }
        update->atomic = !private_temp && !Contains(lhs.indices, parallel->var.index);
      }
      if (lhs.tensor == 0 && !update->atomic && OverwritesEachElementOnce(site)) {
        update->assign = true;
        nest_->zero_output = false;
      } else if (lhs.tensor == 0) {
        PlaceOutputClearing(site);
      }
    }
  }

  // Row blocks of fewer rows are cleared up front in one pass: a call per block would cost more
  // than the cache it saves.
  static constexpr int64_t kMinClearedBlockRows = 64;

  // Finds the deepest loop above the output's update such that it and every loop above it
  // range densely over output indices, and the indices they fix form a prefix of the
  // output's: each iteration of it owns one contiguous output slice. A loop over the outer
  // part of the next output index owns a block of it (the rows of a row block), which is
  // contiguous too. The slice is cleared while it is still in cache when accumulated, by the
  // thread that accumulates it.
  void PlaceOutputClearing(const ComputeSite& site) {
    if (e_.sparse_output_prefix > 0) return;
    const auto& out = e_.tensors[0].indices;
    NestNode* best = nullptr;
    int best_prefix = 0;
    bool best_block = false;
    std::vector<std::string> enclosing;
    for (NestNode* l : site.update_loops) {
      if (!Contains(out, l->var.index) || l->loop_kind == LoopKind::kLevelC ||
          l->loop_kind == LoopKind::kLevelS || l->loop_kind == LoopKind::kLevelQ)
        break;
      enclosing.push_back(l->var.name);
      int prefix = 0;
      while (prefix < static_cast<int>(out.size())) {
        bool fixed = true;
        for (const auto& part : parts_.at(out[prefix])) fixed &= Contains(enclosing, part);
        if (!fixed) break;
        ++prefix;
      }
      // Every enclosing variable must belong to the fixed prefix, or slices would be cleared
      // by several iterations.
      bool exact = true;
      for (const auto& name : enclosing) {
        const auto& index = vars_.at(name).index;
        exact &= std::find(out.begin(), out.begin() + prefix, index) != out.begin() + prefix;
      }
      if (prefix > 0 && exact) {
        best = l;
        best_prefix = prefix;
        best_block = false;
        continue;
      }
      // Every other enclosing variable in the fixed prefix, and this one the outer part of the
      // next output index.
      bool block = prefix < static_cast<int>(out.size()) && l->var.part == SplitPart::kOuter &&
                   l->var.index == out[prefix] &&
                   nest_->splits.at(l->var.index) >= kMinClearedBlockRows;
      for (const auto& name : enclosing) {
        const auto& index = vars_.at(name).index;
        block &= name == l->var.name ||
                 std::find(out.begin(), out.begin() + prefix, index) != out.begin() + prefix;
      }
      if (block) {
        best = l;
        best_prefix = prefix;
        best_block = true;
      }
    }
    if (!best) return;
    best->zero_prefix = best_prefix;
    best->zero_block = best_block;
    nest_->zero_output = false;
  }

  // True when the loops above the output's update visit each output element exactly once.
  bool OverwritesEachElementOnce(const ComputeSite& site) const {
    const bool sparse_out = e_.sparse_output_prefix > 0;
    const auto& out = e_.tensors[0].indices;
    for (NestNode* l : site.update_loops) {
      if (!Contains(out, l->var.index)) return false;
      if (sparse_out) {
        const bool prefix_level = l->level >= 0 && l->level < output_levels_;
        const bool trailing_dense = l->level < 0 && !e_.IsSparseIndex(l->var.index);
        if (!prefix_level && !trailing_dense) return false;
        if (prefix_level && nest_->splits.at(l->var.index) > 1) return false;
      } else if (l->loop_kind == LoopKind::kLevelC || l->loop_kind == LoopKind::kLevelS ||
                 l->loop_kind == LoopKind::kLevelQ) {
        return false;  // compressed levels skip empty fibers; coordinate lists repeat them
      }
    }
    // Every output index must be iterated above the update (reductions live below it).
    for (const auto& index : out) {
      for (const auto& part : parts_.at(index)) {
        bool found = false;
        for (NestNode* l : site.update_loops) found |= l->var.name == part;
        if (!found) return false;
      }
    }
    return true;
  }

  void MarkSimd(NestNode* n) {
    // Compressed loops stay scalar: their gathers through crd cost more than they save. A
    // reduction over one into a register gets the schedule's partial sums instead.
    if (n->kind == NestNode::Kind::kLoop && n->loop_kind == LoopKind::kLevelC && !n->parallel &&
        n->children[0]->kind == NestNode::Kind::kCompute && n->children[0]->accumulator >= 0 &&
        !n->children[0]->atomic) {
      n->unroll = s_.unroll;
    }
    // A coordinate list (a compressed level over every entry, a singleton below it) whose
    // entries each update the output: that many entries at a time, their products before their
    // updates, so the gathers of consecutive entries are not held up behind the scattered
    // stores; codegen also reads each batch's coordinates in one load per level.
    if (IsCoordinateListScatter(*n)) {
      n->unroll = s_.unroll;
      n->merge_runs = s_.merge_runs && s_.unroll == 4;
    }
    if (n->kind == NestNode::Kind::kLoop && n->loop_kind != LoopKind::kLevelC &&
        n->loop_kind != LoopKind::kLevelQ && n->children[0]->kind == NestNode::Kind::kCompute) {
      const NestNode* c = n->children[0].get();
      if (!c->atomic && !n->parallel) {
        if (c->accumulator >= 0) {
          n->simd = true;  // reduction into a register
        } else if (Contains(c->lhs.indices, n->var.index)) {
          n->simd = true;  // each iteration updates its own element
        }
      }
    }
    for (auto& c : n->children) MarkSimd(c.get());
  }

  // A compute that updates the dense output inside a split-inner dense loop (j0) over the
  // output's last index, with reduction loops (which do not index the output) between that
  // loop and the loops that fix the rest of the output element, updates the same j0 slice on
  // every reduction iteration. The outermost of those reduction loops keeps the slice in
  // registers instead (codegen), when every factor that varies with j0 is a dense row-major
  // operand whose last index is j (contiguous loads), or as an array updated by a SIMD loop
  // otherwise (the lanes of a sliced level gather their operands).
  // Dense reductions into a register whose varying factors are dense and contiguous along the
  // loop (SDDMM's dot products) run as vector partial sums; a compressed loop right above such
  // a reduction takes the schedule's unroll as the number of nonzeros handled together.
  void MarkVectorReductions(NestNode* n) {
    for (auto& c : n->children) MarkVectorReductions(c.get());
    if (n->kind != NestNode::Kind::kLoop) return;
    const NestNode* child = n->children[0].get();
    if (n->loop_kind == LoopKind::kDense && n->simd && n->var.part != SplitPart::kOuter &&
        child->kind == NestNode::Kind::kCompute && child->accumulator >= 0 && !child->atomic) {
      bool varying = false, contiguous = true;
      for (const auto& f : child->factors) {
        if (!Contains(f.indices, n->var.index)) continue;
        varying = true;
        contiguous &= f.tensor > 0 && f.tensor != e_.sparse &&
                      nest_->StorageIndices(f.tensor).back() == n->var.index;
      }
      n->vector_reduction = varying && contiguous;
    }
    if (n->loop_kind == LoopKind::kLevelC && !n->parallel && n->group == 1 &&
        child->kind == NestNode::Kind::kReduce && !child->atomic &&
        child->children[0]->kind == NestNode::Kind::kLoop && child->children[0]->vector_reduction) {
      n->unroll = s_.unroll;
    }
  }

  // Does a compute below `n` read a dense input through index `index`?
  bool GathersThrough(const NestNode& n, const std::string& index) const {
    if (n.kind == NestNode::Kind::kCompute) {
      for (const auto& f : n.factors) {
        if (f.tensor > 0 && f.tensor != e_.sparse && Contains(f.indices, index)) return true;
      }
    }
    for (const auto& c : n.children) {
      if (GathersThrough(*c, index)) return true;
    }
    return false;
  }

  // Serial compressed loops whose body reads a dense operand at their coordinate take the
  // schedule's prefetch distance.
  void MarkPrefetches(NestNode* n) {
    if (n->kind == NestNode::Kind::kLoop && n->loop_kind == LoopKind::kLevelC && !n->parallel &&
        GathersThrough(*n, n->var.index))
      n->prefetch = s_.prefetch;
    for (auto& c : n->children) MarkPrefetches(c.get());
  }

  void MarkRegisterTiles() {
    if (e_.sparse_output_prefix > 0) return;
    for (const auto& site : sites_) {
      NestNode* c = site.compute;
      if (c->accumulator >= 0 || c->atomic || c->lhs.tensor != 0 || site.loops.empty()) continue;
      NestNode* inner = site.loops.back();
      const std::string& j = inner->var.index;
      const bool lanes = inner->loop_kind == LoopKind::kLevelU && inner->sliced_level >= 0;
      if ((inner->loop_kind != LoopKind::kDense && !lanes) ||
          inner->var.part != SplitPart::kInner || !inner->simd || c->lhs.indices.empty() ||
          c->lhs.indices.back() != j)
        continue;
      bool contiguous = !lanes;
      for (const auto& f : c->factors) {
        if (!Contains(f.indices, j)) continue;
        contiguous &=
            f.tensor > 0 && f.tensor != e_.sparse && nest_->StorageIndices(f.tensor).back() == j;
      }
      // Rows of a block row between the reduction and the slice: a U level over the inner part
      // of another output index, small enough to keep a slice per row in registers.
      int above = static_cast<int>(site.loops.size()) - 2;
      NestNode* rows = nullptr;
      if (contiguous && above >= 0) {
        NestNode* r = site.loops[above];
        if (r->loop_kind == LoopKind::kLevelU && r->sliced_level < 0 &&
            r->var.part == SplitPart::kInner && r->var.index != j &&
            Contains(c->lhs.indices, r->var.index) && nest_->splits.at(r->var.index) <= 8) {
          rows = r;
          --above;
        }
      }
      NestNode* reduction = nullptr;
      for (int k = above; k >= 0; --k) {
        NestNode* l = site.loops[k];
        if (Contains(c->lhs.indices, l->var.index)) break;
        reduction = l;
      }
      if (!reduction) continue;
      bool parallel_inside = false;
      for (size_t k = 0; k < site.loops.size(); ++k) {
        if (site.loops[k] == reduction) {
          for (size_t m = k; m < site.loops.size(); ++m) parallel_inside |= site.loops[m]->parallel;
        }
      }
      if (parallel_inside) continue;
      reduction->tile_loop = inner;
      reduction->tile_gathers = !contiguous;
      bool complete = true;
      for (NestNode* l : site.loops) {
        if (l == reduction) break;
        complete &= Contains(c->lhs.indices, l->var.index);
      }
      reduction->tile_complete = complete;
      reduction->tile_rows = rows;
      bool every_row = true;
      for (NestNode* l : site.loops) {
        if (l == reduction) break;
        every_row &= l->loop_kind == LoopKind::kDense || l->loop_kind == LoopKind::kLevelU;
      }
      reduction->tile_covers_output = reduction->tile_complete && every_row;
    }
  }

  Expression e_;
  Schedule s_;
  std::unique_ptr<LoopNest> nest_;
  std::map<std::string, LoopVar> vars_;
  std::map<std::string, std::vector<std::string>> parts_;  // index -> its loop variables
  std::vector<ComputeSite> sites_;
  std::map<int, std::vector<NestNode*>> where_loops_;
  std::map<int, NestNode*> where_nodes_;
  int output_levels_ = 0;
};

}  // namespace

bool IsCoordinateListScatter(const NestNode& n) {
  if (n.kind != NestNode::Kind::kLoop || n.loop_kind != LoopKind::kLevelC || n.parallel ||
      n.group > 1 || n.children.size() != 1)
    return false;
  const NestNode& singleton = *n.children[0];
  if (singleton.kind != NestNode::Kind::kLoop || singleton.loop_kind != LoopKind::kLevelQ ||
      singleton.children.size() != 1)
    return false;
  const NestNode& compute = *singleton.children[0];
  return compute.kind == NestNode::Kind::kCompute && compute.accumulator < 0 && !compute.atomic &&
         !compute.assign && compute.lhs.tensor >= 0;
}

LowerOutcome Lower(const Expression& expression, const Schedule& schedule) {
  LowerOutcome outcome;
  try {
    outcome.nest = Lowerer(expression, schedule).Run();
  } catch (const Invalid& invalid) {
    outcome.error = OneLineText(invalid.reason);
  } catch (const InputError& error) {
    outcome.error = error.what();
  }
  return outcome;
}

namespace {
void PrintNode(const LoopNest& nest, const NestNode& n, int depth, std::string& out) {
  const std::string pad(2 * depth, ' ');
  auto access = [&](const NestAccess& a) {
    const std::string name =
        a.temp >= 0 ? nest.temps[a.temp].name : nest.expression.tensors[a.tensor].name;
    return a.indices.empty() ? name : name + "(" + Join(a.indices, ",") + ")";
  };
  switch (n.kind) {
    case NestNode::Kind::kLoop: {
      const char* kind = n.loop_kind == LoopKind::kDense    ? "dense"
                         : n.loop_kind == LoopKind::kLevelU ? "U"
                         : n.loop_kind == LoopKind::kLevelS ? "S"
                         : n.loop_kind == LoopKind::kLevelQ ? "Q"
                                                            : "C";
      out += pad + "for " + n.var.name + " [" + kind +
             (n.level >= 0 ? " level " + std::to_string(n.level) : "") +
             (n.parallel ? (n.balanced ? ", parallel balanced" : ", parallel") : "") +
             (n.simd ? ", simd" : "") + (n.vector_reduction ? ", vector partial sums" : "") +
             (n.unroll > 1 && n.children[0]->kind == NestNode::Kind::kReduce
                  ? ", " + std::to_string(n.unroll) + " nonzeros at a time"
              : n.unroll > 1 && IsCoordinateListScatter(n)
                  ? ", " + std::to_string(n.unroll) + " entries at a time"
              : n.unroll > 1 ? ", " + std::to_string(n.unroll) + " partial sums"
                             : "") +
             (n.group > 1 ? ", groups of " + std::to_string(n.group) : "") +
             (n.prefetch > 0 ? ", prefetch " + std::to_string(n.prefetch) + " ahead" : "") +
             (n.merge_runs ? ", runs of one output element merged" : "") +
             (n.tile_loop ? ", " + n.tile_loop->var.name + " slice" +
                                (n.tile_rows ? " per " + n.tile_rows->var.name : "") +
                                " in registers" + (n.tile_complete ? ", stored once" : "")
                          : "") +
             "]\n";
      if (n.zero_prefix > 0 || n.zero_block)
        out += pad + "  zero the " + nest.expression.tensors[0].name +
               (n.zero_block ? " block" : " slice") + "\n";
      break;
    }
    case NestNode::Kind::kWhere: {
      const Temporary& t = nest.temps[n.temp];
      out += pad + "where " +
             (t.indices.empty() ? t.name : t.name + "(" + Join(t.indices, ",") + ")") +
             (t.per_thread ? " [per thread]" : "") + "\n";
      break;
    }
    case NestNode::Kind::kReduce:
      out += pad + access(n.lhs) + (n.assign ? " = " : " += ") + "acc" +
             std::to_string(n.accumulator) + (n.atomic ? " [atomic]" : "") + " of:\n";
      break;
    case NestNode::Kind::kCompute: {
      std::string rhs;
      for (size_t k = 0; k < n.factors.size(); ++k) rhs += (k ? " * " : "") + access(n.factors[k]);
      const std::string target =
          n.accumulator >= 0 ? "acc" + std::to_string(n.accumulator) : access(n.lhs);
      out +=
          pad + target + (n.assign ? " = " : " += ") + rhs + (n.atomic ? " [atomic]" : "") + "\n";
      break;
    }
  }
  for (const auto& c : n.children) PrintNode(nest, *c, depth + 1, out);
}
}  // namespace

std::vector<std::string> LoopNest::StorageIndices(int tensor) const {
  std::vector<std::string> indices = expression.tensors[tensor].indices;
  if (tensor < static_cast<int>(transposed.size()) && transposed[tensor])
    std::reverse(indices.begin(), indices.end());
  return indices;
}

std::string LoopNest::ToString() const {
  std::string out;
  if (zero_output) out += "zero " + expression.tensors[0].name + "\n";
  for (size_t t = 0; t < transposed.size(); ++t) {
    if (transposed[t]) out += "transpose " + expression.tensors[t].name + "\n";
  }
  PrintNode(*this, *root, 0, out);
  return out;
}

}  // namespace sparsetune
