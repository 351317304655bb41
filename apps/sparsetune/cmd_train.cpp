// sparsetune train: a cost model from the measurements in a schedule database.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "base/errors.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "costmodel/model_files.hpp"
#include "db/database.hpp"
#include "io/inputs.hpp"
#include "train/train.hpp"
#include "tune/refinement.hpp"

namespace sparsetune::cli {

namespace {

struct TrainCommandOptions {
  std::string kernel;
  std::string db;
  std::string out;
  int epochs = 20;
  std::string validation;
  uint64_t seed = 1;
  int max_matrices = 0;
  int64_t max_sites = int64_t(1) << 16;
  double learning_rate = 1e-4;
  int batch = 128;
  std::string side_inputs = "summary";
  bool comparison_only = false;
  bool moves_only = false;
  int tune_top_k = 0;
  bool json = false;
};

// What the model folder says beside the network: the second round's move weights, learned from
// the neighbours in the database, and how many of its picks a tune measures when given.
void WriteTuningFields(const std::string& db_path, const std::string& kernel,
                       const std::string& out_dir, int tune_top_k, bool quiet) {
  auto db = Database::Open(db_path, OpenMode::kReadOnly);
  const RefinementMoveWeights weights = LearnRefinementMoveWeights(*db, kernel);
  nlohmann::json fields = {{"refine_moves", weights.empty() ? nlohmann::json() : weights.ToJson()}};
  if (tune_top_k > 0) fields["tune_top_k"] = tune_top_k;
  UpdateModelManifest(out_dir, fields);
  if (quiet) return;
  if (weights.empty()) {
    std::printf("no neighbours of %s in %s: a tune's second round draws them uniformly\n",
                kernel.c_str(), db_path.c_str());
    return;
  }
  std::printf(
      "move weights from %lld neighbours of %lld matrices (chance of beating the first "
      "round's best by 1%%):\n",
      static_cast<long long>(weights.neighbours), static_cast<long long>(weights.matrices));
  using Anchor = RefinementMoveWeights::Anchor;
  for (Anchor anchor : {Anchor::kRule, Anchor::kSearched}) {
    std::printf("  one move from %s:\n",
                anchor == Anchor::kRule ? "a rule" : "a sample, a model's pick or a neighbour");
    for (const auto& [move, w] : weights.moves[static_cast<int>(anchor)])
      std::printf("    %-14s %.3f\n", move.c_str(), w);
  }
  for (size_t a = 0; a < weights.anchors.size(); ++a)
    std::printf("  anchor %-7zu %.3f\n", a + 1, weights.anchors[a]);
}

void RunTrain(const TrainCommandOptions& o) {
  if (o.epochs < 1) throw InputError("--epochs must be at least 1");
  if (o.tune_top_k < 0) throw InputError("--tune-top-k must be at least 1");
  namespace fs = std::filesystem;
  const fs::path checkout = fs::path(DefaultModelsDirectory()).parent_path();
  TrainingDataOptions data;
  data.kernel = o.kernel;
  data.db_path = DatabasePathOrDefault(o.db);
  if (!fs::exists(data.db_path)) throw InputError(data.db_path, 0, "no such database");
  TrainOptions options;
  options.kernel = o.kernel;
  options.out_dir =
      o.out.empty() ? (fs::path(DefaultModelsDirectory()) / o.kernel).string() : o.out;
  data.validation_list =
      o.validation.empty() ? (checkout / "datasets/corpus/validation.txt").string() : o.validation;
  data.corpus_manifest = (checkout / "datasets/corpus/corpus.tsv").string();
  // The shared folder as libs/io/inputs.hpp finds it, so held-out and corpus files agree.
  data.shared_dir = SharedDatasetsDirectory(data.corpus_manifest);
  options.epochs = o.epochs;
  options.seed = o.seed;
  data.max_matrices = o.max_matrices;
  options.grid.max_sites = o.max_sites;
  data.grid = options.grid;
  options.learning_rate = o.learning_rate;
  if (o.batch < 2) throw InputError("--batch must be at least 2 (a ranking needs pairs)");
  options.batch = o.batch;
  SideInputsFromName(o.side_inputs, &options.side_inputs);  // CLI11 checked the name
  data.side_inputs = options.side_inputs;
  options.comparison_only = o.comparison_only;
  if (o.moves_only) {
    ReadModelManifest(options.out_dir, o.kernel);
    WriteTuningFields(data.db_path, o.kernel, options.out_dir, o.tune_top_k, o.json);
    return;
  }
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  };
  // A model retrained in place keeps the depth its predecessor was measured at unless told.
  const int replaced_top_k =
      fs::exists(fs::path(options.out_dir) / kModelManifest) ? ModelTopK(options.out_dir) : 0;
  const nlohmann::json metrics = TrainFromDatabase(data, options);
  if (!o.comparison_only) {
    int top_k = o.tune_top_k;
    if (top_k == 0 && replaced_top_k != kDefaultTopK && replaced_top_k > 0) {
      top_k = replaced_top_k;
      std::fprintf(stderr,
                   "kept tune_top_k %d of the model this one replaces; measure it again for the "
                   "new model (docs/ablation.md) and set it with --moves-only --tune-top-k\n",
                   top_k);
    }
    WriteTuningFields(data.db_path, o.kernel, options.out_dir, top_k, o.json);
  }
  if (o.json) {
    std::cout << metrics.dump(2) << "\n";
    return;
  }
  auto row = [&](const char* label, const nlohmann::json& m) {
    std::printf(
        "  %-18s pairwise %.3f  tau %.3f  top1 %.3f  top10 %.3f  within10%% %.2f  captured %.2f\n",
        label, m["pairwise_accuracy"].get<double>(), m["kendall_tau"].get<double>(),
        m["top1_regret"].get<double>(), m["top10_regret"].get<double>(),
        m["top10_within_10pct"].get<double>(), m["oracle_speedup_captured"].get<double>());
  };
  const nlohmann::json& any = metrics["summary_features"];
  std::printf("%s model in %s (%d validation patterns, a median of %.0f measured schedules each)\n",
              o.kernel.c_str(), options.out_dir.c_str(), metrics["validation_patterns"].get<int>(),
              any.value("median_pool", 0.0));
  if (metrics.contains("validation")) row("WACONet", metrics["validation"]);
  row("summary features", metrics["summary_features"]);
  row("summary + tiles", metrics["summary_tile_features"]);
  // What a ranking drawn at random scores on the same pools: the bar a model has to clear.
  nlohmann::json random = any["random"];
  random["pairwise_accuracy"] = 0.5;
  random["kendall_tau"] = 0.0;
  row("random ranking", random);
}

}  // namespace

void RegisterTrain(CLI::App& app, Context& context) {
  auto o = std::make_shared<TrainCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "train",
      "Train the cost model of a kernel (WACONet, schedule embedder, head) on the measurements in "
      "the database, and the summary-feature model beside it for comparison");
  sub->add_option("--kernel,-k", o->kernel, "spmv, spmm, sddmm or mttkrp")
      ->required()
      ->check(CLI::IsMember({"spmv", "spmm", "sddmm", "mttkrp"}));
  AddDatabaseOption(sub, o->db);
  sub->add_option("--out", o->out, "Model folder (default: models/<kernel> in the checkout)");
  sub->add_option("--epochs", o->epochs, "Passes over the training patterns")
      ->capture_default_str();
  sub->add_option(
      "--validation", o->validation,
      "Held-out entries, one per line: files relative to the shared datasets folder "
      "($SPARSETUNE_SHARED_DATASETS, else ../shared/datasets beside the checkout) or "
      "corpus:NAME; default datasets/corpus/validation.txt. Generated corpus files are read from "
      "$SPARSETUNE_CORPUS_CACHE (scripts/collect_training_data.sh --materialize-only)");
  sub->add_option("--seed", o->seed, "Seed of the initialization and the batches")
      ->capture_default_str();
  sub->add_option("--max-matrices", o->max_matrices, "Train on at most this many patterns");
  sub->add_option("--max-sites", o->max_sites,
                  "Patterns with more active cells are pooled onto a coarser grid")
      ->capture_default_str();
  sub->add_option("--learning-rate", o->learning_rate, "Adam's step size")->capture_default_str();
  sub->add_option("--batch", o->batch, "Schedules of one matrix ranked per step")
      ->capture_default_str();
  sub->add_option("--side-inputs", o->side_inputs,
                  "What WACONet sees beside the pattern: shape (WACO's rows, columns, nonzeros), "
                  "summary (the summary model's statistics) or summary-tiles (those and D2T2's "
                  "tile statistics at 32 x 32 tiles)")
      ->check(CLI::IsMember({"shape", "summary", "summary-tiles"}))
      ->capture_default_str();
  sub->add_flag("--comparison-only", o->comparison_only,
                "Train only the comparison models (summary features, with and without D2T2's "
                "tile statistics) and write their metrics.json, no model");
  sub->add_flag("--moves-only", o->moves_only,
                "Only learn the second round's move weights from the database's neighbours "
                "and write them into the model folder's model.json (no training)");
  sub->add_option("--tune-top-k", o->tune_top_k,
                  "How many of the model's picks a tune measures, written to model.json "
                  "(chosen by oracle tunes on patterns outside the corpus; docs/ablation.md)");
  sub->add_flag("--json", o->json, "metrics.json on stdout");
  sub->callback([o] { RunTrain(*o); });
}

}  // namespace sparsetune::cli
