// A materialized tree as a schedule that Lower() accepts: loops, where nodes with named
// temporaries, and compute statements.

#include <algorithm>

#include "sparseauto/space_internal.hpp"
#include "sparseauto/temporary_names.hpp"

namespace sparsetune::sparseauto_internal {

namespace {

class TreeRenderer {
 public:
  TreeRenderer(const Subproblems& subproblems, const std::vector<Node>& nodes)
      : sub_(subproblems), e_(subproblems.expression()), nodes_(nodes), temporaries_(e_) {}

  Schedule ToSchedule(int32_t node) {
    Schedule s;
    s.format = SparseAutoFormat(e_);
    Render(node, s.root, AccessText(e_.tensors[0].name, e_.tensors[0].indices), {});
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

 private:
  // Order of an operand's remaining indices along the path to the compute that uses it:
  // which = -1 for the left-hand side, else a factor position.
  std::vector<int8_t> PathOrder(int32_t node, int which) const {
    const Node& n = nodes_[node];
    const Problem& q = sub_.problem(n.problem);
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
      child_which = Subproblems::ChildPosition(q, which, sub_.problem(nodes_[child].problem));
    }
    const auto inner = PathOrder(child, child_which);
    out.insert(out.end(), inner.begin(), inner.end());
    return out;
  }

  void Render(int32_t node, ScheduleNode& out, const std::string& lhs_text,
              std::map<uint32_t, std::string> scope) {
    const Node& n = nodes_[node];
    const Problem& q = sub_.problem(n.problem);
    for (int k = 0; k < n.num_loops; ++k) out.loops.push_back(e_.indices[LoopAt(n, k)]);
    if (n.producer < 0) {
      // Factors ordered by the first expression tensor they contain.
      std::vector<std::pair<int, std::string>> factors;
      for (const auto& f : q.factors) {
        const int first = __builtin_ctz(f.mask) + 1;
        factors.emplace_back(
            first, f.temp ? scope.at(f.mask)
                          : AccessText(e_.tensors[first].name, e_.tensors[first].indices));
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
    for (int8_t x : order) temp_indices.push_back(e_.indices[x]);
    const std::string temp_text = AccessText(temporaries_.Next(shared == 0), temp_indices);
    out.temp = temp_text;
    out.producer = std::make_unique<ScheduleNode>();
    out.consumer = std::make_unique<ScheduleNode>();
    Render(n.producer, *out.producer, temp_text, scope);
    scope[temp_mask] = temp_text;
    Render(n.consumer, *out.consumer, lhs_text, scope);
  }

  const Subproblems& sub_;
  const Expression& e_;
  const std::vector<Node>& nodes_;
  TemporaryNames temporaries_;  // named in pre-order
};

}  // namespace

Schedule RenderSchedule(const Subproblems& subproblems, const std::vector<Node>& nodes,
                        int32_t node) {
  return TreeRenderer(subproblems, nodes).ToSchedule(node);
}

}  // namespace sparsetune::sparseauto_internal
