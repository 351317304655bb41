#include "heuristic/scorch.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/strings.hpp"
#include "ir/loop_nest.hpp"

namespace sparsetune {

namespace {

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// A factor or left-hand side of a statement: an expression tensor or a temporary.
struct Operand {
  std::string name;
  std::vector<std::string> vars;
  int tensor = -1;  // Expression::tensors id; -1 for a temporary

  std::string Text() const {
    if (vars.empty()) return name;
    return name + "(" + Join(vars, ",") + ")";
  }
  bool Has(const std::string& v) const {
    return std::find(vars.begin(), vars.end(), v) != vars.end();
  }
};

// A plan for one statement: a chain of loops ending in a compute or in a where node.
// Temporaries carry provisional names ("#3") until the chosen plan is written out.
struct Plan {
  std::vector<std::string> loops;
  Operand lhs;                   // leaves
  std::vector<Operand> factors;  // leaves
  Operand temp;                  // where nodes
  std::unique_ptr<Plan> producer, consumer;
  double cost = 0;

  int Wheres() const { return producer ? 1 + producer->Wheres() + consumer->Wheres() : 0; }

  // Final temporary names in order of appearance: scalars t, t2, ..., dense ones T, T2, ...
  void NameTemporaries(std::map<std::string, std::string>& names, int counters[2]) const {
    if (!producer) return;
    const bool scalar = temp.vars.empty();
    const int n = ++counters[scalar];
    const std::string base = scalar ? "t" : "T";
    names[temp.name] = n == 1 ? base : base + std::to_string(n);
    producer->NameTemporaries(names, counters);
    consumer->NameTemporaries(names, counters);
  }

  nlohmann::json ToJson(bool root, const std::map<std::string, std::string>& names) const {
    auto text = [&](Operand o) {
      auto it = names.find(o.name);
      if (it != names.end()) o.name = it->second;
      return o.Text();
    };
    nlohmann::json out = {{"loops", loops}};
    if (producer) {
      out["where"] = {{"temp", text(temp)},
                      {"producer", producer->ToJson(false, names)},
                      {"consumer", consumer->ToJson(false, names)}};
    } else if (!root) {
      std::vector<std::string> texts;
      for (const auto& f : factors) texts.push_back(text(f));
      out["compute"] = text(lhs) + " += " + Join(texts, " * ");
    }
    return out;
  }
};

class Scheduler {
 public:
  Scheduler(const Expression& expression, const HeuristicInput& input)
      : e_(expression), in_(input), k_(input.constants) {
    modes_ = e_.sparse_input().indices;
    for (const auto& v : e_.indices) {
      auto it = in_.sizes.find(v);
      size_[v] = it != in_.sizes.end() && it->second > 0 ? it->second : k_.default_dim_size;
    }
    measured_ = in_.prefix_nnz.size() == modes_.size();
    for (size_t l = 0; l < modes_.size(); ++l) {
      const double d = static_cast<double>(size_[modes_[l]]);
      // Without measurements: Scorch's rho below the first level; the first level (rows,
      // slices) of real operands is mostly non-empty.
      double occupancy = l == 0 ? 1.0 : k_.rho;
      if (measured_) {
        const double parents = l == 0 ? 1.0 : static_cast<double>(in_.prefix_nnz[l - 1]);
        occupancy = parents > 0 ? static_cast<double>(in_.prefix_nnz[l]) / (parents * d) : 0.0;
      }
      occupancy = std::clamp(occupancy, 0.0, 1.0);
      occupancy_.push_back(occupancy);
      // Format inference (Scorch's costDense n against costSparse deg + meta, with one
      // coordinate read per stored entry as the metadata): dense once half the range is full.
      level_dense_.push_back(occupancy >= 0.5);
    }
  }

  HeuristicResult Run() {
    HeuristicResult r;
    const auto start = std::chrono::steady_clock::now();
    DescribeLevels(r);
    r.initial_order = InitialOrder(r);
    r.pushed_order = Push(r.initial_order, r);
    r.final_order = StorageOrderSort(r.pushed_order, r);
    order_ = r.final_order;
    ChooseSchedule(r);
    r.microseconds =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    return r;
  }

 private:
  int Level(const std::string& v) const {
    auto it = std::find(modes_.begin(), modes_.end(), v);
    return it == modes_.end() ? -1 : static_cast<int>(it - modes_.begin());
  }
  double Size(const std::string& v) const { return static_cast<double>(size_.at(v)); }

  // Entries of a tensor: the sparse operand's nonzeros, a dense tensor's size (a sparse output
  // has the sparse operand's pattern over its leading modes).
  double Entries(int t) const {
    const TensorInfo& info = e_.tensors[t];
    if (t == e_.sparse) return StoredEntries(static_cast<int>(modes_.size()));
    if (info.role == TensorRole::kSparseOutput) {
      double n = StoredEntries(e_.sparse_output_prefix);
      for (size_t m = e_.sparse_output_prefix; m < info.indices.size(); ++m)
        n *= Size(info.indices[m]);
      return n;
    }
    double n = 1;
    for (const auto& v : info.indices) n *= Size(v);
    return n;
  }
  // Stored positions of the sparse operand's first `levels` levels (as inferred: U levels
  // store their whole range).
  double StoredEntries(int levels) const {
    double n = 1;
    for (int l = 0; l < levels; ++l) n *= Count(l);
    return n;
  }
  // Iterations of level l's loop per parent position, as the inferred format stores it.
  double Count(int l) const {
    const double d = Size(modes_[l]);
    return level_dense_[l] ? d : std::max(occupancy_[l] * d, 1e-9);
  }

  void DescribeLevels(HeuristicResult& r) const {
    std::vector<std::string> levels;
    for (size_t l = 0; l < modes_.size(); ++l) {
      levels.push_back(modes_[l] + ":" + (level_dense_[l] ? "U" : "C") + " (occupancy " +
                       Format("%.3g", occupancy_[l]) + ")");
    }
    r.explain.push_back(std::string("formats: ") + e_.sparse_input().name + " levels " +
                        Join(levels, ", ") +
                        (measured_ ? "; measured occupancies" : "; prior occupancy rho") +
                        "; a level is dense (U) once half its range is occupied");
    // The output: its support estimated as the sparse operand's prefixes it keeps, times the
    // dense ranges (Scorch's coverage estimate, here with measured prefixes).
    const TensorInfo& out = e_.output();
    double support = 1, range = 1;
    for (const auto& v : out.indices) {
      range *= Size(v);
      const int l = Level(v);
      support *= l >= 0 ? std::min(Size(v), Count(l)) : Size(v);
    }
    const double density = range > 0 ? std::min(1.0, support / range) : 1.0;
    const bool sparse_output = out.role == TensorRole::kSparseOutput;
    std::string verdict =
        sparse_output ? "sparse, the pattern of " + e_.sparse_input().name : std::string("dense");
    if (!sparse_output && density < 0.5) verdict += " (a sparse output would be smaller)";
    r.explain.push_back("formats: output " + out.name + " predicted density " +
                        Format("%.3g", density) + ": " + verdict);
  }

  // A filter intersects a sparse set with a dense one: a mode of the sparse operand that a dense
  // right-hand operand also holds, or that some right-hand operand lacks.
  bool IsFilter(const std::string& v) const {
    if (Level(v) < 0) return false;
    for (size_t t = 1; t < e_.tensors.size(); ++t) {
      if (static_cast<int>(t) == e_.sparse) continue;
      const auto& ix = e_.tensors[t].indices;
      if (std::find(ix.begin(), ix.end(), v) != ix.end()) return true;
    }
    for (size_t t = 1; t < e_.tensors.size(); ++t) {
      const auto& ix = e_.tensors[t].indices;
      if (std::find(ix.begin(), ix.end(), v) == ix.end()) return true;
    }
    return false;
  }

  std::vector<std::string> InitialOrder(HeuristicResult& r) const {
    struct Key {
      double score, mean_position;
      size_t original;
      std::string v;
    };
    std::vector<Key> keys;
    std::vector<std::string> notes;
    for (size_t n = 0; n < e_.indices.size(); ++n) {
      const std::string& v = e_.indices[n];
      const double score = IsFilter(v) ? 1.0 - occupancy_[Level(v)] : 0.0;
      double sum = 0;
      int count = 0;
      for (const auto& t : e_.tensors) {
        auto it = std::find(t.indices.begin(), t.indices.end(), v);
        if (it == t.indices.end()) continue;
        sum += static_cast<double>(it - t.indices.begin());
        ++count;
      }
      keys.push_back({score, count ? sum / count : 0.0, n, v});
      if (IsFilter(v)) notes.push_back(v + " " + Format("%.4g", score));
    }
    std::stable_sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
      if (a.score != b.score) return a.score > b.score;
      if (a.mean_position != b.mean_position) return a.mean_position < b.mean_position;
      return a.original < b.original;
    });
    std::vector<std::string> order;
    for (const auto& k : keys) order.push_back(k.v);
    r.explain.push_back("order: sparse filters " + (notes.empty() ? "none" : Join(notes, ", ")) +
                        " (score 1 - occupancy); sorted [" + Join(order, " ") + "]");
    return order;
  }

  // Iterations of a linear loop order: a level of the sparse operand iterates its stored
  // children when its parent levels are all outside it, else its whole range.
  double Computation(const std::vector<std::string>& order) const {
    double iterations = 1;
    std::set<std::string> outside;
    for (const auto& v : order) {
      const int l = Level(v);
      bool concordant = l >= 0;
      for (int p = 0; concordant && p < l; ++p) concordant = outside.count(modes_[p]) > 0;
      iterations *= concordant ? Count(l) : Size(v);
      outside.insert(v);
    }
    return iterations;
  }

  bool InOrder(const std::vector<std::string>& vars, const std::vector<std::string>& order) const {
    size_t last = 0;
    for (const auto& v : vars) {
      const size_t p =
          static_cast<size_t>(std::find(order.begin(), order.end(), v) - order.begin());
      if (p < last) return false;
      last = p;
    }
    return true;
  }

  double Transposition(const std::vector<std::string>& order) const {
    double cost = 0;
    for (size_t t = 0; t < e_.tensors.size(); ++t) {
      if (!InOrder(e_.tensors[t].indices, order)) cost += k_.c_trans * Entries(static_cast<int>(t));
    }
    return cost;
  }

  // Scorch's workspace: a sparse output with a free variable ordered after the last reduction
  // variable needs a hash workspace over those free variables.
  double Workspace(const std::vector<std::string>& order) const {
    if (e_.output().role != TensorRole::kSparseOutput) return 0;
    int last_reduction = -1;
    for (size_t p = 0; p < order.size(); ++p) {
      if (!e_.IsOutputIndex(order[p])) last_reduction = static_cast<int>(p);
    }
    if (last_reduction < 0) return 0;
    double dims = 0;
    for (size_t p = last_reduction + 1; p < order.size(); ++p) dims += e_.IsOutputIndex(order[p]);
    if (dims == 0) return 0;
    const double entries = Entries(0);
    return k_.c_insert * Computation(order) * dims +
           k_.c_sort * entries * dims * std::log2(std::max(entries, 2.0));
  }

  double Cost(const std::vector<std::string>& order) const {
    return k_.alpha * Computation(order) + k_.beta * Workspace(order) +
           k_.gamma * Transposition(order);
  }

  // Algorithm 1's greedy pass: each filter, most selective first, moves inward while the move
  // lowers the cost.
  std::vector<std::string> Push(std::vector<std::string> order, HeuristicResult& r) const {
    const std::vector<std::string> sorted = order;
    for (const auto& v : sorted) {
      if (!IsFilter(v)) continue;
      for (size_t target = 0; target < order.size(); ++target) {
        const size_t at =
            static_cast<size_t>(std::find(order.begin(), order.end(), v) - order.begin());
        if (target <= at) continue;
        std::vector<std::string> moved = order;
        moved.erase(moved.begin() + at);
        moved.insert(moved.begin() + target, v);
        const double delta = Cost(moved) - Cost(order);
        if (delta < 0) {
          r.explain.push_back("order: push " + v + " to position " + std::to_string(target) +
                              " (cost " + Format("%+.4g", delta) + ") [" + Join(moved, " ") + "]");
          order = std::move(moved);
        }
      }
    }
    return order;
  }

  // The final order: a topological sort of every operand's storage order (consecutive modes),
  // with the pushed order as priority; where storage orders conflict (a cycle), the cheapest
  // constraint is dropped and its operands are read transposed.
  std::vector<std::string> StorageOrderSort(const std::vector<std::string>& priority,
                                            HeuristicResult& r) {
    struct Edge {
      std::string from, to;
      double weight = 0;
      std::set<int> tensors;
    };
    std::vector<Edge> edges;
    for (size_t t = 0; t < e_.tensors.size(); ++t) {
      const auto& ix = e_.tensors[t].indices;
      for (size_t m = 0; m + 1 < ix.size(); ++m) {
        auto it = std::find_if(edges.begin(), edges.end(),
                               [&](const Edge& x) { return x.from == ix[m] && x.to == ix[m + 1]; });
        if (it == edges.end()) {
          edges.push_back({ix[m], ix[m + 1], 0, {}});
          it = edges.end() - 1;
        }
        it->weight += Entries(static_cast<int>(t));
        it->tensors.insert(static_cast<int>(t));
      }
    }
    auto rank = [&](const std::string& v) {
      return std::find(priority.begin(), priority.end(), v) - priority.begin();
    };
    std::vector<std::string> order;
    std::set<std::string> placed;
    while (order.size() < priority.size()) {
      std::string next;
      for (const auto& v : priority) {
        if (placed.count(v)) continue;
        bool free = true;
        for (const auto& edge : edges) free &= !(edge.to == v && !placed.count(edge.from));
        if (free && (next.empty() || rank(v) < rank(next))) next = v;
      }
      if (next.empty()) {
        // A cycle: drop the cheapest edge between unplaced variables.
        auto cheapest = edges.end();
        for (auto it = edges.begin(); it != edges.end(); ++it) {
          if (placed.count(it->from) || placed.count(it->to)) continue;
          if (cheapest == edges.end() || it->weight < cheapest->weight) cheapest = it;
        }
        for (int t : cheapest->tensors) transposed_.insert(t);
        r.explain.push_back("order: storage orders conflict; " + cheapest->from + " before " +
                            cheapest->to + " dropped (" + Format("%.4g", cheapest->weight) +
                            " entries read transposed)");
        edges.erase(cheapest);
        continue;
      }
      order.push_back(next);
      placed.insert(next);
    }
    r.explain.push_back("order: storage-order sort [" + Join(order, " ") + "]");
    return order;
  }

  // Iterations of a chain of loops inside `outside`: the sparse operand's levels iterate their
  // stored children when it is a factor of the statement and its parent levels are outside.
  double Chain(const std::vector<std::string>& loops, std::set<std::string> outside,
               bool has_sparse) const {
    double iterations = 1;
    for (const auto& v : loops) {
      const int l = Level(v);
      bool concordant = has_sparse && l >= 0;
      for (int p = 0; concordant && p < l; ++p) concordant = outside.count(modes_[p]) > 0;
      iterations *= concordant ? Count(l) : Size(v);
      outside.insert(v);
    }
    return iterations;
  }

  // Workspace insertion, generalized from Scorch's sparse outputs to any statement whose
  // reduction variables multiply factors that later free loops do not need: after a prefix of
  // the loops, the factors that hold some reduction variables X are summed over X into a
  // temporary (a scalar, or dense over their other variables), and the rest of the statement
  // reads it. Chosen when the structural cost (iterations plus temporary clears) drops;
  // producers and consumers are planned the same way in turn.
  std::unique_ptr<Plan> PlanStatement(const std::set<std::string>& outside,
                                      const std::vector<std::string>& loops, const Operand& lhs,
                                      const std::vector<Operand>& factors) {
    const bool has_sparse = std::any_of(factors.begin(), factors.end(),
                                        [&](const Operand& f) { return f.tensor == e_.sparse; });
    auto best = std::make_unique<Plan>();
    best->loops = loops;
    best->lhs = lhs;
    best->factors = factors;
    best->cost = Chain(loops, outside, has_sparse);
    if (factors.size() < 2) return best;

    for (size_t s = 0; s < loops.size(); ++s) {
      const std::vector<std::string> prefix(loops.begin(), loops.begin() + s);
      const std::vector<std::string> suffix(loops.begin() + s, loops.end());
      std::vector<std::string> reductions;
      for (const auto& v : suffix) {
        if (!lhs.Has(v)) reductions.push_back(v);
      }
      if (reductions.empty() || reductions.size() > 6) continue;
      std::set<std::string> inside = outside;
      inside.insert(prefix.begin(), prefix.end());
      const double prefix_iterations = Chain(prefix, outside, has_sparse);
      for (unsigned mask = 1; mask < (1u << reductions.size()); ++mask) {
        std::set<std::string> x;
        for (size_t b = 0; b < reductions.size(); ++b) {
          if (mask & (1u << b)) x.insert(reductions[b]);
        }
        std::vector<Operand> produced, rest;
        for (const auto& f : factors) {
          const bool touches =
              std::any_of(x.begin(), x.end(), [&](const std::string& v) { return f.Has(v); });
          (touches ? produced : rest).push_back(f);
        }
        if (produced.empty() || rest.empty()) continue;
        // X must be summed out entirely inside the producer.
        bool closed = true;
        for (const auto& f : rest)
          for (const auto& v : x) closed &= !f.Has(v);
        if (!closed) continue;
        std::vector<std::string> temp_vars, producer_loops, consumer_loops;
        for (const auto& v : suffix) {
          const bool in_produced = std::any_of(produced.begin(), produced.end(),
                                               [&](const Operand& f) { return f.Has(v); });
          if (x.count(v)) {
            producer_loops.push_back(v);
          } else {
            consumer_loops.push_back(v);
            if (in_produced) {
              temp_vars.push_back(v);
              producer_loops.push_back(v);
            }
          }
        }
        if (consumer_loops.empty()) continue;
        double temp_size = 1;
        for (const auto& v : temp_vars) temp_size *= Size(v);
        Operand temp;
        temp.name = "#" + std::to_string(++temporaries_);
        temp.vars = temp_vars;
        std::vector<Operand> consumer_factors = rest;
        consumer_factors.push_back(temp);
        auto producer = PlanStatement(inside, producer_loops, temp, produced);
        auto consumer = PlanStatement(inside, consumer_loops, lhs, consumer_factors);
        const double cost = prefix_iterations * (producer->cost + consumer->cost + temp_size);
        if (cost < best->cost * 0.999) {
          auto plan = std::make_unique<Plan>();
          plan->loops = prefix;
          plan->temp = temp;
          plan->producer = std::move(producer);
          plan->consumer = std::move(consumer);
          plan->cost = cost;
          best = std::move(plan);
        }
      }
    }
    return best;
  }

  // Algorithm 2: dense loops over variables that some operand lacks (reuse) are tiled, unless
  // they are sparse or enclose a sparse loop; the tile loop goes outermost.
  std::vector<std::string> TiledVariables(HeuristicResult& r) const {
    std::set<std::string> reuse;
    for (const auto& t : e_.tensors) {
      if (t.indices.size() < e_.indices.size()) reuse.insert(t.indices.begin(), t.indices.end());
    }
    std::vector<std::string> tiled;
    for (size_t p = 0; p < order_.size(); ++p) {
      const std::string& v = order_[p];
      if (!reuse.count(v)) continue;
      if (Level(v) >= 0) continue;
      bool parent_of_sparse = false;
      for (size_t q = p + 1; q < order_.size(); ++q) parent_of_sparse |= Level(order_[q]) >= 0;
      if (parent_of_sparse) {
        r.explain.push_back("tiling: " + v + " not tiled: it encloses a sparse loop");
        continue;
      }
      if (size_.at(v) < 2 * k_.tile) {
        r.explain.push_back("tiling: " + v + " not tiled: its range " +
                            std::to_string(size_.at(v)) + " is under two tiles");
        continue;
      }
      tiled.push_back(v);
    }
    return tiled;
  }

  struct Attempt {
    std::unique_ptr<Plan> plan;
    std::vector<std::string> tiled;
    bool parallel = true;
  };

  nlohmann::json BuildJson(const Attempt& a) const {
    std::map<std::string, std::string> names;
    int counters[2] = {0, 0};
    a.plan->NameTemporaries(names, counters);
    nlohmann::json tree = a.plan->ToJson(true, names);
    nlohmann::json splits = nlohmann::json::object();
    if (!a.plan->producer && !a.tiled.empty()) {
      std::vector<std::string> loops;
      for (const auto& v : a.tiled) {
        splits[v] = k_.tile;
        loops.push_back(v + "1");
      }
      for (const auto& v : a.plan->loops) {
        const bool tiled = std::find(a.tiled.begin(), a.tiled.end(), v) != a.tiled.end();
        loops.push_back(tiled ? v + "0" : v);
      }
      tree["loops"] = loops;
    }
    std::vector<std::string> format;
    for (const auto& v : order_) {
      const int l = Level(v);
      if (l >= 0) format.push_back(v + ":" + (level_dense_[l] ? "U" : "C"));
    }
    nlohmann::json out = {
        {"splits", splits}, {"tree", tree}, {"format", format}, {"narrow_coordinates", true}};
    std::vector<std::string> transposed;
    for (int t : transposed_) {
      const TensorInfo& info = e_.tensors[t];
      if (info.role == TensorRole::kDenseInput && info.indices.size() == 2)
        transposed.push_back(info.name);
    }
    if (!transposed.empty()) out["transpose"] = transposed;
    if (a.parallel) {
      // The outermost loop over an output variable (never a tile loop) along the root chain
      // and then down the consumers, which run after their producers' temporaries exist: rows
      // balanced by nonzeros when it is the sparse operand's first level.
      for (const Plan* node = a.plan.get(); node; node = node->consumer.get()) {
        std::string index;
        bool first_level = false;
        for (const auto& v : node->loops) {
          if (!e_.IsOutputIndex(v)) continue;
          const bool tiled = std::find(a.tiled.begin(), a.tiled.end(), v) != a.tiled.end();
          index = tiled && !a.plan->producer ? v + "0" : v;
          first_level = Level(v) == 0 && !tiled;
          break;
        }
        if (index.empty()) continue;
        if (first_level) {
          out["parallel"] = {{"index", index}, {"chunk", 1}, {"partition", "balanced"}};
        } else {
          out["parallel"] = {{"index", index}, {"chunk", 16}};
        }
        break;
      }
    }
    return out;
  }

  void ChooseSchedule(HeuristicResult& r) {
    Operand lhs{e_.output().name, e_.output().indices, 0};
    std::vector<Operand> factors;
    for (size_t t = 1; t < e_.tensors.size(); ++t)
      factors.push_back({e_.tensors[t].name, e_.tensors[t].indices, static_cast<int>(t)});
    const bool has_sparse = true;
    const double linear = Chain(order_, {}, has_sparse);
    Attempt attempt;
    attempt.plan = PlanStatement({}, order_, lhs, factors);
    if (attempt.plan->producer) {
      r.explain.push_back("workspace: " + std::to_string(attempt.plan->Wheres()) +
                          " where node(s) cut the iterations from " + Format("%.4g", linear) +
                          " to " + Format("%.4g", attempt.plan->cost));
    } else {
      r.explain.push_back("workspace: none pays (" + Format("%.4g", linear) + " iterations)");
      attempt.tiled = TiledVariables(r);
      for (const auto& v : attempt.tiled) {
        r.explain.push_back("tiling: " + v + " split by " + std::to_string(k_.tile) + ", " + v +
                            "1 outermost");
      }
    }
    r.cost = attempt.plan->cost;

    // Each step the IR does not accept is undone, most specific first.
    std::vector<std::function<bool(Attempt&)>> undo = {
        [&](Attempt& a) {
          if (a.tiled.empty()) return false;
          a.tiled.clear();
          return true;
        },
        [&](Attempt& a) {
          if (!a.plan->producer) return false;
          auto plan = std::make_unique<Plan>();
          plan->loops = order_;
          plan->cost = linear;
          a.plan = std::move(plan);
          return true;
        },
        [&](Attempt& a) {
          if (!a.parallel) return false;
          a.parallel = false;
          return true;
        },
    };
    size_t next_undo = 0;
    while (true) {
      Schedule s = Schedule::FromJson(BuildJson(attempt), "heuristic schedule");
      const LowerOutcome lowered = Lower(e_, s);
      if (lowered.nest) {
        s.Canonicalize();
        r.schedule = std::move(s);
        return;
      }
      bool undone = false;
      while (!undone && next_undo < undo.size()) undone = undo[next_undo++](attempt);
      if (!undone) break;
      r.explain.push_back("lowering refused (" + lowered.error + "); step undone");
    }
    r.explain.push_back("falling back to TACO's default schedule");
    r.schedule = FixedCsrSchedule(e_);
    r.schedule.Canonicalize();
  }

  const Expression& e_;
  const HeuristicInput& in_;
  const ScorchConstants& k_;
  std::vector<std::string> modes_;
  std::map<std::string, int64_t> size_;
  bool measured_ = false;
  std::vector<double> occupancy_;
  std::vector<bool> level_dense_;
  std::vector<std::string> order_;
  std::set<int> transposed_;
  int temporaries_ = 0;
};

}  // namespace

HeuristicResult ScorchSchedule(const Expression& expression, const HeuristicInput& input) {
  Scheduler scheduler(expression, input);
  return scheduler.Run();
}

}  // namespace sparsetune
