#include "costmodel/model_files.hpp"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/errors.hpp"

namespace sparsetune {

namespace fs = std::filesystem;

nlohmann::json ModelManifest::ToJson() const {
  return {{"format", "sparsetune-cost-model"},
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
}

ModelManifest ReadModelManifest(const std::string& dir, const std::string& kernel) {
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
    if (side != "shape" && side != "summary")
      throw InputError(path, 0, "unknown side inputs '" + side + "' (expected shape or summary)");
    m.side_inputs = side == "shape" ? SideInputs::kShape : SideInputs::kSummary;
    m.side_mean = j.at("side_mean").get<std::vector<float>>();
    m.side_std = j.at("side_std").get<std::vector<float>>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, 0, std::string("malformed model manifest: ") + e.what());
  }
  if (m.kernel != kernel)
    throw InputError(path, 0, "this model is for " + m.kernel + ", not " + kernel);
  auto waco = WacoTemplate::ForKernel(kernel);
  if (!waco) throw InputError(path, 0, kernel + " has no SuperSchedule template to model");
  const EncodingLayout layout = waco->Layout();
  if (m.template_version != WacoTemplate::Version() || m.layout.names != layout.names ||
      m.layout.cardinalities != layout.cardinalities || m.layout.order_size != layout.order_size)
    throw InputError(path, 0,
                     "the model was trained on template version " +
                         std::to_string(m.template_version) + "; this sparsetune has version " +
                         std::to_string(WacoTemplate::Version()) + " (retrain it)");
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
  while ((n = gzread(in, buffer, sizeof buffer)) > 0) text.append(buffer, n);
  const bool broken = n < 0;
  gzclose(in);
  if (broken) throw InputError(path, 0, "corrupt or truncated schedule set");
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

std::string DefaultModelsDirectory() {
  if (const char* env = std::getenv("SPARSETUNE_MODELS")) return env;
  return SPARSETUNE_MODELS_DIR;
}

}  // namespace sparsetune
