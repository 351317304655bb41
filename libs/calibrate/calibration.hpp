// `sparsetune calibrate`: a cost model fitted to this machine. A model trained on one CPU may
// rank schedules wrongly on another (other vector widths, caches, core counts), and collecting
// a whole corpus takes an hour or more. Calibration measures a small slice of the training
// corpus here, stores it in the schedule database under this machine, and fine-tunes the
// shipped model on it; tune then finds the result first (CalibratedModelDirectory).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/measuring.hpp"

namespace sparsetune {

struct CalibrationRequest {
  std::string kernel;    // spmv, spmm, sddmm or mttkrp
  std::string db_path;   // measurements are stored (and found again) here
  std::string manifest;  // the training corpus (datasets/corpus/corpus.tsv)
  // Held-out real matrices (datasets/corpus/validation.txt): never measured by calibration, but
  // when the database holds this machine's measurements of some (`collect` them), the
  // fine-tuning is judged on them too. "": none.
  std::string validation_list;
  std::string model_dir;  // the model to start from: the shipped one
  std::string out_dir;    // "": CalibratedModelDirectory of this machine
  // The manifest's first `patterns` entries for the kernel: its order is a fixed shuffle, so a
  // prefix is a representative slice of every family.
  int patterns = 48;
  int samples = 24;       // sampled schedules per pattern, besides FixedCSR
  double budget_s = 300;  // no pattern starts measuring once its expected end passes this
  double max_ms = 1000;   // slower runs are recorded as timeouts
  int epochs = 12;
  double learning_rate = 5e-5;
  uint64_t seed = 1;
  BusyPolicy on_busy = BusyPolicyFromEnvironment();
  // Writes a generated corpus entry's file: `arguments` are the manifest's source split into
  // words ("gen", the generator, its options; shared:PATH replaced by the file), `path` where
  // it goes. Throws on failure.
  std::function<void(const std::vector<std::string>& arguments, const std::string& path)> generate;
  std::function<void(const std::string&)> log;  // one line per step
};

struct CalibrationReport {
  std::string kernel;
  std::string model_dir;        // where the calibrated model is
  std::string machine_key;      // MachineKey of this machine
  bool machine_folder = false;  // model_dir is where tune looks for this machine's model
  int patterns_measured = 0;
  int patterns_already_stored = 0;  // measured by an earlier run: resumed
  int patterns_left_out = 0;        // a shared file that is missing, or over the budget
  int64_t measurements = 0;         // stored by this run
  double measure_s = 0;
  double train_s = 0;
  nlohmann::json metrics;  // the fine-tuning's metrics.json
  // --json: these fields and the metrics' before/after ranking.
  nlohmann::json ToJson() const;
};

// Measures, stores, fine-tunes and writes the model. Throws InputError for a kernel without a
// model, a missing model or manifest, or no measurements to fit.
CalibrationReport Calibrate(const CalibrationRequest& request);

}  // namespace sparsetune
