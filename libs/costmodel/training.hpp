// Fitting a cost model to measurements that are given to it (libs/train gathers them from a
// schedule database): what the LibTorch module trains from and how.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/pattern_features.hpp"
#include "superschedule/waco_template.hpp"

namespace sparsetune {

// One pattern's measurements, and its features as the model sees them.
struct TrainingMatrix {
  std::string fingerprint;
  std::string name;
  std::string path;  // the pattern's file
  std::vector<ScheduleEncoding> schedules;
  std::vector<SuperSchedule> points;
  std::vector<double> times;  // median ms, one per schedule
  double fixed_csr_ms = 0;
  PatternGrid grid;                  // Featurize
  std::vector<float> side;           // SideInputValues, raw
  std::vector<float> summary_tiles;  // SummaryAndTileFeatures, raw
};

struct TrainingSet {
  std::vector<TrainingMatrix> train, validation;
  // Patterns kept out of training to choose the epoch, so that validation stays unseen.
  std::vector<TrainingMatrix> selection;
  int64_t dropped_rows = 0;        // measurements outside the template or over the time limit
  int64_t other_setting_rows = 0;  // measured on another machine or with other dense sizes
  int64_t missing_patterns = 0;    // left out: their file is not there
};

struct TrainOptions {
  std::string kernel;
  std::string out_dir;
  int epochs = 20;
  // Schedules per matrix and step. WACO took 32 (a GPU's memory); here WACONet's pass over the
  // pattern is the cost of a step, so one step ranks (nearly) every measured schedule of the
  // matrix: all their pairs teach for the price of one pass.
  int batch = 128;
  double learning_rate = 1e-4;
  uint64_t seed = 1;
  int threads = 0;  // 0: every hardware thread
  GridBudget grid;
  SideInputs side_inputs = SideInputs::kSummary;
  // Only the comparison models (summary features, with and without D2T2's tile statistics):
  // their metrics.json, no model.
  bool comparison_only = false;
  // Fine-tuning (calibration to this machine): start from the model in this folder, keep its
  // grid, side inputs, standardization and schedule set, and write a model only as good as it
  // on the selection patterns or better (else a copy of it). No comparison models are fitted.
  std::string init_dir;
  std::function<void(const std::string&)> log;
};

// Trains WACONet and, on the same data, the summary-feature models; writes the model folder
// (model_files.hpp) and returns metrics.json. Loads the LibTorch module.
nlohmann::json TrainCostModel(const TrainOptions& options, const TrainingSet& set);

// The module's own arithmetic against LibTorch's dense reference: the largest differences of
// the sparse convolution (values, weight and input gradients) from torch::conv2d, and of the
// plain-C++ head from the LibTorch head. For tests.
nlohmann::json CostModelSelfCheck();

}  // namespace sparsetune
