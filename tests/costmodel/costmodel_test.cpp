// The cost model: its arithmetic against LibTorch's dense reference, a tiny end-to-end
// training run, loading (and refusing) model folders, and LibTorch staying out of the
// commands that do not need it.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "cli/cli_support.hpp"
#include "cli/json_schema.hpp"
#include "costmodel/cost_model.hpp"
#include "costmodel/metrics.hpp"
#include "costmodel/model_files.hpp"
#include "costmodel/training.hpp"
#include "io/read.hpp"
#include "search/schedule_index.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

TEST(CostModel, SparseConvolutionAndHeadMatchLibTorch) {
  const nlohmann::json check = CostModelSelfCheck();
  EXPECT_LT(check["conv_value_error"].get<double>(), 1e-4) << check.dump();
  EXPECT_LT(check["conv_weight_gradient_error"].get<double>(), 1e-3) << check.dump();
  EXPECT_LT(check["conv_input_gradient_error"].get<double>(), 1e-4) << check.dump();
  EXPECT_LT(check["head_error"].get<double>(), 1e-4) << check.dump();
}

TEST(CostModel, RankingMetrics) {
  // Scores in the measured order: perfect; reversed: every pair wrong.
  RankedMatrix right{{1, 2, 3, 4}, {0.1, 0.2, 0.3, 0.4}, 2};
  RankedMatrix wrong{{1, 2, 3, 4}, {4, 3, 2, 1}, 2};
  RankingMetrics m = EvaluateRanking({right});
  EXPECT_DOUBLE_EQ(m.pairwise_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(m.kendall_tau, 1.0);
  EXPECT_DOUBLE_EQ(m.top1_regret, 1.0);
  EXPECT_DOUBLE_EQ(m.oracle_speedup_captured, 1.0);
  m = EvaluateRanking({wrong});
  EXPECT_DOUBLE_EQ(m.pairwise_accuracy, 0.0);
  EXPECT_DOUBLE_EQ(m.kendall_tau, -1.0);
  EXPECT_DOUBLE_EQ(m.top1_regret, 4.0);
  EXPECT_DOUBLE_EQ(m.top10_regret, 1.0);  // all four are in the top 10
  EXPECT_DOUBLE_EQ(m.top10_within_10pct, 1.0);
  // A random ranking of four: the first is any of them alike; its top 10 holds all four.
  EXPECT_NEAR(m.random_top1_regret, std::pow(24.0, 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(m.random_top10_regret, 1.0);
  EXPECT_DOUBLE_EQ(m.median_pool, 4);
}

TEST(CostModel, FineTuningKeepsTheEpochWithTheBetterTopTrainingTheBetterTau) {
  RankingMetrics kept, epoch;
  kept.top1_regret = epoch.top1_regret = 1.2;
  kept.top10_regret = 1.05;
  kept.kendall_tau = 0.70;
  // Orders the whole pool better, its first ten worse.
  epoch.top10_regret = 1.08;
  epoch.kendall_tau = 0.78;
  EXPECT_FALSE(RanksSelectionBetter(epoch, kept, /*by_top=*/true));
  EXPECT_TRUE(RanksSelectionBetter(epoch, kept, /*by_top=*/false));
  // The same top: tau decides.
  epoch.top10_regret = 1.05;
  EXPECT_TRUE(RanksSelectionBetter(epoch, kept, true));
  epoch.kendall_tau = 0.60;
  EXPECT_FALSE(RanksSelectionBetter(epoch, kept, true));
  // A better top ten wins over a worse tau, and a better first choice over both.
  epoch.top10_regret = 1.01;
  EXPECT_TRUE(RanksSelectionBetter(epoch, kept, true));
  EXPECT_FALSE(RanksSelectionBetter(epoch, kept, false));
  epoch.top1_regret = 1.3;
  EXPECT_FALSE(RanksSelectionBetter(epoch, kept, true));
  epoch.top10_regret = 1.2;
  epoch.top1_regret = 1.1;
  EXPECT_TRUE(RanksSelectionBetter(epoch, kept, true));
}

TEST(CostModel, RandomRankingBaselineIsTheExactExpectationOverEveryTop10) {
  // Twelve schedules: the baseline is the mean over all C(12, 10) = 66 equally likely top-10
  // sets of a random ranking, which this enumerates.
  const std::vector<double> times = {3.0, 1.0, 1.05, 7, 2, 9, 4, 1.2, 6, 8, 5, 1.5};
  const double fixed = 6.5;
  RankedMatrix r{times, std::vector<double>(times.size(), 0.0), fixed};
  const RankingMetrics m = EvaluateRanking({r});
  double log_regret = 0, within = 0, log_speedup = 0;
  int sets = 0;
  for (unsigned mask = 0; mask < (1u << 12); ++mask) {
    if (__builtin_popcount(mask) != 10) continue;
    double best = 1e9;
    for (int i = 0; i < 12; ++i)
      if (mask >> i & 1) best = std::min(best, times[i]);
    log_regret += std::log(best / 1.0);
    within += best <= 1.1;
    log_speedup += std::log(fixed / best);
    ++sets;
  }
  ASSERT_EQ(sets, 66);
  EXPECT_NEAR(m.random_top10_regret, std::exp(log_regret / sets), 1e-12);
  EXPECT_NEAR(m.random_top10_within_10pct, within / sets, 1e-12);
  EXPECT_NEAR(m.random_oracle_speedup_captured, (log_speedup / sets) / std::log(fixed / 1.0),
              1e-12);
}

// The move weights in the shipped SpMM model are what `train --moves-only` learns from the
// shipped measurements; the rest of the manifest is left as it was.
TEST(CostModel, TheShippedMoveWeightsAreLearnedFromTheShippedMeasurements) {
  testing::TempDir dir;
  const std::string source = SPARSETUNE_SOURCE_DIR;
  const std::string db = dir.File("spmm.db");
  const auto imported = testing::RunCli(
      {"db", "import", source + "/datasets/measurements/spmm.jsonl.gz", "--db", db});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const std::string model = dir.File("model");
  fs::copy(source + "/models/spmm", model, fs::copy_options::recursive);
  nlohmann::json shipped;
  std::ifstream(model + "/" + kModelManifest) >> shipped;
  ASSERT_TRUE(shipped.contains("refine_moves"));
  nlohmann::json stripped = shipped;
  stripped.erase("refine_moves");
  std::ofstream(model + "/" + kModelManifest) << stripped.dump(2);

  const auto learned = testing::RunCli({"train", "--kernel", "spmm", "--db", db, "--out", model,
                                        "--moves-only", "--tune-top-k", "7"});
  ASSERT_EQ(learned.exit_code, 0) << learned.err;
  EXPECT_NE(learned.out.find("split j up"), std::string::npos) << learned.out;
  nlohmann::json written;
  std::ifstream(model + "/" + kModelManifest) >> written;
  EXPECT_EQ(written["refine_moves"], shipped["refine_moves"]);
  EXPECT_GT(written["refine_moves"]["neighbours"].get<int>(), 5000);
  EXPECT_EQ(written["tune_top_k"], 7);
  written.erase("refine_moves");
  written.erase("tune_top_k");
  EXPECT_EQ(written, stripped);
  EXPECT_EQ(ModelRefineMoves(model), shipped["refine_moves"]);

  const auto no_model = testing::RunCli(
      {"train", "--kernel", "spmm", "--db", db, "--out", dir.File("empty"), "--moves-only"});
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_NE(no_model.err.find(dir.File("empty") + "/model.json"), std::string::npos)
      << no_model.err;
}

// Collects a few real matrices, trains one epoch (WACONet seeing the summary and tile
// statistics beside the pattern; the shipped models' summary inputs are exercised by tune's
// tests), then loads the model and scores with it.
class TrainedModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    const std::vector<std::string> names = {"bcsstk01", "west0067", "lp_adlittle", "rajat19"};
    std::vector<std::string> files;
    for (const auto& n : names) {
      const std::string path = testing::SharedPath("datasets/matrices/" + n + ".mtx");
      if (path.empty()) GTEST_SKIP() << "the shared datasets are not here";
      files.push_back(path);
    }
    const std::string db = dir_->File("train.db");
    std::vector<std::string> collect = {"collect", "--kernel", "spmv",     "--samples", "8",
                                        "--db",    db,         "--max-ms", "200"};
    collect.insert(collect.end(), files.begin(), files.end());
    const auto c = testing::RunCli(collect);
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const std::string validation = dir_->File("validation.txt", "matrices/rajat19.mtx\n");
    model_ = dir_->path() + "/model";
    const auto t = testing::RunCli(
        {"train", "--kernel", "spmv", "--db", db, "--out", model_, "--epochs", "1", "--validation",
         validation, "--side-inputs", "summary-tiles", "--json"},
        {"SPARSETUNE_SHARED_DATASETS=" + std::string(SPARSETUNE_SHARED_DIR) + "/datasets"});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    metrics_ = new nlohmann::json(nlohmann::json::parse(t.out));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete metrics_;
  }
  void SetUp() override {
    if (!metrics_) GTEST_SKIP() << "no model was trained";
  }
  static testing::TempDir* dir_;
  static std::string model_;
  static nlohmann::json* metrics_;
};
testing::TempDir* TrainedModel::dir_ = nullptr;
std::string TrainedModel::model_;
nlohmann::json* TrainedModel::metrics_ = nullptr;

TEST_F(TrainedModel, WritesTheModelAndBothModelsMetrics) {
  for (const char* file :
       {kModelManifest, kModelWacoNet, kModelEmbedder, kModelHead, kModelSchedules, kModelMetrics})
    EXPECT_TRUE(fs::exists(fs::path(model_) / file)) << file;
  EXPECT_EQ((*metrics_)["kernel"], "spmv");
  nlohmann::json manifest;
  std::ifstream(fs::path(model_) / kModelManifest) >> manifest;
  EXPECT_EQ(manifest["side_inputs"], "summary-tiles");
  EXPECT_EQ(manifest["side_mean"].size(), 18u);  // 10 summary and 8 tile statistics
  // No neighbours were collected: nothing to weigh the second round's moves by.
  EXPECT_FALSE(manifest.contains("refine_moves"));
  for (const char* model : {"validation", "summary_features"}) {
    for (const char* field :
         {"pairwise_accuracy", "kendall_tau", "top1_regret", "top10_regret", "top10_within_10pct"})
      EXPECT_TRUE((*metrics_)[model].contains(field)) << model << " " << field;
    EXPECT_EQ((*metrics_)[model]["matrices"], 1);
  }
}

TEST_F(TrainedModel, LoadsAndScores) {
  // Kernels timed after a model call must still get every thread: loading and running the
  // model must leave the caller's OpenMP thread count as it was.
  omp_set_num_threads(std::max(2, omp_get_max_threads()));
  const int threads = omp_get_max_threads();
  auto model = LoadCostModel(model_, "spmv");
  EXPECT_EQ(model->embedding_size(), 128);
  ASSERT_FALSE(model->schedule_set().empty());
  const CooTensor pattern = testing::SmallWorkload(2);
  const std::vector<float> m = model->EmbedMatrix(pattern);
  ASSERT_EQ(m.size(), 128u);
  auto waco = WacoTemplate::ForKernel("spmv");
  std::vector<ScheduleEncoding> encodings;
  for (size_t k = 0; k < std::min<size_t>(5, model->schedule_set().size()); ++k)
    encodings.push_back(waco->Encode(model->schedule_set()[k]));
  EXPECT_EQ(model->EmbedSchedules(encodings).size(), encodings.size() * 128);
  std::vector<float> scores(encodings.size(), std::nanf(""));
  model->SetMatrix(pattern);
  for (size_t k = 0; k < encodings.size(); ++k) model->Enqueue(encodings[k], &scores[k]);
  model->EvaluateCosts();
  for (float s : scores) EXPECT_TRUE(std::isfinite(s));
  EXPECT_EQ(omp_get_max_threads(), threads);
}

TEST_F(TrainedModel, RefusesModelsThatDoNotFit) {
  auto expect_refused = [](const std::string& dir, const std::string& kernel,
                           const std::string& file) {
    try {
      LoadCostModel(dir, kernel);
      ADD_FAILURE() << "loaded " << dir;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    }
  };
  expect_refused(dir_->path() + "/nowhere", "spmv", "model.json");
  expect_refused(model_, "spmm", "model.json");  // another kernel
  // Another template version.
  const std::string old = dir_->path() + "/old";
  fs::copy(model_, old);
  nlohmann::json manifest;
  std::ifstream(old + "/model.json") >> manifest;
  manifest["template_version"] = manifest["template_version"].get<int>() - 1;
  std::ofstream(old + "/model.json") << manifest.dump();
  expect_refused(old, "spmv", "model.json");
  // Each file truncated, and each file missing.
  for (const char* file :
       {kModelManifest, kModelWacoNet, kModelEmbedder, kModelHead, kModelSchedules}) {
    const std::string cut = dir_->path() + "/cut-" + file;
    fs::copy(model_, cut);
    fs::resize_file(fs::path(cut) / file, fs::file_size(fs::path(cut) / file) / 2);
    expect_refused(cut, "spmv", file);
    const std::string missing = dir_->path() + "/missing-" + file;
    fs::copy(model_, missing);
    fs::remove(fs::path(missing) / file);
    expect_refused(missing, "spmv", file);
  }
}

// The search walks the graph with the head: with a beam as wide as the set it finds exactly
// the exhaustive top k; it honours the filter; it scores fewer schedules than the whole set
// when the beam is narrow.
TEST_F(TrainedModel, SearchFindsTheExhaustiveTopK) {
  auto model = LoadCostModel(model_, "spmv");
  const size_t n = model->schedule_set().size();
  ASSERT_GT(n, 10u);
  const std::vector<float> m = model->EmbedMatrix(testing::SmallWorkload(2));
  SearchOptions wide;
  wide.ef = static_cast<int>(n);
  auto index = ScheduleIndex::Open(*model, dir_->path() + "/search", wide);
  EXPECT_EQ(index->size(), n);
  const auto all = [](size_t) { return true; };
  const auto exhaustive = index->Exhaustive(m, 5, all);
  ASSERT_EQ(exhaustive.size(), 5u);
  for (size_t k = 1; k < exhaustive.size(); ++k)
    EXPECT_LE(exhaustive[k - 1].score, exhaustive[k].score);
  int64_t evaluations = 0;
  const auto found = index->Search(m, 5, all, &evaluations);
  ASSERT_EQ(found.size(), 5u);
  std::set<size_t> truth, got;
  for (const auto& r : exhaustive) truth.insert(r.index);
  for (const auto& r : found) got.insert(r.index);
  EXPECT_EQ(got, truth);
  EXPECT_GT(evaluations, 0);
  const auto odd = [](size_t s) { return s % 2 == 1; };
  for (const auto& r : index->Search(m, 5, odd)) EXPECT_EQ(r.index % 2, 1u);
  for (const auto& r : index->Exhaustive(m, 5, odd)) EXPECT_EQ(r.index % 2, 1u);
  // A narrow beam scores part of the set (a reopened index comes from the cache).
  SearchOptions narrow;
  narrow.ef = 4;
  auto small = ScheduleIndex::Open(*model, dir_->path() + "/search", narrow);
  int64_t narrow_evaluations = 0;
  EXPECT_EQ(small->Search(m, 2, all, &narrow_evaluations).size(), 2u);
  EXPECT_LE(narrow_evaluations, evaluations);
}

// tune with a model measures the model's top k beside FixedCSR and the heuristics.
TEST_F(TrainedModel, TuneMeasuresTheModelsTopK) {
  const std::string matrix = testing::SharedPath("datasets/matrices/west0479.mtx");
  if (matrix.empty()) GTEST_SKIP() << "the shared datasets are not here";
  const auto r = testing::RunCli({"tune", matrix, "--kernel", "spmv", "--model", model_, "--top-k",
                                  "3", "--db", dir_->File("tune.db"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  int from_model = 0;
  for (const auto& c : report["candidates"]) from_model += c["source"] == "model";
  EXPECT_GE(from_model, 1);
  EXPECT_LE(from_model, 3);
  EXPECT_GT(report["model_evaluations"].get<int64_t>(), 0);
  EXPECT_GT(report["winner"]["time_ms"].get<double>(), 0);
  // A model folder that does not load is bad input, and nothing is stored.
  const auto bad = testing::RunCli({"tune", matrix, "--kernel", "spmv", "--model",
                                    dir_->path() + "/nowhere", "--db", dir_->File("bad.db")});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("model.json"), std::string::npos) << bad.err;
}

// calibrate measures the manifest's first patterns here (generating those it lacks, leaving out
// a shared file that is not there), fine-tunes the model it starts from into this machine's
// folder, resumes from the database on a second run, and tune then uses that model.
TEST_F(TrainedModel, CalibrateFitsTheModelToThisMachineAndTuneUsesIt) {
  const std::string matrix = testing::SharedPath("datasets/matrices/west0479.mtx");
  if (matrix.empty()) GTEST_SKIP() << "the shared datasets are not here";
  testing::TempDir home;
  const std::string manifest = home.File(
      "corpus.tsv",
      "name\tkernels\tnnz\tsource\n"
      "c1_banded\tspmv\t1000\tgen banded --rows 300 --cols 300 --bandwidth 4 --fill 0.5 --seed 1\n"
      "c2_mttkrp_only\tmttkrp\t100\tgen tensor3 uniform --dims 10,10,10 --nnz 100 --seed 2\n"
      "c3_missing\tspmv\t100\tshared:matrices/not_here.mtx\n"
      "c4_powerlaw\tspmv\t2000\tgen powerlaw --rows 256 --nnz 2000 --a 0.45 --b 0.22 --c 0.22 "
      "--seed 4\n"
      "bcsstk01\tspmv\t224\tshared:matrices/bcsstk01.mtx\n"
      "c6_stencil\tspmv\t2000\tgen stencil2d --nx 20 --ny 20 --seed 6\n"
      "c7_beyond\tspmv\t2000\tgen stencil2d --nx 30 --ny 30 --seed 7\n");
  const std::vector<std::string> env = {
      "XDG_DATA_HOME=" + home.path() + "/data", "SPARSETUNE_CORPUS_CACHE=" + home.path() + "/cache",
      "SPARSETUNE_SHARED_DATASETS=" + std::string(SPARSETUNE_SHARED_DIR) + "/datasets"};
  const std::string db = home.File("calibration.db");
  const std::vector<std::string> calibrate = {
      "calibrate", "--kernel",  "spmv", "--model",  model_, "--corpus", manifest, "--patterns",
      "5",         "--samples", "3",    "--epochs", "2",    "--db",     db,       "--json"};
  const auto first = testing::RunCli(calibrate, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const nlohmann::json report = nlohmann::json::parse(first.out);
  testing::JsonSchemaValidator schemas(std::string(SPARSETUNE_SOURCE_DIR) + "/schemas");
  for (const std::string& error : schemas.Validate(report, "calibrate.schema.json"))
    ADD_FAILURE() << error;
  EXPECT_EQ(report["patterns_measured"], 4);
  EXPECT_EQ(report["patterns_left_out"], 1);  // the shared file that is not there
  EXPECT_GE(report["measurements"].get<int>(), 4 * 2);
  EXPECT_TRUE(report["used_by_tune"].get<bool>());
  const std::string calibrated = report["model"];
  EXPECT_EQ(calibrated.rfind(home.path() + "/data/sparsetune/models/", 0), 0u) << calibrated;
  const nlohmann::json manifest_json =
      nlohmann::json::parse(std::ifstream(calibrated + "/" + kModelManifest));
  ASSERT_TRUE(manifest_json.contains("calibrated"));
  EXPECT_EQ(manifest_json["calibrated"]["training_patterns"].get<int>() +
                manifest_json["calibrated"]["selection_patterns"].get<int>(),
            4);
  EXPECT_TRUE(std::filesystem::exists(home.path() + "/cache/files/c1_banded.mtx"));
  EXPECT_FALSE(std::filesystem::exists(home.path() + "/cache/files/c7_beyond.mtx"));

  const auto again = testing::RunCli(calibrate, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const nlohmann::json resumed = nlohmann::json::parse(again.out);
  EXPECT_EQ(resumed["patterns_already_stored"], 4);
  EXPECT_EQ(resumed["measurements"], 0);

  const auto tune = testing::RunCli(
      {"tune", matrix, "--kernel", "spmv", "--top-k", "2", "--db", home.File("tune.db"), "--json"},
      env);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const nlohmann::json tuned = nlohmann::json::parse(tune.out);
  EXPECT_TRUE(tuned["model_calibrated"].get<bool>());
  EXPECT_EQ(tuned["model"], calibrated);
  // Without the shipped models, the calibrated one is used and nothing is said to be missing.
  std::vector<std::string> no_shipped = env;
  no_shipped.push_back("SPARSETUNE_MODELS=" + home.path() + "/no-models");
  const auto alone = testing::RunCli(
      {"tune", matrix, "--kernel", "spmv", "--top-k", "2", "--db", home.File("alone.db"), "--json"},
      no_shipped);
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(alone.err.find("no cost model"), std::string::npos) << alone.err;
  EXPECT_EQ(nlohmann::json::parse(alone.out)["model"], calibrated);

  // A model to start from that is not there is bad input, named, and nothing is measured.
  std::vector<std::string> bad = calibrate;
  bad[4] = home.path() + "/nowhere";
  bad[14] = home.path() + "/bad.db";
  const auto refused = testing::RunCli(bad, env);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("nowhere"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(home.path() + "/bad.db"));
}

// An executable linked against LibTorch takes about 0.7 s to start: the commands that never
// score a schedule must not load it.
TEST(CostModel, CommandsThatDoNotScoreDoNotLoadLibTorch) {
  testing::TempDir dir;
  const std::string example =
      std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";
  const std::vector<std::vector<std::string>> commands = {
      {"info", example},
      {"run", example, "--kernel", "spmv"},
      {"schedules", "--kernel", "spmm_gemm"},
      {"query", example, "--kernel", "spmv", "--db", dir.File("q.db")}};
  for (const auto& args : commands) {
    const auto r = testing::RunCli(args, {"LD_DEBUG=libs"});
    EXPECT_NE(r.err.find("libgomp"), std::string::npos) << "LD_DEBUG printed nothing?";
    EXPECT_EQ(r.err.find("libtorch"), std::string::npos) << args[0] << " loaded LibTorch";
  }
}

}  // namespace
}  // namespace sparsetune
