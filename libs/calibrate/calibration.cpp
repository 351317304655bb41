#include "calibrate/calibration.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "base/paths.hpp"
#include "collect/collection.hpp"
#include "costmodel/model_files.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "io/inputs.hpp"
#include "ir/kernels.hpp"
#include "jit/jit.hpp"
#include "train/train.hpp"

namespace sparsetune {

namespace fs = std::filesystem;

namespace {

// The file of a corpus entry, generated when missing; "" when it cannot be had here (a shared
// file that is not on this machine, read directly or by the generator: a resize of a real
// matrix).
std::string Materialize(const InputFile& entry, const std::string& shared,
                        const CalibrationRequest& request) {
  if (fs::exists(entry.path)) return entry.path;
  if (entry.origin.rfind("gen ", 0) != 0 || !request.generate) return "";
  std::vector<std::string> arguments;
  std::istringstream words(entry.origin);
  for (std::string word; words >> word;) {
    if (word.rfind("shared:", 0) == 0) {
      word = shared + "/" + word.substr(7);
      if (!fs::exists(word)) return "";
    }
    arguments.push_back(word);
  }
  fs::create_directories(fs::path(entry.path).parent_path());
  request.generate(arguments, entry.path);
  return fs::exists(entry.path) ? entry.path : "";
}

}  // namespace

nlohmann::json CalibrationReport::ToJson() const {
  nlohmann::json out = {{"kernel", kernel},
                        {"model", model_dir},
                        {"machine_key", machine_key},
                        {"used_by_tune", machine_folder},
                        {"patterns_measured", patterns_measured},
                        {"patterns_already_stored", patterns_already_stored},
                        {"patterns_left_out", patterns_left_out},
                        {"measurements", measurements},
                        {"measure_s", measure_s},
                        {"train_s", train_s}};
  if (metrics.contains("calibration")) out["calibration"] = metrics["calibration"];
  return out;
}

CalibrationReport Calibrate(const CalibrationRequest& request) {
  auto log = [&](const std::string& line) {
    if (request.log) request.log(line);
  };
  const KernelDef* def = FindKernel(request.kernel);
  if (!def) throw InputError("calibrate: unknown kernel '" + request.kernel + "'");
  if (request.patterns < 2) throw InputError("--patterns must be at least 2");
  if (request.samples < 1) throw InputError("--samples must be at least 1");
  if (request.epochs < 1) throw InputError("--epochs must be at least 1");
  // The starting model decides how patterns are featurized; checked before measuring.
  const ModelManifest manifest = ReadModelManifest(request.model_dir, request.kernel);

  CalibrationReport report;
  report.kernel = request.kernel;
  const MachineInfo machine = DetectMachine(Jit::DefaultCompiler(), Jit::Flags());
  report.machine_key = MachineKey(machine);
  report.model_dir = request.out_dir.empty()
                         ? CalibratedModelDirectory(report.machine_key, request.kernel)
                         : request.out_dir;
  report.machine_folder =
      report.model_dir == CalibratedModelDirectory(report.machine_key, request.kernel);

  // Measuring: one pattern at a time, so that the budget is kept and a stopped run resumes
  // (collect skips what the database holds).
  const std::string shared = SharedDatasetsDirectory(request.manifest);
  std::vector<InputFile> entries = CorpusManifestEntries(request.manifest, request.kernel);
  const std::string list = CacheDirectory() + "/calibrate-" + request.kernel + ".list";
  EnsureDirectory(CacheDirectory());
  const auto start = std::chrono::steady_clock::now();
  double measuring_s = 0;  // of the patterns that measured anything
  int chosen = 0;
  for (const InputFile& entry : entries) {
    if (chosen >= request.patterns) break;
    ++chosen;
    const std::string name = MatrixNameOf(entry.path);
    const double elapsed = MsSince(start) / 1000;
    const double per_pattern =
        report.patterns_measured > 0 ? measuring_s / report.patterns_measured : 0;
    if (elapsed + per_pattern > request.budget_s) {
      ++report.patterns_left_out;
      continue;
    }
    const std::string path = Materialize(entry, shared, request);
    if (path.empty()) {
      log("calibrate " + request.kernel + ": " + name + " left out (" + entry.path +
          " is not on this machine)");
      ++report.patterns_left_out;
      continue;
    }
    std::ofstream(list) << path << "\t" << entry.origin << "\n";
    CollectRequest collect;
    collect.paths = {list};
    collect.kernel = def->name;
    collect.expression = KernelExpression(def->name);
    collect.dense = def->dense_defaults;
    collect.db_path = request.db_path;
    collect.samples = request.samples;
    collect.seed = request.seed;
    collect.max_ms = request.max_ms;
    collect.on_busy = request.on_busy;
    const auto pattern_start = std::chrono::steady_clock::now();
    const CollectReport collected = RunCollection(collect);
    const double seconds = MsSince(pattern_start) / 1000;
    const int64_t stored = collected.tally.measured + collected.tally.failed_total();
    report.measurements += stored;
    if (stored > 0) {
      ++report.patterns_measured;
      measuring_s += seconds;
    } else {
      ++report.patterns_already_stored;
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "calibrate %s: pattern %d/%d %s: %lld measured, %lld already stored (%.1f s; "
                  "%.0f of %.0f s spent)",
                  request.kernel.c_str(), chosen, request.patterns, name.c_str(), (long long)stored,
                  (long long)collected.tally.skipped, seconds, MsSince(start) / 1000,
                  request.budget_s);
    log(line);
  }
  fs::remove(list);
  report.measure_s = MsSince(start) / 1000;

  // Fine-tuning on every measurement of this kernel on this machine.
  std::optional<int64_t> machine_id;
  {
    auto db = Database::Open(request.db_path, OpenMode::kReadOnly);
    machine_id = db->FindMachine(machine);
  }
  if (!machine_id)
    throw InputError(request.db_path, 0,
                     "no measurements of " + request.kernel + " on this machine to calibrate on");
  TrainingDataOptions data;
  data.kernel = request.kernel;
  data.db_path = request.db_path;
  data.corpus_manifest = request.manifest;
  data.shared_dir = shared;
  data.machine_id = *machine_id;
  data.skip_missing_patterns = true;
  data.validation_list = request.validation_list;
  data.require_validation = false;
  data.max_ms = request.max_ms;
  data.selection_fraction = 0.25;  // the patterns that judge the fine-tuning
  data.grid = manifest.grid;
  data.side_inputs = manifest.side_inputs;
  TrainOptions train;
  train.kernel = request.kernel;
  train.out_dir = report.model_dir;
  train.init_dir = request.model_dir;
  train.epochs = request.epochs;
  train.learning_rate = request.learning_rate;
  train.seed = request.seed;
  train.grid = manifest.grid;
  train.side_inputs = manifest.side_inputs;
  train.log = request.log;
  const auto train_start = std::chrono::steady_clock::now();
  report.metrics = TrainFromDatabase(data, train);
  report.train_s = MsSince(train_start) / 1000;
  return report;
}

}  // namespace sparsetune
