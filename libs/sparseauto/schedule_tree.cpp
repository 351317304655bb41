#include <algorithm>
#include <map>

#include "base/errors.hpp"
#include "sparseauto/space.hpp"
#include "sparseauto/temporary_names.hpp"

namespace sparsetune {

namespace {

class NotationWriter {
 public:
  NotationWriter(const Expression& e, const Schedule& s) : e_(e), s_(s), temporaries_(e) {
    for (const auto& [var, kind] : s.format) level_kind_[var] = kind;
  }

  std::string Run() {
    std::map<std::string, Temp> scope;
    ReadsSparse(s_.root, scope);
    std::map<std::string, std::string> names;
    return Section(s_.root, scope, names);
  }

 private:
  struct Temp {
    uint32_t mask = 0;  // expression tensors the temporary combines
  };

  // Tensors (bit per expression tensor id) that a compute's factors combine.
  uint32_t FactorMask(const Access& a, const std::map<std::string, Temp>& scope) const {
    auto it = scope.find(a.tensor);
    if (it != scope.end()) return it->second.mask;
    const int id = e_.TensorId(a.tensor);
    return id > 0 ? 1u << id : 0;
  }

  std::vector<Access> Factors(const ScheduleNode& n) const {
    if (n.compute.empty()) {
      std::vector<Access> out;
      for (size_t t = 1; t < e_.tensors.size(); ++t)
        out.push_back({e_.tensors[t].name, e_.tensors[t].indices, 0});
      return out;
    }
    return ParseAssignment(n.compute, "compute \"" + n.compute + "\"").factors;
  }

  // Records each temporary's mask; returns whether the subtree reads the sparse operand, and
  // remembers that per section so primes go on the sparse operand's path only.
  bool ReadsSparse(const ScheduleNode& n, std::map<std::string, Temp>& scope) {
    bool reads = false;
    if (n.is_where()) {
      const Access t = ParseAccess(n.temp, "temporary \"" + n.temp + "\"");
      reads |= ReadsSparse(*n.producer, scope);
      scope[t.tensor].mask = SubtreeMask(*n.producer, scope);
      reads |= ReadsSparse(*n.consumer, scope);
    } else {
      for (const auto& f : Factors(n)) reads |= e_.TensorId(f.tensor) == e_.sparse;
    }
    sparse_path_[&n] = reads;
    return reads;
  }

  uint32_t SubtreeMask(const ScheduleNode& n, const std::map<std::string, Temp>& scope) const {
    if (n.is_where()) return SubtreeMask(*n.producer, scope) | SubtreeMask(*n.consumer, scope);
    uint32_t mask = 0;
    for (const auto& f : Factors(n)) mask |= FactorMask(f, scope);
    return mask;
  }

  std::string Loops(const ScheduleNode& n) const {
    const bool on_path = sparse_path_.at(&n);
    const auto& modes = e_.sparse_input().indices;
    std::string out;
    for (size_t k = 0; k < n.loops.size(); ++k) {
      const std::string& v = n.loops[k];
      auto kind = level_kind_.find(v);
      const bool root_level = !modes.empty() && v == modes[0];
      const bool compressed = on_path && kind != level_kind_.end() &&
                              kind->second == LevelKind::kCompressed && !root_level;
      out += (k ? "," : "") + v + (compressed ? "'" : "");
    }
    return out;
  }

  std::string Section(const ScheduleNode& n, const std::map<std::string, Temp>& scope,
                      std::map<std::string, std::string> names) {
    const std::string loops = Loops(n);
    if (n.is_where()) {
      const Access t = ParseAccess(n.temp, "temporary \"" + n.temp + "\"");
      const std::string renamed = temporaries_.Next(t.indices.empty());
      const std::string temp_text = AccessText(renamed, t.indices);
      names[t.tensor] = renamed;
      const std::string producer = Section(*n.producer, scope, names);
      const std::string consumer = Section(*n.consumer, scope, names);
      return loops + (loops.empty() ? "" : " ") + "<" + temp_text + "; " + producer + " | " +
             consumer + ">";
    }
    std::string lhs;
    std::vector<Access> factors;
    if (n.compute.empty()) {
      lhs = AccessText(e_.tensors[0].name, e_.tensors[0].indices);
    } else {
      const Assignment a = ParseAssignment(n.compute, "compute \"" + n.compute + "\"");
      auto renamed = names.find(a.lhs.tensor);
      lhs = AccessText(renamed != names.end() ? renamed->second : a.lhs.tensor, a.lhs.indices);
    }
    factors = Factors(n);
    std::vector<std::pair<int, std::string>> ordered;
    for (const auto& f : factors) {
      const uint32_t mask = FactorMask(f, scope);
      const int first = mask ? __builtin_ctz(mask) : 64;
      auto renamed = names.find(f.tensor);
      ordered.emplace_back(
          first, AccessText(renamed != names.end() ? renamed->second : f.tensor, f.indices));
    }
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string compute = lhs + " += ";
    for (size_t k = 0; k < ordered.size(); ++k) compute += (k ? "*" : "") + ordered[k].second;
    return loops + (loops.empty() ? "" : ": ") + compute;
  }

  const Expression& e_;
  const Schedule& s_;
  std::map<std::string, LevelKind> level_kind_;
  std::map<const ScheduleNode*, bool> sparse_path_;
  TemporaryNames temporaries_;
};

// Costs of any (unsplit) schedule tree, computed directly on the tree: an independent check
// of the compositional costs of the enumeration.
class CostWriter {
 public:
  CostWriter(const Expression& e, const CostVariables& vars) : e_(e), vars_(vars) {}

  ScheduleCosts Run(const ScheduleNode& root) {
    ScheduleCosts costs;
    Walk(root, Polynomial::Constant(1), 0, costs);
    return costs;
  }

 private:
  bool ReadsSparse(const ScheduleNode& n) const {
    if (n.is_where()) return ReadsSparse(*n.producer) || ReadsSparse(*n.consumer);
    if (n.compute.empty()) return true;
    for (const auto& f : ParseAssignment(n.compute, "compute \"" + n.compute + "\"").factors) {
      if (e_.TensorId(f.tensor) == e_.sparse) return true;
    }
    return false;
  }

  void Walk(const ScheduleNode& n, Polynomial outer, int depth, ScheduleCosts& costs) {
    const bool sparse_path = ReadsSparse(n);
    for (const auto& loop : n.loops) {
      const int x = e_.IndexId(loop);
      if (x < 0)
        throw InputError("loop " + loop + " is not an index (split schedules have no " +
                         "SparseAuto cost)");
      const int v = sparse_path && vars_.fiber[x] >= 0 ? vars_.fiber[x] : vars_.dim[x];
      outer = outer * Polynomial::Variable(v);
    }
    depth += static_cast<int>(n.loops.size());
    if (!n.is_where()) {
      costs.time = costs.time + outer;
      costs.loop_depth = std::max(costs.loop_depth, depth);
      return;
    }
    const Access t = ParseAccess(n.temp, "temporary \"" + n.temp + "\"");
    if (!t.indices.empty()) {
      std::vector<int> dims;
      for (const auto& index : t.indices) dims.push_back(vars_.dim[e_.IndexId(index)]);
      costs.memory = costs.memory + Polynomial::Product(dims);
    }
    costs.memory_depth = std::max(costs.memory_depth, static_cast<int>(t.indices.size()));
    Walk(*n.producer, outer, depth, costs);
    Walk(*n.consumer, outer, depth, costs);
  }

  const Expression& e_;
  const CostVariables& vars_;
};

}  // namespace

ScheduleCosts CostOfSchedule(const Expression& expression, const Schedule& schedule) {
  const CostVariables vars = MakeCostVariables(expression);
  return CostWriter(expression, vars).Run(schedule.root);
}

std::string ScheduleNotation(const Expression& expression, const Schedule& schedule) {
  return NotationWriter(expression, schedule).Run();
}

}  // namespace sparsetune
