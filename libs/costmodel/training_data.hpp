// The measurements a cost model learns from, per matrix, in plain C++.
#pragma once

#include <string>
#include <vector>

#include "costmodel/training.hpp"
#include "superschedule/waco_template.hpp"

namespace sparsetune {

struct TrainingMatrix {
  std::string fingerprint;
  std::string name;
  std::string path;  // the pattern's file
  std::vector<ScheduleEncoding> schedules;
  std::vector<SuperSchedule> points;
  std::vector<double> times;  // median ms, one per schedule
  double fixed_csr_ms = 0;
};

struct TrainingSet {
  std::vector<TrainingMatrix> train, validation;
  // Patterns kept out of training to choose the epoch, so that validation stays unseen.
  std::vector<TrainingMatrix> selection;
  int64_t dropped_rows = 0;        // measurements outside the template or over max_ms
  int64_t other_setting_rows = 0;  // measured on another machine or with other dense sizes
};

// Reads the kernel's verified measurements, groups them by pattern, resolves each pattern's
// file and splits by the validation list. Throws InputError naming what is missing.
TrainingSet LoadTrainingSet(const TrainOptions& options, const WacoTemplate& waco);

}  // namespace sparsetune
