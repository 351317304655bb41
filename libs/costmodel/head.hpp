// The cost model's head in plain C++: Linear(256,128)-ReLU-Linear(128,64)-ReLU-Linear(64,1) on
// [matrix embedding, schedule embedding]. The search evaluates it as the distance of its graph
// walk, millions of times, without LibTorch.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sparsetune {

class MlpHead {
 public:
  // Reads <model_dir>/head.bin, as training writes it. Throws InputError naming the file.
  static MlpHead Load(const std::string& model_dir);
  // The layers as (out x in row-major weights, bias).
  static void Write(const std::string& path,
                    const std::vector<std::pair<std::vector<float>, std::vector<float>>>& layers,
                    const std::vector<std::pair<int, int>>& shapes);

  int embedding_size() const { return embedding_; }
  // The layers as Write takes them: (out x in row-major weights, bias) and (out, in).
  std::vector<std::pair<std::vector<float>, std::vector<float>>> Layers() const {
    return {{w1_, b1_}, {w2_, b2_}, {w3_, b3_}};
  }
  // First layer's matrix half, once per matrix: W1[:, :e] m + b1.
  std::vector<float> PrepareMatrix(const float* matrix_embedding) const;
  // The first layer's schedule half, once per schedule: W1[:, e:] s (hidden-size floats).
  std::vector<float> ProjectSchedule(const float* schedule_embedding) const;
  int projection_size() const { return hidden1_; }
  // The score of one schedule for a prepared matrix (lower: predicted faster).
  float Score(const std::vector<float>& prepared, const float* schedule_embedding) const;
  // The same from the schedule's projection: the layers after the first only.
  float ScoreProjected(const float* prepared, const float* projected_schedule) const;
  float Score(const float* matrix_embedding, const float* schedule_embedding) const {
    return Score(PrepareMatrix(matrix_embedding), schedule_embedding);
  }

 private:
  int embedding_ = 0, hidden1_ = 0, hidden2_ = 0;
  std::vector<float> w1_, b1_, w2_, b2_, w3_, b3_;  // row-major (out x in)
};

}  // namespace sparsetune
