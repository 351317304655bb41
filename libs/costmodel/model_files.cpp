#include "costmodel/model_files.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/paths.hpp"

namespace sparsetune {

namespace fs = std::filesystem;

namespace {

std::string LayoutText(const EncodingLayout& layout) {
  std::string out;
  for (size_t k = 0; k < layout.names.size(); ++k)
    out += (k ? " " : "") + layout.names[k] + ":" +
           (k < layout.cardinalities.size() ? std::to_string(layout.cardinalities[k]) : "?");
  return out + " order:" + std::to_string(layout.order_size);
}

bool PowerOfTwoUpTo(int64_t v, int64_t most) {
  return v >= 1 && v <= most && (v & (v - 1)) == 0;
}

// What is wrong with one entry of a model's schedule set, or "": the template's indices and
// variables, powers of two in range (the encoding takes their logarithms), what every schedule
// may hold (ScheduleLimits), and ids inside the model's embedding tables.
std::string SetEntryProblem(const WacoTemplate& waco, const SuperSchedule& s) {
  const auto& indices = waco.indices();
  if (s.splits.size() != indices.size()) return "the splits must name each index once";
  for (const auto& index : indices) {
    auto it = s.splits.find(index);
    if (it == s.splits.end()) return "no split for " + index;
    if (!PowerOfTwoUpTo(it->second, int64_t(1) << 30))
      return "split of " + index + " is " + std::to_string(it->second) +
             "; the template's are powers of two up to 2^30";
  }
  std::vector<std::string> order = s.order, variables = waco.variables();
  std::sort(order.begin(), order.end());
  std::sort(variables.begin(), variables.end());
  if (order != variables) return "the order must list every variable of the template once";
  if (std::find(variables.begin(), variables.end(), s.parallel) == variables.end())
    return "the parallel variable is not one of the template's";
  if (!PowerOfTwoUpTo(s.chunk, int64_t(1) << 30))
    return "chunk " + std::to_string(s.chunk) + " is not a power of two up to 2^30";
  if (!PowerOfTwoUpTo(s.unroll, 16))
    return "unroll " + std::to_string(s.unroll) + " is not 1 to 16";
  if (s.threads < 0 || s.threads > ScheduleLimits::kMaxThreads)
    return "threads " + std::to_string(s.threads) + " is out of range";
  if (std::string violation = waco.ToSchedule(s).LimitViolation(); !violation.empty())
    return violation;
  const EncodingLayout layout = waco.Layout();
  const ScheduleEncoding encoding = waco.Encode(s);
  for (size_t k = 0; k < encoding.categorical.size() && k < layout.cardinalities.size(); ++k) {
    if (encoding.categorical[k] < 0 || encoding.categorical[k] >= layout.cardinalities[k])
      return layout.names[k] + " is outside the model's encoding";
  }
  return "";
}

}  // namespace

nlohmann::json ModelManifest::ToJson() const {
  nlohmann::json j = {{"format", "sparsetune-cost-model"},
                      {"kernel", kernel},
                      {"template_version", template_version},
                      {"layout",
                       {{"names", layout.names},
                        {"cardinalities", layout.cardinalities},
                        {"order_size", layout.order_size}}},
                      {"embedding_size", embedding_size},
                      {"grid", {{"max_sites", grid.max_sites}, {"max_extent", grid.max_extent}}},
                      {"side_inputs", SideInputsName(side_inputs)},
                      {"side_mean", side_mean},
                      {"side_std", side_std}};
  if (tune_top_k > 0) j["tune_top_k"] = tune_top_k;
  if (!refine_moves.is_null()) j["refine_moves"] = refine_moves;
  return j;
}

ModelManifest ReadModelManifest(const std::string& dir, const std::string& kernel) {
  const std::unique_ptr<WacoTemplate> waco = WacoTemplate::ForKernel(kernel);
  if (!waco)
    throw InputError(
        dir, 0,
        "cost models rank SuperSchedules of spmv, spmm, sddmm and mttkrp; " + kernel + " has none");
  const std::string path = (fs::path(dir) / kModelManifest).string();
  std::ifstream in(path);
  if (!in)
    throw InputError(
        path, 0, "no cost model here (train one with sparsetune train --kernel " + kernel + ")");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, 0, std::string("not a model manifest (truncated?): ") + e.what());
  }
  ModelManifest m;
  try {
    if (j.value("format", "") != "sparsetune-cost-model")
      throw InputError(path, 0, "not a sparsetune cost model");
    m.kernel = j.at("kernel").get<std::string>();
    m.template_version = j.at("template_version").get<int>();
    m.layout.names = j.at("layout").at("names").get<std::vector<std::string>>();
    m.layout.cardinalities = j.at("layout").at("cardinalities").get<std::vector<int>>();
    m.layout.order_size = j.at("layout").at("order_size").get<int>();
    m.embedding_size = j.at("embedding_size").get<int>();
    m.grid.max_sites = j.at("grid").at("max_sites").get<int64_t>();
    m.grid.max_extent = j.at("grid").at("max_extent").get<int64_t>();
    // Models written before the choice existed took WACO's shape numbers.
    const std::string side = j.value("side_inputs", std::string("shape"));
    if (!SideInputsFromName(side, &m.side_inputs))
      throw InputError(
          path, 0, "unknown side inputs '" + side + "' (expected shape, summary or summary-tiles)");
    m.side_mean = j.at("side_mean").get<std::vector<float>>();
    m.side_std = j.at("side_std").get<std::vector<float>>();
    m.tune_top_k = j.value("tune_top_k", 0);
    if (m.tune_top_k < 0) throw InputError(path, 0, "tune_top_k must not be negative");
    m.refine_moves = j.value("refine_moves", nlohmann::json());
    if (!m.refine_moves.is_null() && !m.refine_moves.is_object())
      throw InputError(path, 0, "refine_moves must be an object");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, 0, std::string("malformed model manifest: ") + e.what());
  }
  if (m.kernel != kernel)
    throw InputError(path, 0, "this model is for " + m.kernel + ", not " + kernel);
  const EncodingLayout layout = waco->Layout();
  if (m.template_version != WacoTemplate::Version())
    throw InputError(path, 0,
                     "the model was trained on template version " +
                         std::to_string(m.template_version) + "; this sparsetune has version " +
                         std::to_string(WacoTemplate::Version()) + " (retrain it)");
  if (m.layout.names != layout.names || m.layout.cardinalities != layout.cardinalities ||
      m.layout.order_size != layout.order_size)
    throw InputError(path, 0,
                     "the model's schedule encoding (" + LayoutText(m.layout) +
                         ") differs from this sparsetune's for template version " +
                         std::to_string(WacoTemplate::Version()) + " (" + LayoutText(layout) +
                         "; retrain it)");
  const size_t sides = static_cast<size_t>(SideInputCount(m.side_inputs));
  if (m.side_mean.size() != sides || m.side_std.size() != sides)
    throw InputError(path, 0, "malformed normalization statistics");
  for (const char* file : {kModelWacoNet, kModelEmbedder, kModelHead, kModelSchedules}) {
    if (!fs::is_regular_file(fs::path(dir) / file))
      throw InputError((fs::path(dir) / file).string(), 0, "missing from the model folder");
  }
  return m;
}

SuperSchedule SuperScheduleFromJson(const nlohmann::json& j, const std::string& what) {
  SuperSchedule s;
  try {
    s.splits = j.at("splits").get<std::map<std::string, int64_t>>();
    s.order = j.at("order").get<std::vector<std::string>>();
    for (const auto& f : j.at("formats")) {
      const std::string k = f.get<std::string>();
      if (k != "U" && k != "C" && k != "S")
        throw InputError(what + ": format \"" + k.substr(0, 16) + "\" is not U, C or S");
      s.formats.push_back(k == "U"   ? LevelKind::kDense
                          : k == "S" ? LevelKind::kSliced
                                     : LevelKind::kCompressed);
    }
    s.parallel = j.at("parallel").get<std::string>();
    s.chunk = j.at("chunk").get<int64_t>();
    s.threads = j.at("threads").get<int>();
    s.partition =
        j.value("partition", "dynamic") == "balanced" ? Partition::kBalanced : Partition::kDynamic;
    s.unroll = j.value("unroll", 1);
    s.narrow = j.value("narrow", true);
    s.transposed = j.value("transposed", false);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(what + ": not a SuperSchedule: " + e.what());
  }
  return s;
}

std::vector<SuperSchedule> ReadScheduleSet(const std::string& path, const WacoTemplate& waco) {
  gzFile in = gzopen(path.c_str(), "rb");
  if (!in) throw InputError(path, 0, "cannot open the schedule set");
  std::string text;
  char buffer[1 << 16];
  int n = 0;
  // A schedule set holds some thousands of short lines: inflating far past that is refused.
  constexpr size_t kMaxSetBytes = size_t(256) << 20;
  while ((n = gzread(in, buffer, sizeof buffer)) > 0 && text.size() <= kMaxSetBytes)
    text.append(buffer, n);
  const bool broken = n < 0;
  gzclose(in);
  if (broken) throw InputError(path, 0, "corrupt or truncated schedule set");
  if (text.size() > kMaxSetBytes)
    throw InputError(path, 0, "the schedule set inflates to more than 256 MiB");
  std::vector<SuperSchedule> out;
  std::istringstream lines(text);
  std::string line;
  int64_t number = 0;
  const size_t order = waco.variables().size();
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw InputError(path, number, "not JSON (truncated file?)");
    }
    SuperSchedule s = SuperScheduleFromJson(j, path + ":" + std::to_string(number));
    if (s.order.size() != order || s.formats.size() != waco.level_variables().size())
      throw InputError(path, number, "not a " + waco.kernel() + " SuperSchedule");
    if (std::string problem = SetEntryProblem(waco, s); !problem.empty())
      throw InputError(path, number, "not a valid " + waco.kernel() + " SuperSchedule: " + problem);
    out.push_back(std::move(s));
  }
  if (out.empty()) throw InputError(path, 0, "the schedule set is empty");
  return out;
}

void WriteScheduleSet(const std::string& path, const std::vector<SuperSchedule>& schedules) {
  gzFile out = gzopen(path.c_str(), "wb9");
  if (!out) throw InternalError("cannot write " + path);
  for (const auto& s : schedules) {
    const std::string line = s.ToJson().dump() + "\n";
    gzwrite(out, line.data(), static_cast<unsigned>(line.size()));
  }
  gzclose(out);
}

std::vector<std::string> ModelsSearchPath() {
  if (const char* env = std::getenv("SPARSETUNE_MODELS"); env && *env) return {env};
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) return {};
  return {(exe.parent_path() / "models").string(),
          (exe.parent_path().parent_path() / "share/sparsetune/models").string()};
}

std::string DefaultModelsDirectory() {
  const std::vector<std::string> search = ModelsSearchPath();
  for (const std::string& candidate : search) {
    std::error_code error;
    if (!fs::is_directory(candidate, error)) continue;
    const fs::path real = fs::canonical(candidate, error);
    return error ? candidate : real.string();
  }
  // Where an installed tree keeps them: absent, so that no model is used and callers can say so.
  return search.empty() ? std::string("models") : search.back();
}

std::string CalibratedModelDirectory(const std::string& machine_key, const std::string& kernel) {
  return (fs::path(XdgDataHome()) / "sparsetune" / "models" / machine_key / kernel).string();
}

std::string ResolveModelDirectory(const std::string& given, const std::string& kernel,
                                  const std::string& kernel_key, bool use_model,
                                  const std::string& machine_key) {
  // A named folder must hold a model of this kernel: the manifest check refuses a kernel that
  // has no template. The calibrated and shipped ones are optional (without them, tune samples
  // instead), and only kernels with a template have one.
  std::string dir = given;
  if (dir.empty()) {
    if (!use_model || kernel.empty()) return "";
    dir = machine_key.empty() ? "" : CalibratedModelDirectory(machine_key, kernel);
    if (dir.empty() || !fs::exists(fs::path(dir) / kModelManifest))
      dir = (fs::path(DefaultModelsDirectory()) / kernel).string();
    if (!fs::exists(fs::path(dir) / kModelManifest)) return "";
  }
  ReadModelManifest(dir, kernel.empty() ? kernel_key : kernel);
  return dir;
}

int ModelTopK(const std::string& dir) {
  if (dir.empty()) return kDefaultTopK;
  std::ifstream in(fs::path(dir) / kModelManifest);
  const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object() || !manifest.contains("tune_top_k") ||
      !manifest["tune_top_k"].is_number_integer() || manifest["tune_top_k"].get<int>() < 1)
    return kDefaultTopK;
  return manifest["tune_top_k"].get<int>();
}

nlohmann::json ModelRefineMoves(const std::string& dir) {
  if (dir.empty()) return nullptr;
  std::ifstream in(fs::path(dir) / kModelManifest);
  const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object() || !manifest.contains("refine_moves")) return nullptr;
  return manifest["refine_moves"];
}

void UpdateModelManifest(const std::string& dir, const nlohmann::json& fields) {
  const fs::path path = fs::path(dir) / kModelManifest;
  std::ifstream in(path);
  if (!in) throw InputError(path.string(), 0, "no model manifest here");
  nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object() || manifest.value("format", "") != "sparsetune-cost-model")
    throw InputError(path.string(), 0, "not a sparsetune cost model");
  for (const auto& [name, value] : fields.items()) {
    if (value.is_null()) {
      manifest.erase(name);
    } else {
      manifest[name] = value;
    }
  }
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary);
    out << manifest.dump(2) << "\n";
    if (!out) throw InputError(temporary.string(), 0, "could not write the model manifest");
  }
  fs::rename(temporary, path);
}

std::string NothingToRank(const std::string& dir) {
  std::ifstream in(fs::path(dir) / kModelMetrics);
  if (!in) return "";
  const nlohmann::json metrics = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!metrics.is_object() || !metrics.contains("validation") ||
      !metrics["validation"].contains("oracle_speedup") ||
      !metrics["validation"]["oracle_speedup"].is_number())
    return "";
  const double gain = metrics["validation"]["oracle_speedup"].get<double>();
  if (gain >= kMinValidationOracleGain) return "";
  char text[240];
  std::snprintf(text, sizeof text,
                "the schedules it ranks gain %.2fx over FixedCSR at best on its validation "
                "patterns (%s), under %.2fx: the rule candidates are measured alone",
                gain, (fs::path(dir) / kModelMetrics).string().c_str(), kMinValidationOracleGain);
  return text;
}

}  // namespace sparsetune
