// Training a cost model from the measurements in a schedule database (`sparsetune train`).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/pattern_features.hpp"

namespace sparsetune {

struct TrainOptions {
  std::string kernel;
  std::string db_path;
  std::string out_dir;
  // Where each matrix's pattern comes from: its source in the database, a file of the corpus
  // manifest (generated entries live in the corpus cache, see libs/io/inputs.hpp),
  // shared:PATH under shared_dir, or a path.
  std::string corpus_manifest;
  std::string shared_dir;
  // Real matrices held out for validation (datasets/corpus/validation.txt: paths relative to
  // shared_dir); their patterns and any resize of them validate, never train.
  std::string validation_list;
  // The share of the training patterns (by fingerprint) that chooses the epoch to keep
  // instead of training; validation metrics are then those of a model that never saw them.
  double selection_fraction = 0.1;
  int epochs = 20;
  // Schedules per matrix and step. WACO took 32 (a GPU's memory); here WACONet's pass over the
  // pattern is the cost of a step, so one step ranks (nearly) every measured schedule of the
  // matrix: all their pairs teach for the price of one pass.
  int batch = 128;
  double learning_rate = 1e-4;
  uint64_t seed = 1;
  int threads = 0;       // 0: every hardware thread
  int max_matrices = 0;  // > 0: only this many training matrices (quick runs)
  double max_ms = 1000;  // slower measurements are dropped, as WACO does
  GridBudget grid;
  SideInputs side_inputs = SideInputs::kSummary;
  // Only the comparison models (summary features, with and without D2T2's tile statistics):
  // their metrics.json, no model.
  bool comparison_only = false;
  std::function<void(const std::string&)> log;
};

// Trains WACONet and, on the same data, the summary-feature model; writes the model folder
// (model_files.hpp) and returns metrics.json. Loads the LibTorch module. Throws InputError
// when the data cannot train a model (no measurements, a pattern file missing).
nlohmann::json TrainCostModel(const TrainOptions& options);

// The module's own arithmetic against LibTorch's dense reference: the largest differences of
// the sparse convolution (values, weight and input gradients) from torch::conv2d, and of the
// plain-C++ head from the LibTorch head. For tests.
nlohmann::json CostModelSelfCheck();

}  // namespace sparsetune
