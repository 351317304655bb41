// A trained model's folder (models/<kernel>/): what it holds and the checks that every command
// loading it runs first, so a model that is missing, truncated, for another kernel or for
// another template version is refused with the file named.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/pattern_features.hpp"
#include "superschedule/waco_template.hpp"

namespace sparsetune {

// model.json         kernel, template version and layout, normalization statistics
// waconet.pt         WACONet (LibTorch archive)
// embedder.pt        the schedule embedder (LibTorch archive)
// head.bin           the head (plain floats: MlpHead)
// schedules.jsonl.gz the schedule set the search indexes, one SuperSchedule per line
// metrics.json       validation metrics of this model and of the summary-feature model
struct ModelManifest {
  std::string kernel;
  int template_version = 0;
  EncodingLayout layout;
  int embedding_size = 128;
  GridBudget grid;
  SideInputs side_inputs = SideInputs::kSummary;
  std::vector<float> side_mean, side_std;  // standardization of SideInputValues
  // How many of its picks `tune` measures unless told (--top-k): how deep its ranking still
  // finds winners, measured on patterns outside its training data; 0: kDefaultTopK.
  int tune_top_k = 0;
  // How often each kind of move paid in the collected neighbourhoods (RefinementMoveWeights's
  // JSON, learned by `train`); null: a tune's second round draws its neighbours uniformly.
  nlohmann::json refine_moves;
  nlohmann::json ToJson() const;
};

constexpr const char* kModelManifest = "model.json";
constexpr const char* kModelWacoNet = "waconet.pt";
constexpr const char* kModelEmbedder = "embedder.pt";
constexpr const char* kModelHead = "head.bin";
constexpr const char* kModelSchedules = "schedules.jsonl.gz";
constexpr const char* kModelMetrics = "metrics.json";

// Reads and checks <dir>/model.json against the kernel and this build's template; checks that
// every other file is there. Throws InputError naming the file and the cause.
ModelManifest ReadModelManifest(const std::string& dir, const std::string& kernel);

// The schedule set, checked against the template (InputError naming the file and line).
std::vector<SuperSchedule> ReadScheduleSet(const std::string& path, const WacoTemplate& waco);
void WriteScheduleSet(const std::string& path, const std::vector<SuperSchedule>& schedules);

// The SuperSchedule of a JSON object written by SuperSchedule::ToJson.
SuperSchedule SuperScheduleFromJson(const nlohmann::json& json, const std::string& what);

// The shipped models' folder: $SPARSETUNE_MODELS when set; else models/ beside the executable
// (the build links the source tree's there); else share/sparsetune/models of the installed
// tree the executable is in (<prefix>/bin/../share/sparsetune/models). When none is there,
// the last place looked, which does not exist.
std::string DefaultModelsDirectory();
// The places DefaultModelsDirectory looks, in order, for messages.
std::vector<std::string> ModelsSearchPath();

// Where `sparsetune calibrate` keeps the model of `kernel` calibrated to the machine with this
// MachineKey: $XDG_DATA_HOME/sparsetune/models/<machine key>/<kernel>.
std::string CalibratedModelDirectory(const std::string& machine_key, const std::string& kernel);

// The cost model a tune of `kernel` uses, or "" for none: the folder `given` when named (it must
// load, and only kernels with a SuperSchedule template have models; `kernel_key` names the
// kernel in that message), else, when `use_model`, the model calibrated to this machine
// (`machine_key`) when there is one, else the shipped models/<kernel> when it is there. Its
// files are checked here, before a tune stores anything.
std::string ResolveModelDirectory(const std::string& given, const std::string& kernel,
                                  const std::string& kernel_key, bool use_model,
                                  const std::string& machine_key = "");

// The model's picks `tune` measures when neither --top-k nor the model's manifest says.
constexpr int kDefaultTopK = 10;

// How many of the model in `dir`'s picks a tune measures by default: its manifest's
// tune_top_k, else kDefaultTopK (also when `dir` is "" or holds no readable manifest).
int ModelTopK(const std::string& dir);

// The manifest's refine_moves (null when `dir` is "" or its manifest has none).
nlohmann::json ModelRefineMoves(const std::string& dir);

// Sets top-level fields of <dir>/model.json (a null value removes the field), replacing the
// file whole. Throws InputError naming the file when it is missing or not a manifest.
void UpdateModelManifest(const std::string& dir, const nlohmann::json& fields);

// A model is worth consulting when the schedules it ranks can beat FixedCSR: below this gain
// of the best measured schedule over FixedCSR on its validation patterns (geomean), ranking
// them buys nothing the rule candidates do not.
constexpr double kMinValidationOracleGain = 1.05;

// Why the model in `dir` has nothing to rank ("" when it has): its metrics.json says the best
// of its validation patterns' measured schedules gains less than kMinValidationOracleGain over
// FixedCSR (MTTKRP's shipped model: 1.02x). "" too when the file does not say.
std::string NothingToRank(const std::string& dir);

}  // namespace sparsetune
