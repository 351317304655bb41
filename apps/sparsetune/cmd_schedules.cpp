#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "heuristic/scorch.hpp"
#include "io/read.hpp"
#include "sparseauto/space.hpp"
#include "sparseauto/sparseauto.hpp"
#include "tensor/stats.hpp"

namespace sparsetune::cli {

namespace {

struct SchedulesOptions {
  KernelOptions kernel;
  std::string tensor;
  std::vector<std::string> constraints;
  unsigned timeout_ms = 500;
  int64_t llc_bytes = 0;
  bool all_classes = false;
  bool heuristic = false;
  bool json = false;
};

nlohmann::json CountJson(unsigned __int128 count) {
  if (count > std::numeric_limits<uint64_t>::max()) return CountText(count);
  return static_cast<uint64_t>(count);
}

std::string Number(long double value) {
  char buffer[64];
  if (value == static_cast<long double>(static_cast<int64_t>(value)) && std::fabs(value) < 1e15L) {
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(value));
  } else {
    std::snprintf(buffer, sizeof buffer, "%.4Lg", value);
  }
  return buffer;
}

// Scorch's heuristic schedule alone: no enumeration, no solver.
void RunHeuristic(const SchedulesOptions& o, const ResolvedKernel& k) {
  HeuristicInput input;
  input.sizes = k.dense_sizes;
  if (!o.tensor.empty()) {
    std::vector<std::string> warnings;
    CooTensor tensor = ReadTensorFile(o.tensor, &warnings);
    for (const auto& w : warnings) std::fprintf(stderr, "sparsetune: warning: %s\n", w.c_str());
    input.sizes = ResolveIndexSizes(k.expression, tensor.dims, k.dense_sizes);
    input.prefix_nnz = ComputePatternStats(tensor, StatsDetail::kLinear).prefix_nnz;
  } else {
    for (const auto& [index, size] : k.dense_sizes) {
      if (k.expression.IndexId(index) < 0) {
        throw InputError("--dense " + index + "=" + std::to_string(size) +
                         ": the expression has no index " + index);
      }
    }
  }
  const HeuristicResult r = ScorchSchedule(k.expression, input);
  if (o.json) {
    nlohmann::json out = {
        {"kernel", k.name},
        {"expression", k.expression.text},
        {"tensor", o.tensor.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.tensor)},
        {"schedule", r.schedule.ToJson()},
        {"initial_order", r.initial_order},
        {"pushed_order", r.pushed_order},
        {"final_order", r.final_order},
        {"cost", r.cost},
        {"explain", r.explain},
        {"microseconds", r.microseconds}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::printf("%s  %s  (Scorch's heuristic, %.1f us)\n", k.name.c_str(), k.expression.text.c_str(),
              r.microseconds);
  for (const auto& line : r.explain) std::printf("  %s\n", line.c_str());
  std::printf("  schedule   %s\n  %s\n", r.schedule.Summary().c_str(),
              r.schedule.CanonicalJson().c_str());
}

void RunSchedules(const SchedulesOptions& o) {
  ResolvedKernel k = ResolveKernel(o.kernel);
  if (o.heuristic) {
    if (!o.constraints.empty()) throw InputError("--heuristic takes no --constraint");
    RunHeuristic(o, k);
    return;
  }
  SparseAutoOptions options;
  options.constraints = o.constraints;
  options.solver_timeout_ms = o.timeout_ms;
  options.llc_bytes = o.llc_bytes;
  options.value_bytes = static_cast<int>(DTypeSize(k.dtype));
  if (o.all_classes) options.stage1_classes_limit = std::numeric_limits<uint64_t>::max();
  if (!o.tensor.empty()) {
    std::vector<std::string> warnings;
    CooTensor tensor = ReadTensorFile(o.tensor, &warnings);
    for (const auto& w : warnings) std::fprintf(stderr, "sparsetune: warning: %s\n", w.c_str());
    const std::map<std::string, int64_t> sizes =
        ResolveIndexSizes(k.expression, tensor.dims, k.dense_sizes);
    const PatternStats stats = ComputePatternStats(tensor, StatsDetail::kLinear);
    options.values = ConcreteValues(k.expression, tensor.dims, stats.prefix_nnz, sizes);
  } else {
    for (const auto& [index, size] : k.dense_sizes) {
      if (k.expression.IndexId(index) < 0) {
        throw InputError("--dense " + index + "=" + std::to_string(size) +
                         ": the expression has no index " + index);
      }
      options.values[index] = static_cast<long double>(size);
    }
  }

  const SparseAutoResult r = RunSparseAuto(k.expression, options);

  nlohmann::json out;
  out["kernel"] = k.name;
  out["expression"] = r.expression;
  out["tensor"] = o.tensor.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.tensor);
  out["stages"] = nlohmann::json::array();
  for (const auto& s : r.stages) {
    out["stages"].push_back(
        {{"name", s.name},
         {"count", CountJson(s.count)},
         {"classes", s.classes < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.classes)},
         {"ms", s.ms}});
  }
  out["survivors"] = nlohmann::json::array();
  for (const auto& c : r.survivors) {
    out["survivors"].push_back({{"notation", c.notation},
                                {"time", c.time_text},
                                {"memory", c.memory_text},
                                {"schedule", c.schedule.ToJson()},
                                {"loop_depth", c.loop_depth},
                                {"memory_depth", c.memory_depth},
                                {"class", c.class_id},
                                {"time_value", static_cast<double>(c.time_value)},
                                {"memory_bytes", static_cast<double>(c.memory_bytes)},
                                {"cache_cost", static_cast<double>(c.cache_cost)},
                                {"order_mismatches", c.order_mismatches},
                                {"restreams", c.restreams},
                                {"stage4", c.stage4},
                                {"baseline", c.baseline}});
  }
  out["chosen"] = r.chosen;
  out["variables"] = r.variables;
  out["constraints"] = r.constraints;
  out["sizes"] = nlohmann::json::object();
  for (const auto& [name, value] : r.values) out["sizes"][name] = static_cast<double>(value);
  out["llc_bytes"] = r.llc_bytes;
  out["memory_limit_bytes"] = r.memory_limit_bytes;
  out["solver"] = {{"queries", r.solver_queries}, {"unknowns", r.solver_unknowns}};
  if (o.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }

  std::printf("%s  %s\n", k.name.c_str(), r.expression.c_str());
  std::string sizes;
  for (const auto& name : r.variables) sizes += " " + name + "=" + Number(r.values.at(name));
  std::printf("  sizes      %s  (%s)\n", sizes.c_str() + 1,
              o.tensor.empty() ? "defaults and --dense" : o.tensor.c_str());
  std::string region;
  for (const auto& c : r.constraints) region += (region.empty() ? "" : ", ") + c;
  std::printf("  region     %s\n", region.c_str());
  std::printf("  LLC        %lld bytes; temporaries up to %lld bytes\n",
              static_cast<long long>(r.llc_bytes), static_cast<long long>(r.memory_limit_bytes));
  std::printf("\n  %-22s %14s %9s %10s\n", "stage", "count", "classes", "ms");
  for (const auto& s : r.stages) {
    std::printf("  %-22s %14s %9s %10.1f\n", s.name.c_str(),
                s.count_known ? CountText(s.count).c_str() : "(too many)",
                s.classes < 0 ? "-" : std::to_string(s.classes).c_str(), s.ms);
  }
  std::printf("  (%d Z3 queries, %d unknown)\n\n  survivors of stage 3, best first:\n",
              r.solver_queries, r.solver_unknowns);
  for (size_t n = 0; n < r.survivors.size(); ++n) {
    const auto& c = r.survivors[n];
    std::printf("  [%zu]%s %s%s\n", n, static_cast<int>(n) == r.chosen ? "*" : " ",
                c.notation.c_str(),
                c.baseline ? "   (TACO's linear default, kept for stage 4)" : "");
    std::printf(
        "       time %s   memory %s   depths %d/%d   at these sizes: %s iterations, "
        "%s bytes%s\n",
        c.time_text.c_str(), c.memory_text.c_str(), c.loop_depth, c.memory_depth,
        Number(c.time_value).c_str(), Number(c.memory_bytes).c_str(),
        c.stage4 ? "" : " (pruned by stage 4)");
  }
  if (r.chosen >= 0) {
    std::printf("\n  chosen [%d]: %s\n", r.chosen,
                r.survivors[r.chosen].schedule.ToJson().dump().c_str());
  }
}

}  // namespace

void RegisterSchedules(CLI::App& app, Context& context) {
  auto o = std::make_shared<SchedulesOptions>();
  CLI::App* sub = app.add_subcommand(
      "schedules", "SparseAuto: enumerate branched loop schedules, prune them, choose one");
  AddKernelOptions(sub, o->kernel);
  sub->add_option("--tensor", o->tensor,
                  "Sparse matrix or tensor whose sizes and fiber lengths drive stages 4 and 5");
  sub->add_option("--constraint,-c", o->constraints,
                  "A relation over dims (i, j, ...), fiber lengths (jpos, ...) and nnz, e.g. "
                  "\"10*j < k\" or \"8 <= l <= 64\"; repeatable")
      ->take_all();
  sub->add_option("--timeout-ms", o->timeout_ms, "Z3 time limit per query (default 500)");
  sub->add_option("--llc-bytes", o->llc_bytes, "Last-level cache size (default: this machine's)");
  sub->add_flag("--all-classes", o->all_classes,
                "Count stage-1 complexity classes even for large spaces (slow)");
  sub->add_flag("--heuristic", o->heuristic,
                "Scorch's millisecond heuristic schedule instead (loop order by sparse filters, "
                "workspaces, dense tiling, format inference), with its reasoning");
  sub->add_flag("--json", o->json, "One JSON object on stdout");
  sub->footer(
      "Stage 3 compares schedules over a region of sizes: the --constraint relations, x >= 1 and "
      "0 < xpos <= x, and default ranges for every variable that no constraint names (1000 to "
      "10^7 for the sparse operand's dimensions, 8 to 256 for the others, 1 to 1000 for fiber "
      "lengths). Stages 4 and 5 use concrete sizes: dimensions and average fiber lengths of "
      "--tensor (else 100000 and 16 for matrices, 8 for higher orders), the other dimensions "
      "from --dense or the kernel's defaults (else 16).");
  sub->callback([o, &context] {
    (void)context;
    RunSchedules(*o);
  });
}

}  // namespace sparsetune::cli
