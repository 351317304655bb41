// BigSpace: the space of branched iteration graphs of an expression, over the internals of
// space_internal.hpp; and the cost variables and format that every schedule of it shares.

#include "sparseauto/space.hpp"

#include <algorithm>
#include <unordered_set>

#include "base/errors.hpp"
#include "sparseauto/space_internal.hpp"

namespace sparsetune {

using sparseauto_internal::u128;

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
  sparseauto_internal::Subproblems subproblems;
  sparseauto_internal::SpaceCounter counter{subproblems};
  sparseauto_internal::Stage1Summary stage1{subproblems};
  sparseauto_internal::TreeBuilder trees{subproblems};

  Impl(const Expression& expression, int max_memory_depth)
      : subproblems(expression, max_memory_depth) {}
};

BigSpace::BigSpace(const Expression& expression, int max_memory_depth)
    : impl_(std::make_unique<Impl>(expression, max_memory_depth)) {}
BigSpace::~BigSpace() = default;

const Expression& BigSpace::expression() const {
  return impl_->subproblems.expression();
}
const CostVariables& BigSpace::variables() const {
  return impl_->subproblems.variables();
}

std::optional<unsigned __int128> BigSpace::CountAll(int max_temporary_order, size_t budget) {
  return impl_->counter.CountAll(max_temporary_order, budget);
}

std::vector<BigSpace::DepthCount> BigSpace::Stage1Depths() {
  std::map<int, u128> merged;
  for (const auto& [sig, depths] : impl_->stage1.Depths(impl_->subproblems.root())) {
    for (const auto& [key, count] : depths) {
      merged[key] = sparseauto_internal::SaturatingAdd(merged[key], count);
    }
  }
  std::vector<DepthCount> out;
  for (const auto& [key, count] : merged) out.push_back({key / 256, key % 256, count});
  return out;
}

int64_t BigSpace::Stage1Classes(size_t budget) {
  const int root = impl_->subproblems.root();
  if (!impl_->stage1.ComputeClasses(root, budget)) return -1;
  std::unordered_set<uint64_t> all;
  for (const auto& [sig, classes] : impl_->stage1.classes(root)) {
    all.insert(classes.begin(), classes.end());
  }
  return static_cast<int64_t>(all.size());
}

std::vector<size_t> BigSpace::Materialize(int max_loop_depth, int max_memory_depth, size_t limit) {
  return impl_->trees.Materialize(max_loop_depth, max_memory_depth, limit);
}

size_t BigSpace::size() const {
  return impl_->trees.tree_count();
}
int BigSpace::loop_depth(size_t tree) const {
  return impl_->trees.tree(tree).loop_depth;
}
int BigSpace::memory_depth(size_t tree) const {
  return impl_->trees.tree(tree).memory_depth;
}
int BigSpace::time_id(size_t tree) const {
  return impl_->trees.tree(tree).time;
}
int BigSpace::memory_id(size_t tree) const {
  return impl_->trees.tree(tree).memory;
}
const Polynomial& BigSpace::polynomial(int id) const {
  return impl_->subproblems.polys().Get(id);
}
Schedule BigSpace::ToSchedule(size_t tree) const {
  return sparseauto_internal::RenderSchedule(impl_->subproblems, impl_->trees.nodes(),
                                             impl_->trees.tree_node(tree));
}
size_t BigSpace::problem_count() const {
  return impl_->subproblems.size();
}
size_t BigSpace::node_count() const {
  return impl_->trees.nodes().size();
}

}  // namespace sparsetune
