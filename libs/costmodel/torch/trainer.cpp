// Training: WACONet and the schedule embedder and head, on a pairwise ranking loss within each
// matrix; then the same embedder and head on summary features, for comparison.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

#include "base/errors.hpp"
#include "base/threads.hpp"
#include "costmodel/head.hpp"
#include "costmodel/metrics.hpp"
#include "costmodel/model_files.hpp"
#include "costmodel/torch/networks.hpp"
#include "costmodel/torch/torch_model.hpp"
#include "costmodel/training.hpp"

namespace sparsetune {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What one matrix contributes: its measurements and features (given), and what is derived from
// them once.
struct Example {
  const TrainingMatrix* matrix = nullptr;
  std::vector<float> summary;  // raw: the summary part of the matrix's summary_tiles
  // WACONet's convolution maps and input, which do not depend on the weights: built on first
  // use and kept while the cache budget lasts.
  mutable std::shared_ptr<const WacoNetMaps> maps;
  mutable torch::Tensor features;
};

int64_t MapBytes(const WacoNetMaps& maps) {
  int64_t bytes = 0;
  for (const ConvMaps& layer : maps.layers) {
    bytes += int64_t(layer.output.coords.size()) * 4;
    for (size_t k = 0; k < layer.input_index.size(); ++k) {
      if (layer.input_index[k].defined())
        bytes += (layer.input_index[k].numel() + layer.output_index[k].numel()) * 8;
    }
  }
  return bytes;
}

void Standardize(std::vector<float>& v, const std::vector<float>& mean,
                 const std::vector<float>& stddev) {
  for (size_t k = 0; k < v.size(); ++k) v[k] = (v[k] - mean[k]) / stddev[k];
}

void MeanAndStd(const std::vector<std::vector<float>>& rows, std::vector<float>* mean,
                std::vector<float>* stddev) {
  const size_t d = rows.empty() ? 0 : rows[0].size();
  mean->assign(d, 0);
  stddev->assign(d, 0);
  for (const auto& r : rows)
    for (size_t k = 0; k < d; ++k) (*mean)[k] += r[k] / rows.size();
  for (const auto& r : rows)
    for (size_t k = 0; k < d; ++k)
      (*stddev)[k] += (r[k] - (*mean)[k]) * (r[k] - (*mean)[k]) / rows.size();
  for (auto& s : *stddev) s = std::sqrt(s) > 1e-6f ? std::sqrt(s) : 1.0f;
}

// The matrix embedding of an example, from WACONet or from the summary network.
class MatrixEncoder {
 public:
  virtual ~MatrixEncoder() = default;
  virtual torch::Tensor Embed(const Example& e) = 0;
  virtual std::vector<torch::Tensor> parameters() = 0;
  virtual void train(bool on) = 0;
};

class WacoNetEncoder : public MatrixEncoder {
 public:
  WacoNetEncoder(WacoNet net, std::vector<float> mean, std::vector<float> stddev)
      : net(std::move(net)), mean_(std::move(mean)), std_(std::move(stddev)) {}
  torch::Tensor Embed(const Example& e) override {
    std::shared_ptr<const WacoNetMaps> maps = e.maps;
    if (!maps) {
      maps = std::make_shared<const WacoNetMaps>(BuildWacoNetMaps(e.matrix->grid));
      const int64_t bytes = MapBytes(*maps);
      if (cached_bytes_ + bytes <= kCacheBudget) {
        e.maps = maps;
        cached_bytes_ += bytes;
      }
    }
    if (!e.features.defined()) {
      std::vector<float> features = e.matrix->grid.features;
      e.features = torch::from_blob(features.data(), {e.matrix->grid.sites(), 1}).clone();
    }
    std::vector<float> side = e.matrix->side;
    Standardize(side, mean_, std_);
    return net->forward(e.features, *maps,
                        torch::from_blob(side.data(), {int64_t(side.size())}).clone());
  }
  int64_t cached_bytes() const { return cached_bytes_; }
  std::vector<torch::Tensor> parameters() override { return net->parameters(); }
  void train(bool on) override { net->train(on); }
  WacoNet net;

 private:
  static constexpr int64_t kCacheBudget = int64_t(6) << 30;
  std::vector<float> mean_, std_;
  int64_t cached_bytes_ = 0;
};

class SummaryEncoder : public MatrixEncoder {
 public:
  SummaryEncoder(std::vector<float> mean, std::vector<float> stddev, bool tiles)
      : net(tiles ? kSummaryFeatures + kTileFeatures : kSummaryFeatures),
        mean_(std::move(mean)),
        std_(std::move(stddev)),
        tiles_(tiles) {}
  torch::Tensor Embed(const Example& e) override {
    std::vector<float> s = tiles_ ? e.matrix->summary_tiles : e.summary;
    Standardize(s, mean_, std_);
    return net->forward(torch::from_blob(s.data(), {1, int64_t(s.size())}).clone());
  }
  std::vector<torch::Tensor> parameters() override { return net->parameters(); }
  void train(bool on) override { net->train(on); }
  SummaryNet net;

 private:
  std::vector<float> mean_, std_;
  bool tiles_ = false;
};

struct Fitted {
  RankingMetrics best;            // validation metrics of the kept epoch
  RankingMetrics best_selection;  // the kept epoch's ranking of the selection patterns
  int best_epoch = -1;
  nlohmann::json epochs = nlohmann::json::array();
  double seconds = 0;
};

RankingMetrics Validate(MatrixEncoder& encoder, ScheduleEmbedder& embedder, Head& head,
                        const std::vector<Example>& validation) {
  torch::NoGradGuard no_grad;
  encoder.train(false);
  embedder->eval();
  head->eval();
  std::vector<RankedMatrix> ranked;
  for (const Example& e : validation) {
    const torch::Tensor m = encoder.Embed(e);
    const torch::Tensor scores = head->forward(m, embedder->forward(e.matrix->schedules));
    RankedMatrix r;
    r.times = e.matrix->times;
    r.scores.assign(scores.data_ptr<float>(), scores.data_ptr<float>() + scores.numel());
    r.fixed_csr_ms = e.matrix->fixed_csr_ms;
    ranked.push_back(std::move(r));
  }
  encoder.train(true);
  embedder->train();
  head->train();
  return EvaluateRanking(ranked);
}

// Trains encoder, embedder and head together; keeps the epoch that ranks the selection
// patterns best (RanksSelectionBetter; written through `save`) and reports the validation metrics
// of that epoch, so that validation never chooses anything. `start`, when its best_epoch is 0, is
// the starting model's account: an epoch is kept only when it ranks the selection better.
Fitted Fit(const std::string& label, MatrixEncoder& encoder, ScheduleEmbedder& embedder, Head& head,
           const std::vector<Example>& train, const std::vector<Example>& selection,
           const std::vector<Example>& validation, const TrainOptions& o,
           const std::function<void()>& save, const Fitted& start = {}) {
  std::vector<torch::Tensor> parameters = encoder.parameters();
  for (auto& p : embedder->parameters()) parameters.push_back(p);
  for (auto& p : head->parameters()) parameters.push_back(p);
  torch::optim::Adam adam(parameters, torch::optim::AdamOptions(o.learning_rate));
  std::mt19937_64 rng(o.seed);
  std::vector<size_t> order(train.size());
  std::iota(order.begin(), order.end(), size_t(0));
  Fitted fitted = start;
  const auto begin = Clock::now();
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    const auto epoch_start = Clock::now();
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0;
    for (size_t idx : order) {
      const Example& e = train[idx];
      const TrainingMatrix& m = *e.matrix;
      // A batch of schedules of this matrix, as WACO: one step per matrix and epoch.
      std::vector<size_t> pick(m.times.size());
      std::iota(pick.begin(), pick.end(), size_t(0));
      std::shuffle(pick.begin(), pick.end(), rng);
      pick.resize(std::min<size_t>(pick.size(), size_t(o.batch)));
      std::vector<ScheduleEncoding> schedules;
      std::vector<double> times;
      for (size_t k : pick) {
        schedules.push_back(m.schedules[k]);
        times.push_back(m.times[k]);
      }
      adam.zero_grad();
      const torch::Tensor scores = head->forward(encoder.Embed(e), embedder->forward(schedules));
      const torch::Tensor loss = PairwiseRankingLoss(scores, times);
      loss.backward();
      adam.step();
      loss_sum += loss.item<double>();
    }
    const RankingMetrics chosen_by = Validate(encoder, embedder, head, selection);
    const RankingMetrics v = Validate(encoder, embedder, head, validation);
    nlohmann::json line = v.ToJson();
    line["selection_kendall_tau"] = chosen_by.kendall_tau;
    line["epoch"] = epoch + 1;
    line["loss"] = loss_sum / std::max<size_t>(1, train.size());
    line["seconds"] = SecondsSince(epoch_start);
    fitted.epochs.push_back(line);
    if (o.log) {
      char text[320];
      std::snprintf(
          text, sizeof text,
          "train %s %s: epoch %d/%d loss %.4f | selection tau %.3f top1 %.3f | validation "
          "pairwise %.3f tau %.3f top1 %.3f top10 %.3f within10%% %.2f | %.0fs",
          o.kernel.c_str(), label.c_str(), epoch + 1, o.epochs, line["loss"].get<double>(),
          chosen_by.kendall_tau, chosen_by.top1_regret, v.pairwise_accuracy, v.kendall_tau,
          v.top1_regret, v.top10_regret, v.top10_within_10pct, SecondsSince(epoch_start));
      o.log(text);
    }
    line["selection_top1_regret"] = chosen_by.top1_regret;
    line["selection_top10_regret"] = chosen_by.top10_regret;
    // Fine-tuning goes by the top of the ranking (RanksSelectionBetter).
    if (fitted.best_epoch < 0 ||
        RanksSelectionBetter(chosen_by, fitted.best_selection, !o.init_dir.empty())) {
      fitted.best = v;
      fitted.best_selection = chosen_by;
      fitted.best_epoch = epoch + 1;
      if (save) save();
    }
  }
  fitted.seconds = SecondsSince(begin);
  return fitted;
}

// Copies a LibTorch head's layers from a plain-float head file.
void LoadHead(Head& head, const std::string& model_dir) {
  const auto layers = MlpHead::Load(model_dir).Layers();
  torch::NoGradGuard no_grad;
  torch::nn::Linear* linear[3] = {&head->l1, &head->l2, &head->l3};
  for (size_t l = 0; l < 3; ++l) {
    torch::Tensor& w = (*linear[l])->weight;
    torch::Tensor& b = (*linear[l])->bias;
    if (int64_t(layers[l].first.size()) != w.numel() ||
        int64_t(layers[l].second.size()) != b.numel())
      throw InputError(model_dir + "/" + kModelHead, 0,
                       "layer " + std::to_string(l) + " does not have this build's shape");
    w.copy_(torch::from_blob(const_cast<float*>(layers[l].first.data()), w.sizes()));
    b.copy_(torch::from_blob(const_cast<float*>(layers[l].second.data()), b.sizes()));
  }
}

void SaveHead(Head& head, const std::string& path) {
  std::vector<std::pair<std::vector<float>, std::vector<float>>> layers;
  std::vector<std::pair<int, int>> shapes;
  for (torch::nn::Linear* l : {&head->l1, &head->l2, &head->l3}) {
    const torch::Tensor w = (*l)->weight.detach().contiguous();
    const torch::Tensor b = (*l)->bias.detach().contiguous();
    layers.emplace_back(std::vector<float>(w.data_ptr<float>(), w.data_ptr<float>() + w.numel()),
                        std::vector<float>(b.data_ptr<float>(), b.data_ptr<float>() + b.numel()));
    shapes.emplace_back(int(w.size(0)), int(w.size(1)));
  }
  MlpHead::Write(path, layers, shapes);
}

// The model folder's three networks, as TorchCostModel loads them.
void SaveNetworks(const std::string& dir, WacoNetEncoder& encoder, ScheduleEmbedder& embedder,
                  Head& head) {
  torch::save(encoder.net, dir + "/" + kModelWacoNet);
  torch::save(embedder, dir + "/" + kModelEmbedder);
  SaveHead(head, dir + "/" + kModelHead);
}

std::vector<Example> Examples(const std::vector<TrainingMatrix>& matrices) {
  std::vector<Example> out;
  for (const TrainingMatrix& m : matrices) {
    Example e;
    e.matrix = &m;
    e.summary.assign(m.summary_tiles.begin(), m.summary_tiles.begin() + kSummaryFeatures);
    out.push_back(std::move(e));
  }
  return out;
}

// The three training sets of one run.
struct Examples3 {
  std::vector<Example> train, selection, validation;
};

// The comparison models: WACO's summary features, and the same with D2T2's tile statistics.
// Their metrics go into `metrics`; their epochs and times are returned.
std::pair<nlohmann::json, nlohmann::json> FitComparisonModels(const TrainOptions& o,
                                                              const TrainingSet& set,
                                                              const EncodingLayout& layout,
                                                              const Examples3& x,
                                                              nlohmann::json& metrics) {
  std::vector<std::vector<float>> summaries, summaries_tiles;
  for (const Example& e : x.train) {
    summaries.push_back(e.summary);
    summaries_tiles.push_back(e.matrix->summary_tiles);
  }
  std::vector<float> summary_mean, summary_std, tiles_mean, tiles_std;
  MeanAndStd(summaries, &summary_mean, &summary_std);
  MeanAndStd(summaries_tiles, &tiles_mean, &tiles_std);
  SummaryEncoder summary(summary_mean, summary_std, false);
  ScheduleEmbedder summary_embedder(layout);
  Head summary_head;
  const Fitted summary_fit = Fit("summary", summary, summary_embedder, summary_head, x.train,
                                 x.selection, x.validation, o, {});
  SummaryEncoder tiles(tiles_mean, tiles_std, true);
  ScheduleEmbedder tiles_embedder(layout);
  Head tiles_head;
  const Fitted tiles_fit = Fit("summary+tiles", tiles, tiles_embedder, tiles_head, x.train,
                               x.selection, x.validation, o, {});
  metrics["kernel"] = o.kernel;
  metrics["summary_features"] = summary_fit.best.ToJson();
  metrics["summary_features"]["best_epoch"] = summary_fit.best_epoch;
  metrics["summary_tile_features"] = tiles_fit.best.ToJson();
  metrics["summary_tile_features"]["best_epoch"] = tiles_fit.best_epoch;
  metrics["validation_patterns"] = set.validation.size();
  metrics["training_patterns"] = set.train.size();
  return {
      {{"summary_features", summary_fit.epochs}, {"summary_tile_features", tiles_fit.epochs}},
      {{"summary_features", summary_fit.seconds}, {"summary_tile_features", tiles_fit.seconds}}};
}

// The schedule set the search indexes: every distinct point of the training data.
std::vector<SuperSchedule> SchedulePoints(const TrainingSet& set) {
  std::vector<SuperSchedule> points;
  std::set<std::string> seen;
  for (const TrainingMatrix& m : set.train) {
    for (const SuperSchedule& s : m.points) {
      if (seen.insert(s.ToJson().dump()).second) points.push_back(s);
    }
  }
  return points;
}

// Calibration: the model in o.init_dir trained further on this machine's measurements. The
// selection patterns judge both the starting model and every epoch; the output folder holds
// the starting model unchanged unless an epoch ranks them better.
nlohmann::json FineTune(const TrainOptions& o, const TrainingSet& set) {
  namespace fs = std::filesystem;
  const auto start = Clock::now();
  const ModelManifest manifest = ReadModelManifest(o.init_dir, o.kernel);
  const fs::path from = o.init_dir, dir = o.out_dir;
  fs::create_directories(dir);
  if (fs::equivalent(from, dir))
    throw InputError(o.out_dir, 0, "calibration writes a new model: give another folder");
  for (const char* file : {kModelManifest, kModelWacoNet, kModelEmbedder, kModelHead,
                           kModelSchedules, kModelMetrics}) {
    if (fs::exists(from / file))
      fs::copy_file(from / file, dir / file, fs::copy_options::overwrite_existing);
  }
  WacoNetEncoder encoder(WacoNet(SideInputCount(manifest.side_inputs)), manifest.side_mean,
                         manifest.side_std);
  ScheduleEmbedder embedder(manifest.layout);
  Head head;
  LoadModuleWeights(encoder.net, o.init_dir, kModelWacoNet);
  LoadModuleWeights(embedder, o.init_dir, kModelEmbedder);
  LoadHead(head, o.init_dir);

  const Examples3 x{Examples(set.train), Examples(set.selection), Examples(set.validation)};
  // Without held-out patterns of its own, the run reports on the selection patterns.
  const std::vector<Example>& validation = x.validation.empty() ? x.selection : x.validation;
  Fitted before;
  before.best_epoch = 0;
  before.best = Validate(encoder, embedder, head, validation);
  before.best_selection = Validate(encoder, embedder, head, x.selection);
  const Fitted tuned = Fit(
      "calibration", encoder, embedder, head, x.train, x.selection, validation, o,
      [&] { SaveNetworks(dir.string(), encoder, embedder, head); }, before);

  nlohmann::json model = nlohmann::json::parse(std::ifstream(from / kModelManifest));
  model["calibrated"] = {{"from", fs::absolute(from).string()},
                         {"training_patterns", set.train.size()},
                         {"selection_patterns", set.selection.size()},
                         {"epochs", o.epochs},
                         {"best_epoch", tuned.best_epoch},
                         {"learning_rate", o.learning_rate},
                         {"selection_tau_before", before.best_selection.kendall_tau},
                         {"selection_tau_after", tuned.best_selection.kendall_tau},
                         {"selection_top1_regret_before", before.best_selection.top1_regret},
                         {"selection_top1_regret_after", tuned.best_selection.top1_regret},
                         {"selection_top10_regret_before", before.best_selection.top10_regret},
                         {"selection_top10_regret_after", tuned.best_selection.top10_regret}};
  std::ofstream(dir / kModelManifest) << model.dump(2) << "\n";

  nlohmann::json metrics;
  metrics["kernel"] = o.kernel;
  metrics["calibration"] = {{"before", before.best.ToJson()},
                            {"after", tuned.best.ToJson()},
                            {"best_epoch", tuned.best_epoch},
                            {"selection_tau_before", before.best_selection.kendall_tau},
                            {"selection_tau_after", tuned.best_selection.kendall_tau},
                            {"selection_top1_regret_before", before.best_selection.top1_regret},
                            {"selection_top1_regret_after", tuned.best_selection.top1_regret},
                            {"selection_top10_regret_before", before.best_selection.top10_regret},
                            {"selection_top10_regret_after", tuned.best_selection.top10_regret},
                            {"judged_on", x.validation.empty() ? "selection" : "validation"},
                            {"training_patterns", set.train.size()},
                            {"selection_patterns", set.selection.size()},
                            {"validation_patterns", set.validation.size()}};
  metrics["epochs"] = {{"calibration", tuned.epochs}};
  metrics["training_seconds"] = {{"calibration", tuned.seconds}, {"total", SecondsSince(start)}};
  std::ofstream(dir / kModelMetrics) << metrics.dump(2) << "\n";
  return metrics;
}

}  // namespace

nlohmann::json TrainInModule(const TrainOptions& o, const TrainingSet& set) {
  const auto start = Clock::now();
  torch::set_num_threads(o.threads > 0 ? o.threads : HardwareThreads());
  torch::manual_seed(o.seed);
  auto waco = WacoTemplate::ForKernel(o.kernel);
  if (!waco) throw InputError("train: " + o.kernel + " has no SuperSchedule template to model");
  if (!o.init_dir.empty()) return FineTune(o, set);
  const Examples3 x{Examples(set.train), Examples(set.selection), Examples(set.validation)};
  ModelManifest manifest;
  manifest.kernel = o.kernel;
  manifest.template_version = WacoTemplate::Version();
  manifest.layout = waco->Layout();
  manifest.grid = o.grid;
  manifest.side_inputs = o.side_inputs;
  std::vector<std::vector<float>> sides;
  for (const Example& e : x.train) sides.push_back(e.matrix->side);
  MeanAndStd(sides, &manifest.side_mean, &manifest.side_std);

  namespace fs = std::filesystem;
  fs::create_directories(o.out_dir);
  const fs::path dir = o.out_dir;
  nlohmann::json metrics;
  auto [epochs, seconds] = FitComparisonModels(o, set, manifest.layout, x, metrics);
  if (o.comparison_only) {
    metrics["epochs"] = epochs;
    seconds["total"] = SecondsSince(start);
    metrics["training_seconds"] = seconds;
    std::ofstream(dir / kModelMetrics) << metrics.dump(2) << "\n";
    return metrics;
  }

  WacoNetEncoder encoder(WacoNet(SideInputCount(o.side_inputs)), manifest.side_mean,
                         manifest.side_std);
  ScheduleEmbedder embedder(manifest.layout);
  Head head;
  const Fitted waconet = Fit("WACONet", encoder, embedder, head, x.train, x.selection, x.validation,
                             o, [&] { SaveNetworks(dir.string(), encoder, embedder, head); });
  if (o.log)
    o.log("train " + o.kernel + ": WACONet's convolution maps of " +
          std::to_string(encoder.cached_bytes() >> 20) + " MiB kept between epochs");

  const std::vector<SuperSchedule> set_points = SchedulePoints(set);
  WriteScheduleSet((dir / kModelSchedules).string(), set_points);
  nlohmann::json model = manifest.ToJson();
  model["trained"] = {{"training_patterns", set.train.size()},
                      {"selection_patterns", set.selection.size()},
                      {"validation_patterns", set.validation.size()},
                      {"epochs", o.epochs},
                      {"best_epoch", waconet.best_epoch},
                      {"learning_rate", o.learning_rate},
                      {"batch", o.batch},
                      {"seed", o.seed}};
  std::ofstream(dir / kModelManifest) << model.dump(2) << "\n";

  metrics["validation"] = waconet.best.ToJson();
  metrics["validation"]["best_epoch"] = waconet.best_epoch;
  epochs["waconet"] = waconet.epochs;
  metrics["epochs"] = epochs;
  seconds["waconet"] = waconet.seconds;
  seconds["total"] = SecondsSince(start);
  metrics["training_seconds"] = seconds;
  metrics["schedule_set"] = set_points.size();
  metrics["selection_patterns"] = set.selection.size();
  metrics["validation_names"] = nlohmann::json::array();
  for (const auto& m : set.validation) metrics["validation_names"].push_back(m.name);
  std::ofstream(dir / kModelMetrics) << metrics.dump(2) << "\n";
  return metrics;
}

}  // namespace sparsetune
