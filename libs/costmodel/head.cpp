#include "costmodel/head.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>

#include "base/errors.hpp"

namespace sparsetune {

namespace {
constexpr char kMagic[8] = {'S', 'T', 'H', 'E', 'A', 'D', '1', '\0'};
}

void MlpHead::Write(const std::string& path,
                    const std::vector<std::pair<std::vector<float>, std::vector<float>>>& layers,
                    const std::vector<std::pair<int, int>>& shapes) {
  std::ofstream out(path, std::ios::binary);
  out.write(kMagic, sizeof kMagic);
  const int32_t count = static_cast<int32_t>(layers.size());
  out.write(reinterpret_cast<const char*>(&count), sizeof count);
  for (size_t l = 0; l < layers.size(); ++l) {
    const int32_t dims[2] = {shapes[l].first, shapes[l].second};
    out.write(reinterpret_cast<const char*>(dims), sizeof dims);
    out.write(reinterpret_cast<const char*>(layers[l].first.data()),
              static_cast<std::streamsize>(layers[l].first.size() * sizeof(float)));
    out.write(reinterpret_cast<const char*>(layers[l].second.data()),
              static_cast<std::streamsize>(layers[l].second.size() * sizeof(float)));
  }
  if (!out) throw InternalError("cannot write " + path);
}

MlpHead MlpHead::Load(const std::string& model_dir) {
  const std::string path = model_dir + "/head.bin";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "cannot open the model's head");
  auto fail = [&](const std::string& why) { throw InputError(path, 0, why); };
  char magic[8];
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0)
    fail("not a sparsetune head file");
  int32_t count = 0;
  if (!in.read(reinterpret_cast<char*>(&count), sizeof count) || count != 3)
    fail("expected 3 layers");
  MlpHead h;
  std::vector<float>* weights[3] = {&h.w1_, &h.w2_, &h.w3_};
  std::vector<float>* biases[3] = {&h.b1_, &h.b2_, &h.b3_};
  int32_t previous_out = 0;
  for (int l = 0; l < 3; ++l) {
    int32_t dims[2];
    if (!in.read(reinterpret_cast<char*>(dims), sizeof dims)) fail("truncated");
    if (dims[0] <= 0 || dims[1] <= 0 || dims[0] > 4096 || dims[1] > 4096 ||
        (l > 0 && dims[1] != previous_out) || (l == 2 && dims[0] != 1) ||
        (l == 0 && dims[1] % 2 != 0))
      fail("layer " + std::to_string(l) + " has an unexpected shape");
    previous_out = dims[0];
    weights[l]->resize(size_t(dims[0]) * dims[1]);
    biases[l]->resize(dims[0]);
    in.read(reinterpret_cast<char*>(weights[l]->data()),
            static_cast<std::streamsize>(weights[l]->size() * sizeof(float)));
    in.read(reinterpret_cast<char*>(biases[l]->data()),
            static_cast<std::streamsize>(biases[l]->size() * sizeof(float)));
    if (!in) fail("truncated");
    if (l == 0) {
      h.hidden1_ = dims[0];
      h.embedding_ = dims[1] / 2;
    }
    if (l == 1) h.hidden2_ = dims[0];
  }
  return h;
}

std::vector<float> MlpHead::PrepareMatrix(const float* m) const {
  std::vector<float> out(b1_);
  const int in = 2 * embedding_;
  for (int o = 0; o < hidden1_; ++o) {
    const float* w = &w1_[size_t(o) * in];
    float sum = 0;
    for (int k = 0; k < embedding_; ++k) sum += w[k] * m[k];
    out[o] += sum;
  }
  return out;
}

std::vector<float> MlpHead::ProjectSchedule(const float* s) const {
  const int in = 2 * embedding_;
  std::vector<float> out(hidden1_);
  for (int o = 0; o < hidden1_; ++o) {
    const float* w = &w1_[size_t(o) * in + embedding_];
    float sum = 0;
    for (int k = 0; k < embedding_; ++k) sum += w[k] * s[k];
    out[o] = sum;
  }
  return out;
}

float MlpHead::Score(const std::vector<float>& prepared, const float* s) const {
  return ScoreProjected(prepared.data(), ProjectSchedule(s).data());
}

float MlpHead::ScoreProjected(const float* prepared, const float* projected) const {
  float h1[4096], h2[4096];
  for (int o = 0; o < hidden1_; ++o) {
    const float sum = prepared[o] + projected[o];
    h1[o] = sum > 0 ? sum : 0;
  }
  for (int o = 0; o < hidden2_; ++o) {
    const float* w = &w2_[size_t(o) * hidden1_];
    float sum = b2_[o];
    for (int k = 0; k < hidden1_; ++k) sum += w[k] * h1[k];
    h2[o] = sum > 0 ? sum : 0;
  }
  float score = b3_[0];
  for (int k = 0; k < hidden2_; ++k) score += w3_[k] * h2[k];
  return score;
}

}  // namespace sparsetune
