// The measurements a cost model learns from: a schedule database's verified times, grouped by
// pattern, each pattern's file read and featurized, split into training, epoch-selection and
// validation patterns.
#pragma once

#include <cstdint>
#include <string>

#include "costmodel/training.hpp"
#include "superschedule/waco_template.hpp"

namespace sparsetune {

struct TrainingDataOptions {
  std::string kernel;
  std::string db_path;
  // Where each matrix's pattern comes from: its source in the database, a file of the corpus
  // manifest (generated entries live in the corpus cache, see libs/io/inputs.hpp),
  // shared:PATH under shared_dir, or a path.
  std::string corpus_manifest;
  std::string shared_dir;
  // Real matrices held out for validation (datasets/corpus/validation.txt: paths relative to
  // shared_dir); their patterns and any resize of them validate, never train. Empty: no
  // validation patterns.
  std::string validation_list;
  // Without measurements of any held-out pattern: an error, or (false) no validation set.
  bool require_validation = true;
  // > 0: only this machine's measurements (calibration); 0: the machine with the most.
  int64_t machine_id = 0;
  // Leave out patterns whose file is not there (a user's database holds tunes of files since
  // moved) instead of refusing to train.
  bool skip_missing_patterns = false;
  // The share of the training patterns (a fixed count, drawn by fingerprint hash) that chooses
  // the epoch to keep instead of training; validation metrics are then those of a model that
  // never saw them.
  double selection_fraction = 0.1;
  int max_matrices = 0;  // > 0: only this many training matrices (quick runs)
  double max_ms = 1000;  // slower measurements are dropped, as WACO does
  // How the patterns are featurized (the model's own settings).
  GridBudget grid;
  SideInputs side_inputs = SideInputs::kSummary;
};

// Reads the kernel's verified measurements, groups them by pattern, resolves and featurizes each
// pattern's file and splits by the validation list. Throws InputError naming what is missing.
TrainingSet LoadTrainingSet(const TrainingDataOptions& options, const WacoTemplate& waco);

}  // namespace sparsetune
