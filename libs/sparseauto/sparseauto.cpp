#include "sparseauto/sparseauto.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <z3++.h>

#include "base/errors.hpp"
#include "sparseauto/constraints.hpp"
#include "sparseauto/space.hpp"

namespace sparsetune {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// True when a < b beyond rounding: values are sums of positive terms evaluated in long double.
bool ClearlyLess(long double a, long double b) {
  return a < b - 1e-9L * std::max(std::fabs(a), std::fabs(b));
}

// ---- Stage 3: the region and pairwise dominance ------------------------------------------

class Region {
 public:
  // sparse_mode[v]: variable v is the dimension of a mode of the sparse operand.
  Region(const CostVariables& vars, const std::vector<bool>& sparse_mode,
         const std::vector<Constraint>& user, unsigned timeout_ms)
      : solver_(ctx_, "QF_NRA") {
    z3::params p(ctx_);
    p.set("timeout", timeout_ms);
    solver_.set(p);
    for (int v = 0; v < vars.size(); ++v) z3vars_.push_back(ctx_.real_const(vars.names[v].c_str()));

    std::set<int> named;
    for (const auto& c : user) named.insert(c.variables.begin(), c.variables.end());
    for (int v = 0; v < vars.size(); ++v) {
      const std::string& name = vars.names[v];
      const z3::expr& x = z3vars_[v];
      if (vars.is_fiber[v]) {
        const std::string& dim = vars.names[vars.dim[vars.index_of[v]]];
        Add(x > 0 && x <= z3vars_[vars.dim[vars.index_of[v]]], "0 < " + name + " <= " + dim);
        if (!named.count(v)) Add(x >= 1 && x <= 1000, "1 <= " + name + " <= 1000");
      } else {
        Add(x >= 1, name + " >= 1");
        if (named.count(v)) continue;
        if (sparse_mode[v]) {
          Add(x >= 1000 && x <= 10000000, "1000 <= " + name + " <= 10000000");
        } else {
          Add(x >= 8 && x <= 256, "8 <= " + name + " <= 256");
        }
      }
    }
    for (const auto& c : user) Add(ToZ3(c), c.text);
  }

  const std::vector<std::string>& texts() const { return texts_; }
  int queries() const { return queries_; }
  int unknowns() const { return unknowns_; }

  // Throws InputError when no sizes satisfy the region; keeps a first witness point.
  void CheckSatisfiable(const std::vector<Constraint>& user) {
    const z3::check_result r = Check(ctx_.bool_val(true));
    if (r == z3::unsat) {
      std::string list;
      for (const auto& c : user) list += (list.empty() ? "" : "; ") + c.text;
      throw InputError("the constraints are contradictory: no sizes satisfy " +
                       (list.empty() ? std::string("the default ranges") : list) +
                       " together with the inferred bounds (Z3: unsat)");
    }
  }

  // True when class c dominates class s: c is never worse than s in time or memory anywhere
  // in the region (Z3 proves the opposite unsatisfiable) and strictly better somewhere.
  bool Dominates(const Polynomial& tc, const Polynomial& nc, const Polynomial& ts,
                 const Polynomial& ns) {
    // Is s better somewhere? Witness points first, then signs of coefficients, then Z3.
    for (const auto& p : pool_) {
      if (ClearlyLess(ts.Evaluate(p), tc.Evaluate(p)) ||
          ClearlyLess(ns.Evaluate(p), nc.Evaluate(p))) {
        return false;
      }
    }
    const Polynomial dt = ts - tc, dn = ns - nc;  // s minus c
    const Polynomial mdt = tc - ts, mdn = nc - ns;
    // Every variable is positive in the region, so a non-zero polynomial with non-negative
    // coefficients is positive everywhere in it.
    if ((!mdt.IsZero() && mdt.NonNegativeCoefficients()) ||
        (!mdn.IsZero() && mdn.NonNegativeCoefficients())) {
      return false;
    }
    if (!(dt.NonNegativeCoefficients() && dn.NonNegativeCoefficients())) {
      const z3::check_result better = Check(ToZ3(ts) < ToZ3(tc) || ToZ3(ns) < ToZ3(nc));
      if (better != z3::unsat) return false;  // sat, or unknown: keep s
    }
    // Never better; is it worse somewhere?
    if ((!dt.IsZero() && dt.NonNegativeCoefficients()) ||
        (!dn.IsZero() && dn.NonNegativeCoefficients())) {
      return true;
    }
    for (const auto& p : pool_) {
      if (ClearlyLess(tc.Evaluate(p), ts.Evaluate(p)) ||
          ClearlyLess(nc.Evaluate(p), ns.Evaluate(p))) {
        return true;
      }
    }
    return Check(ToZ3(ts) > ToZ3(tc) || ToZ3(ns) > ToZ3(nc)) == z3::sat;
  }

  // A point of the region for ordering classes (the first witness).
  const std::vector<long double>* SomePoint() const {
    return pool_.empty() ? nullptr : &pool_.front();
  }

 private:
  void Add(const z3::expr& e, const std::string& text) {
    solver_.add(e);
    texts_.push_back(text);
  }

  z3::check_result Check(const z3::expr& condition) {
    ++queries_;
    solver_.push();
    solver_.add(condition);
    z3::check_result r = z3::unknown;
    try {
      r = solver_.check();
    } catch (const z3::exception&) {
      r = z3::unknown;
    }
    if (r == z3::sat) KeepWitness();
    if (r == z3::unknown) ++unknowns_;
    solver_.pop();
    return r;
  }

  void KeepWitness() {
    z3::model m = solver_.get_model();
    std::vector<long double> point;
    for (const auto& x : z3vars_) {
      z3::expr v = m.eval(x, true);
      std::string text;
      try {
        text = v.get_decimal_string(30);
      } catch (const z3::exception&) {
        return;
      }
      point.push_back(std::strtold(text.c_str(), nullptr));
    }
    pool_.push_back(std::move(point));
  }

  z3::expr ToZ3(const Polynomial& p) {
    z3::expr sum = ctx_.real_val(0);
    for (const auto& t : p.terms()) {
      z3::expr term = ctx_.real_val(std::to_string(t.coefficient).c_str());
      for (int v = 0; v < kMaxPolyVars; ++v) {
        for (int e = 0; e < t.monomial[v]; ++e) term = term * z3vars_[v];
      }
      sum = sum + term;
    }
    return sum;
  }

  z3::expr ToZ3(const ConstraintExpr& e) {
    switch (e.op) {
      case ConstraintExpr::Op::kNumber:
        return ctx_.real_val(e.number.c_str());
      case ConstraintExpr::Op::kVariable:
        return ToZ3(e.monomial);
      case ConstraintExpr::Op::kAdd:
        return ToZ3(e.args[0]) + ToZ3(e.args[1]);
      case ConstraintExpr::Op::kSub:
        return ToZ3(e.args[0]) - ToZ3(e.args[1]);
      case ConstraintExpr::Op::kMul:
        return ToZ3(e.args[0]) * ToZ3(e.args[1]);
      case ConstraintExpr::Op::kDiv:
        return ToZ3(e.args[0]) / ToZ3(e.args[1]);
      case ConstraintExpr::Op::kNeg:
        return -ToZ3(e.args[0]);
      case ConstraintExpr::Op::kPow: {
        z3::expr base = ToZ3(e.args[0]);
        z3::expr out = ctx_.real_val(1);
        for (int k = 0; k < e.power; ++k) out = out * base;
        return out;
      }
    }
    return ctx_.real_val(0);
  }

  z3::expr ToZ3(const Constraint& c) {
    z3::expr all = ctx_.bool_val(true);
    for (size_t k = 0; k < c.relations.size(); ++k) {
      const z3::expr a = ToZ3(c.terms[k]), b = ToZ3(c.terms[k + 1]);
      switch (c.relations[k]) {
        case Constraint::Relation::kLess:
          all = all && a < b;
          break;
        case Constraint::Relation::kLessEqual:
          all = all && a <= b;
          break;
        case Constraint::Relation::kGreater:
          all = all && a > b;
          break;
        case Constraint::Relation::kGreaterEqual:
          all = all && a >= b;
          break;
        case Constraint::Relation::kEqual:
          all = all && a == b;
          break;
      }
    }
    return all;
  }

  z3::context ctx_;
  z3::solver solver_;
  std::vector<z3::expr> z3vars_;
  std::vector<std::string> texts_;
  std::vector<std::vector<long double>> pool_;
  int queries_ = 0, unknowns_ = 0;
};

// ---- Stage 5: cache cost of a schedule tree ----------------------------------------------

struct CacheScore {
  long double strided = 0;
  int mismatches = 0;
  int restreams = 0;  // per level loop of the sparse operand, the dense loops around it
};

void ScoreCache(const Expression& e, const ScheduleNode& n, std::vector<std::string> loops,
                const std::map<std::string, long double>& size, CacheScore& score) {
  loops.insert(loops.end(), n.loops.begin(), n.loops.end());
  if (n.is_where()) {
    ScoreCache(e, *n.producer, loops, size, score);
    ScoreCache(e, *n.consumer, loops, size, score);
    return;
  }
  std::vector<std::vector<std::string>> accesses;
  if (n.compute.empty()) {
    for (const auto& t : e.tensors) accesses.push_back(t.indices);
  } else {
    const Assignment a = ParseAssignment(n.compute, "compute");
    accesses.push_back(a.lhs.indices);
    for (const auto& f : a.factors) accesses.push_back(f.indices);
  }
  // A dense loop around a level loop of the sparse operand traverses that level again.
  bool reads_sparse = n.compute.empty();
  if (!n.compute.empty()) {
    for (const auto& f : ParseAssignment(n.compute, "compute").factors)
      reads_sparse |= e.TensorId(f.tensor) == e.sparse;
  }
  if (reads_sparse) {
    int dense = 0;
    for (const auto& loop : loops) {
      if (e.IsSparseIndex(loop)) {
        score.restreams += dense;
      } else {
        ++dense;
      }
    }
  }
  auto position = [&](const std::string& index) {
    return static_cast<int>(std::find(loops.begin(), loops.end(), index) - loops.begin());
  };
  for (const auto& indices : accesses) {
    // A tensor indexed by the innermost loop anywhere but last is read with a stride.
    if (!loops.empty()) {
      auto it = std::find(indices.begin(), indices.end(), loops.back());
      if (it != indices.end() && std::next(it) != indices.end()) {
        long double stride = 1;
        for (++it; it != indices.end(); ++it) stride *= size.at(*it);
        score.strided += stride;
      }
    }
    for (size_t a = 0; a < indices.size(); ++a) {
      for (size_t b = a + 1; b < indices.size(); ++b) {
        if (position(indices[b]) < position(indices[a])) ++score.mismatches;
      }
    }
  }
}

int64_t ParseCacheSize(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.empty()) return 0;
  int64_t scale = 1;
  const char unit = text.back();
  if (unit == 'K' || unit == 'k') scale = 1024;
  if (unit == 'M' || unit == 'm') scale = 1024 * 1024;
  if (unit == 'G' || unit == 'g') scale = int64_t(1024) * 1024 * 1024;
  if (scale > 1) text.pop_back();
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  return end && *end == '\0' && value > 0 ? value * scale : 0;
}

}  // namespace

int64_t DetectLlcBytes() {
  namespace fs = std::filesystem;
  int best_level = 0;
  int64_t best = 0;
  std::error_code ec;
  const fs::path base = "/sys/devices/system/cpu/cpu0/cache";
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("index", 0) != 0) continue;
    std::ifstream level_file(entry.path() / "level"), size_file(entry.path() / "size");
    std::ifstream type_file(entry.path() / "type");
    int level = 0;
    std::string size, type;
    if (!(level_file >> level) || !std::getline(size_file, size)) continue;
    std::getline(type_file, type);
    if (type == "Instruction") continue;
    const int64_t bytes = ParseCacheSize(size);
    if (bytes > 0 && (level > best_level || (level == best_level && bytes > best))) {
      best_level = level;
      best = bytes;
    }
  }
  if (best > 0) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return l3;
#endif
  return int64_t(32) * 1024 * 1024;
}

std::map<std::string, long double> ConcreteValues(const Expression& e,
                                                  const std::vector<int64_t>& dims,
                                                  const std::vector<int64_t>& prefix_nnz,
                                                  const std::map<std::string, int64_t>& dense) {
  std::map<std::string, long double> values;
  const auto& modes = e.sparse_input().indices;
  for (size_t m = 0; m < modes.size() && m < dims.size(); ++m) {
    values[modes[m]] = static_cast<long double>(dims[m]);
    if (m == 0 || m >= prefix_nnz.size()) continue;
    const long double above =
        m == 1 ? static_cast<long double>(dims[0]) : static_cast<long double>(prefix_nnz[m - 1]);
    values[modes[m] + "pos"] = above > 0 ? prefix_nnz[m] / above : 0;
  }
  for (const auto& [index, size] : dense) {
    if (e.IndexId(index) >= 0 && !e.IsSparseIndex(index)) {
      values[index] = static_cast<long double>(size);
    }
  }
  return values;
}

SparseAutoResult RunSparseAuto(const Expression& e, const SparseAutoOptions& options) {
  SparseAutoResult result;
  result.expression = e.text;
  BigSpace space(e, options.max_memory_depth);
  const CostVariables& vars = space.variables();
  result.variables = vars.names;

  // Everything about the input is checked before the enumeration runs.
  std::vector<Constraint> user;
  for (const auto& text : options.constraints) user.push_back(ParseConstraint(text, vars));
  std::vector<bool> sparse_mode(vars.size(), false);
  for (int v = 0; v < vars.size(); ++v) {
    sparse_mode[v] = !vars.is_fiber[v] && e.IsSparseIndex(e.indices[vars.index_of[v]]);
  }
  Region region(vars, sparse_mode, user, options.solver_timeout_ms);
  region.CheckSatisfiable(user);
  result.constraints = region.texts();

  std::vector<long double> point(vars.size());
  for (int v = 0; v < vars.size(); ++v) {
    auto it = options.values.find(vars.names[v]);
    if (it != options.values.end()) {
      point[v] = it->second;
    } else if (vars.is_fiber[v]) {
      point[v] = e.sparse_input().indices.size() == 2 ? 16 : 8;
    } else {
      point[v] = e.IsSparseIndex(e.indices[vars.index_of[v]]) ? 100000 : 16;
    }
    result.values[vars.names[v]] = point[v];
  }
  std::map<std::string, long double> index_size;
  for (size_t x = 0; x < e.indices.size(); ++x) index_size[e.indices[x]] = point[vars.dim[x]];

  // Generated.
  Clock::time_point start = Clock::now();
  SparseAutoStage generated{"generated", 0, -1, 0};
  const auto all = space.CountAll(16, options.count_budget);
  generated.count = all ? *all : 0;
  generated.count_known = all.has_value();
  generated.ms = MsSince(start);
  result.stages.push_back(generated);

  // Stage 1.
  start = Clock::now();
  const auto depths = space.Stage1Depths();
  SparseAutoStage stage1{"stage1_memory_depth", 0, -1, 0};
  for (const auto& d : depths) stage1.count += d.count;
  if (stage1.count <= options.stage1_classes_limit) {
    stage1.classes = space.Stage1Classes(std::numeric_limits<size_t>::max());
  }
  stage1.ms = MsSince(start);
  result.stages.push_back(stage1);

  // Stage 2: Pareto-minimal (loop depth, memory depth).
  start = Clock::now();
  std::vector<std::pair<int, int>> frontier;
  for (const auto& a : depths) {
    bool dominated = false;
    for (const auto& b : depths) {
      dominated |= (a.loop_depth > b.loop_depth && a.memory_depth >= b.memory_depth) ||
                   (a.loop_depth >= b.loop_depth && a.memory_depth > b.memory_depth);
    }
    if (!dominated) frontier.emplace_back(a.loop_depth, a.memory_depth);
  }
  std::vector<size_t> trees;
  for (const auto& [l, m] : frontier) {
    const auto made = space.Materialize(l, m);
    trees.insert(trees.end(), made.begin(), made.end());
  }
  std::map<std::pair<int, int>, std::vector<size_t>> classes;  // (time id, memory id) -> trees
  for (size_t t : trees) classes[{space.time_id(t), space.memory_id(t)}].push_back(t);
  result.stages.push_back(
      {"stage2_depth_poset", trees.size(), int64_t(classes.size()), MsSince(start)});

  // Stage 3: Z3 over classes, best candidates at a witness point first so that dominators
  // tend to be tried early (the outcome does not depend on the order: dominance is
  // transitive).
  start = Clock::now();
  std::vector<std::pair<int, int>> keys;
  for (const auto& [key, members] : classes) keys.push_back(key);
  if (const auto* p = region.SomePoint()) {
    std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
      const long double ta = space.polynomial(a.first).Evaluate(*p);
      const long double tb = space.polynomial(b.first).Evaluate(*p);
      if (ta != tb) return ta < tb;
      return space.polynomial(a.second).Evaluate(*p) < space.polynomial(b.second).Evaluate(*p);
    });
  }
  std::vector<bool> alive(keys.size(), true);
  for (size_t s = 0; s < keys.size(); ++s) {
    for (size_t c = 0; c < keys.size() && alive[s]; ++c) {
      if (c == s || !alive[c]) continue;
      if (region.Dominates(space.polynomial(keys[c].first), space.polynomial(keys[c].second),
                           space.polynomial(keys[s].first), space.polynomial(keys[s].second))) {
        alive[s] = false;
      }
    }
  }
  SparseAutoStage stage3{"stage3_smt", 0, 0, 0};
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!alive[k]) continue;
    ++stage3.classes;
    for (size_t t : classes[keys[k]]) {
      SparseAutoCandidate c;
      c.schedule = space.ToSchedule(t);
      c.notation = ScheduleNotation(e, c.schedule);
      c.time = space.polynomial(keys[k].first);
      c.memory = space.polynomial(keys[k].second);
      c.time_text = c.time.ToString(vars.display);
      c.memory_text = c.memory.ToString(vars.display);
      c.loop_depth = space.loop_depth(t);
      c.memory_depth = space.memory_depth(t);
      c.class_id = static_cast<int>(k);
      result.survivors.push_back(std::move(c));
    }
  }
  stage3.count = result.survivors.size();
  {
    SparseAutoCandidate linear;
    linear.schedule = FixedCsrSchedule(e);
    linear.notation = ScheduleNotation(e, linear.schedule);
    bool present = false;
    for (const auto& c : result.survivors) present |= c.notation == linear.notation;
    if (!present) {
      const ScheduleCosts costs = CostOfSchedule(e, linear.schedule);
      linear.time = costs.time;
      linear.memory = costs.memory;
      linear.time_text = linear.time.ToString(vars.display);
      linear.memory_text = linear.memory.ToString(vars.display);
      linear.loop_depth = costs.loop_depth;
      linear.memory_depth = costs.memory_depth;
      linear.class_id = -1;
      linear.baseline = true;
      result.survivors.push_back(std::move(linear));
    }
  }
  stage3.ms = MsSince(start);
  result.stages.push_back(stage3);
  result.solver_queries = region.queries();
  result.solver_unknowns = region.unknowns();

  // Stage 4: concrete sizes; the temporaries must fit in half of the last-level cache.
  start = Clock::now();
  result.llc_bytes = options.llc_bytes > 0 ? options.llc_bytes : DetectLlcBytes();
  result.memory_limit_bytes = result.llc_bytes / 2;
  for (auto& c : result.survivors) {
    c.time_value = c.time.Evaluate(point);
    c.memory_bytes = c.memory.Evaluate(point) * options.value_bytes;
  }
  bool any_fits = false;
  for (const auto& c : result.survivors) any_fits |= c.memory_bytes <= result.memory_limit_bytes;
  auto fits = [&](const SparseAutoCandidate& c) {
    return any_fits ? c.memory_bytes <= result.memory_limit_bytes : true;
  };
  const SparseAutoCandidate* best = nullptr;
  for (const auto& c : result.survivors) {
    if (!fits(c)) continue;
    // Without any fitting schedule, the least memory wins before time.
    const bool better =
        !best ||
        (any_fits ? (c.time_value < best->time_value ||
                     (c.time_value == best->time_value && c.memory_bytes < best->memory_bytes))
                  : (c.memory_bytes < best->memory_bytes ||
                     (c.memory_bytes == best->memory_bytes && c.time_value < best->time_value)));
    if (better) best = &c;
  }
  SparseAutoStage stage4{"stage4_time_memory", 0, 0, 0};
  std::set<int> stage4_classes;
  for (auto& c : result.survivors) {
    c.stage4 =
        best && fits(c) && c.time_value == best->time_value && c.memory_bytes == best->memory_bytes;
    if (c.stage4) {
      ++stage4.count;
      stage4_classes.insert(c.class_id);
    }
  }
  stage4.classes = static_cast<int64_t>(stage4_classes.size());
  stage4.ms = MsSince(start);
  result.stages.push_back(stage4);

  // Stage 5: the cache tie-break among stage-4 survivors.
  start = Clock::now();
  for (auto& c : result.survivors) {
    CacheScore score;
    ScoreCache(e, c.schedule.root, {}, index_size, score);
    c.cache_cost = score.strided;
    c.order_mismatches = score.mismatches;
    c.restreams = score.restreams;
  }
  // Best first: stage-4 survivors, then by time, memory, cache cost, order, enumeration order.
  std::vector<size_t> order(result.survivors.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = result.survivors[a];
    const auto& y = result.survivors[b];
    if (x.stage4 != y.stage4) return x.stage4;
    if (fits(x) != fits(y)) return fits(x);
    if (x.time_value != y.time_value) return x.time_value < y.time_value;
    if (x.memory_bytes != y.memory_bytes) return x.memory_bytes < y.memory_bytes;
    if (x.cache_cost != y.cache_cost) return x.cache_cost < y.cache_cost;
    if (x.order_mismatches != y.order_mismatches) return x.order_mismatches < y.order_mismatches;
    return x.restreams < y.restreams;
  });
  std::vector<SparseAutoCandidate> sorted;
  for (size_t k : order) sorted.push_back(std::move(result.survivors[k]));
  result.survivors = std::move(sorted);
  result.chosen = result.survivors.empty() ? -1 : 0;
  result.stages.push_back({"stage5_cache", result.survivors.empty() ? 0u : 1u,
                           result.survivors.empty() ? 0 : 1, MsSince(start)});
  return result;
}

}  // namespace sparsetune
