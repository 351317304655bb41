#pragma once

// The cost model's public interface. No LibTorch here: the implementation lives in a shared
// module (opened with dlopen on first use), so commands that never score a schedule do not pay
// LibTorch's start-up cost, and code that includes this header compiles quickly.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "superschedule/waco_template.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

// A trained model for one kernel (models/<kernel>/): WACONet over the sparsity pattern, the
// schedule embedder over the kernel's SuperSchedule encoding, and the head that scores a
// (matrix embedding, schedule embedding) pair. Lower scores mean faster; scores only rank
// schedules of the same matrix.
class CostModel {
 public:
  virtual ~CostModel() = default;

  virtual const std::string& kernel() const = 0;
  virtual int embedding_size() const = 0;  // 128: both embeddings

  // WACONet forward pass on the pattern (values are ignored).
  virtual std::vector<float> EmbedMatrix(const CooTensor& pattern) = 0;
  // Schedule embeddings, row-major: schedules.size() x embedding_size().
  virtual std::vector<float> EmbedSchedules(const std::vector<ScheduleEncoding>& schedules) = 0;

  // Batched scoring, in the manner of Halide's autoscheduler: enqueue schedules for one
  // matrix, then evaluate them together; each enqueued slot receives its score.
  virtual void SetMatrix(const CooTensor& pattern) = 0;
  virtual void Enqueue(const ScheduleEncoding& schedule, float* score_out) = 0;
  virtual void EvaluateCosts() = 0;

  // The schedules the search indexes: the distinct SuperSchedules of the training data.
  virtual const std::vector<SuperSchedule>& schedule_set() const = 0;
  // The model's folder (its head weights are read from there by the plain-C++ head).
  virtual const std::string& directory() const = 0;
};

// Loads models/<kernel>/ from `model_dir` through the LibTorch module. Throws InputError
// naming the file when the model is missing, truncated, for another kernel or for another
// template version.
std::unique_ptr<CostModel> LoadCostModel(const std::string& model_dir, const std::string& kernel);

}  // namespace sparsetune
