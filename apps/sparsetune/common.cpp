#include "common.hpp"

#include "tune/tune.hpp"

#include <fstream>
#include <sstream>

#include "base/errors.hpp"
#include "base/paths.hpp"
#include "base/threads.hpp"
#include "ir/kernels.hpp"
#include "superschedule/random_schedule.hpp"
#include "superschedule/waco_template.hpp"
#include "tune/tune.hpp"

namespace sparsetune::cli {

void AddKernelOptions(CLI::App* sub, KernelOptions& o, bool) {
  auto* kernel = sub->add_option("--kernel,-k", o.kernel, "Named kernel: " + KnownKernelNames());
  auto* expr =
      sub->add_option("--expr,-e", o.expr, "Index notation, e.g. \"y(i) = A(i,k) * x(k)\"");
  kernel->excludes(expr);
  expr->excludes(kernel);
  sub->add_option("--sparse", o.sparse,
                  "With --expr: the sparse operand (default: first on the right)");
  sub->add_flag("--sparse-output", o.sparse_output,
                "With --expr: the output is sparse over the sparse operand's leading indices");
  sub->add_option("--dense", o.dense, "Dense index sizes, e.g. --dense j=256 or k=16,l=16")
      ->take_all();
  sub->add_option("--dtype", o.dtype, "Value type: f32 (default) or f64")
      ->check(CLI::IsMember({"f32", "f64"}));
}

ResolvedKernel ResolveKernel(const KernelOptions& o) {
  ResolvedKernel r;
  if (o.kernel.empty() == o.expr.empty())
    throw InputError("give exactly one of --kernel and --expr");
  std::map<std::string, int64_t> overrides = ParseDenseSizes(o.dense);
  if (!o.kernel.empty()) {
    const KernelDef* def = FindKernel(o.kernel);
    if (!def)
      throw InputError("unknown kernel '" + o.kernel + "' (known: " + KnownKernelNames() + ")");
    if (!o.sparse.empty() || o.sparse_output)
      throw InputError("--sparse and --sparse-output go with --expr");
    r.name = def->name;
    r.expression = KernelExpression(def->name);
    r.dense_sizes = def->dense_defaults;
  } else {
    r.name = "expr";
    r.expression = BuildExpression(o.expr, "--expr \"" + o.expr + "\"", o.sparse,
                                   o.sparse_output ? SparseOutput::kYes : SparseOutput::kAuto);
  }
  for (const auto& [index, size] : overrides) r.dense_sizes[index] = size;
  r.dtype = o.dtype == "f64" ? DType::kF64 : DType::kF32;
  return r;
}

nlohmann::json ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "cannot open the file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    int64_t line = 1;
    for (size_t k = 0; k < e.byte && k < text.size(); ++k) line += text[k] == '\n';
    std::string cause = e.what();
    const size_t colon = cause.find("syntax error");
    if (colon != std::string::npos) cause = cause.substr(colon);
    throw InputError(path, line, "invalid JSON: " + cause);
  }
}

Schedule LoadSchedule(const std::string& spec, const Expression& expression) {
  if (spec.empty() || spec == "default") return FixedCsrSchedule(expression);
  return Schedule::FromJson(ReadJsonFile(spec), spec);
}

bool IsRandomScheduleSpec(const std::string& spec) {
  return spec.rfind("random:", 0) == 0;
}

uint64_t RandomScheduleSeed(const std::string& spec) {
  const std::string digits = spec.substr(std::string("random:").size());
  if (digits.empty() || digits.size() > 19 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    throw InputError("--schedule " + spec + ": the seed must be a non-negative integer (random:7)");
  }
  return std::stoull(digits);
}

Schedule SampleSchedule(const std::string& kernel, const Expression& expression,
                        const std::map<std::string, int64_t>& sizes, std::mt19937_64& rng) {
  if (auto waco = WacoTemplate::ForKernel(kernel)) {
    return waco->ToSchedule(waco->Sample(sizes, rng));
  }
  GenericSampleOptions options;
  options.max_threads = HardwareThreads();
  return SampleGenericSchedule(expression, sizes, rng, options);
}

void AddOrderingsOption(CLI::App* sub, std::vector<OrderingKind>& orderings) {
  sub->add_option_function<std::string>(
         "--orderings",
         [&orderings](const std::string& text) {
           orderings.clear();
           if (text == "auto") {
             orderings = TuneRequest::DefaultOrderings();
             return;
           }
           if (text == "none") return;
           if (text == "all") {
             orderings = AllOrderings();
             return;
           }
           size_t begin = 0;
           while (begin <= text.size()) {
             const size_t end = std::min(text.find(',', begin), text.size());
             OrderingKind kind;
             const std::string name = text.substr(begin, end - begin);
             if (!ParseOrdering(name, &kind) || kind == OrderingKind::kNone)
               throw InputError("--orderings: unknown ordering '" + name +
                                "' (auto, none, all, or a list of rcm, degree, partition, "
                                "community)");
             orderings.push_back(kind);
             begin = end + 1;
           }
         },
         "Row and column orderings tried on the best schedules (matrices): auto (degree, rcm, and "
         "partition up to 4M nonzeros), none, all (also Louvain communities: slow on large "
         "graphs), or a list such as rcm,degree")
      ->default_str("auto");
}

void AddDatabaseOption(CLI::App* sub, std::string& path) {
  sub->add_option("--db", path,
                  "Schedule database (default: $SPARSETUNE_DB, else sparsetune.db under the XDG "
                  "data home)");
}

std::string DatabasePathOrDefault(const std::string& path) {
  return path.empty() ? DefaultDatabasePath() : path;
}

}  // namespace sparsetune::cli
