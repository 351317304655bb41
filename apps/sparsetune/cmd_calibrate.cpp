// sparsetune calibrate: the shipped cost model fitted to this machine
// (libs/calibrate/calibration.hpp). This file parses the options, generates corpus files with
// this executable's `gen`, and prints the summary.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "base/paths.hpp"
#include "calibrate/calibration.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "costmodel/model_files.hpp"

namespace sparsetune::cli {

namespace {

namespace fs = std::filesystem;

struct CalibrateOptions {
  std::string kernel;
  std::string db;
  std::string model;
  std::string out;
  std::string corpus;
  int patterns = 48;
  int samples = 24;
  double minutes = 5;
  int epochs = 12;
  double learning_rate = 5e-5;
  uint64_t seed = 1;
  std::string on_busy;
  bool json = false;
};

// Runs this executable's `gen` for a corpus entry: written under a temporary name and renamed,
// so an interrupted generation leaves no partial file behind.
void Generate(const std::vector<std::string>& arguments, const std::string& path) {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) throw InternalError("cannot find this executable to run gen");
  std::string line = ShellWord(self.string()), command;
  for (const std::string& word : arguments) {
    line += " " + ShellWord(word);
    command += (command.empty() ? "" : " ") + word;
  }
  const std::string temporary = path + ".partial" + fs::path(path).extension().string();
  const std::string log = path + ".log";
  line += " -o " + ShellWord(temporary) + " >/dev/null 2>" + ShellWord(log);
  if (std::system(line.c_str()) != 0 || !fs::exists(temporary)) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    fs::remove(temporary, error);
    throw InternalError("cannot generate " + path + " (" + command + "): " + text.str());
  }
  fs::remove(log, error);
  fs::rename(temporary, path);
}

void PrintSummary(const CalibrationReport& r) {
  std::printf("%s calibrated to this machine in %s\n", r.kernel.c_str(), r.model_dir.c_str());
  std::printf("  measured    %d patterns (%d already stored, %d left out), %lld schedules in %s\n",
              r.patterns_measured, r.patterns_already_stored, r.patterns_left_out,
              (long long)r.measurements, FormatMs(1000 * r.measure_s).c_str());
  const nlohmann::json& c = r.metrics["calibration"];
  const int best = c["best_epoch"].get<int>();
  std::printf("  fine-tuned  %zu epochs in %s; %s\n", r.metrics["epochs"]["calibration"].size(),
              FormatMs(1000 * r.train_s).c_str(),
              best > 0 ? ("kept epoch " + std::to_string(best)).c_str()
                       : "no epoch ranked better than the starting model, which is kept");
  const nlohmann::json &before = c["before"], &after = c["after"];
  std::printf(
      "  selection   %d calibration patterns kept out of the fine-tuning (they choose the epoch): "
      "top-1 regret %.3f -> %.3f, top-10 regret %.3f -> %.3f, tau %.3f -> %.3f\n",
      c["selection_patterns"].get<int>(), c["selection_top1_regret_before"].get<double>(),
      c["selection_top1_regret_after"].get<double>(),
      c["selection_top10_regret_before"].get<double>(),
      c["selection_top10_regret_after"].get<double>(), c["selection_tau_before"].get<double>(),
      c["selection_tau_after"].get<double>());
  if (c["judged_on"] == "validation") {
    std::printf(
        "  validation  %d held-out real matrices measured here: tau %.3f -> %.3f, top-1 regret "
        "%.3f -> %.3f (random %.3f), top-10 within 10%% %.2f -> %.2f\n",
        c["validation_patterns"].get<int>(), before["kendall_tau"].get<double>(),
        after["kendall_tau"].get<double>(), before["top1_regret"].get<double>(),
        after["top1_regret"].get<double>(), after["random"]["top1_regret"].get<double>(),
        before["top10_within_10pct"].get<double>(), after["top10_within_10pct"].get<double>());
  }
  if (r.machine_folder)
    std::printf("  tune uses it from now on; remove the folder to go back to the shipped model\n");
}

void RunCalibrate(const CalibrateOptions& o) {
  CalibrationRequest request;
  request.kernel = o.kernel;
  request.db_path = DatabasePathOrDefault(o.db);
  const fs::path shipped = DefaultModelsDirectory();
  request.model_dir = o.model.empty() ? (shipped / o.kernel).string() : o.model;
  if (!fs::exists(fs::path(request.model_dir) / kModelManifest))
    throw InputError(request.model_dir, 0,
                     "no " + o.kernel + " model to calibrate (looked in: " + request.model_dir +
                         "; give one with --model)");
  request.manifest =
      o.corpus.empty() ? (shipped.parent_path() / "datasets/corpus/corpus.tsv").string() : o.corpus;
  if (!fs::exists(request.manifest))
    throw InputError(request.manifest, 0, "no training corpus manifest (give one with --corpus)");
  const fs::path held_out = fs::path(request.manifest).parent_path() / "validation.txt";
  if (fs::exists(held_out)) request.validation_list = held_out.string();
  request.out_dir = o.out;
  request.patterns = o.patterns;
  request.samples = o.samples;
  request.budget_s = 60 * o.minutes;
  request.epochs = o.epochs;
  request.learning_rate = o.learning_rate;
  request.seed = o.seed;
  if (!o.on_busy.empty()) request.on_busy = ParseBusyPolicy(o.on_busy, "--on-busy");
  request.generate = Generate;
  request.log = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  };
  const CalibrationReport report = Calibrate(request);
  if (o.json) {
    std::cout << report.ToJson().dump(2) << "\n";
  } else {
    PrintSummary(report);
  }
}

}  // namespace

void RegisterCalibrate(CLI::App& app, Context& /*context*/) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Fit the shipped cost model to this machine: measure a representative slice of the "
      "training corpus here (stored in the database, resumable), fine-tune the model on it and "
      "keep it where tune looks first");
  sub->add_option("--kernel,-k", o->kernel, "spmv, spmm, sddmm or mttkrp")
      ->required()
      ->check(CLI::IsMember({"spmv", "spmm", "sddmm", "mttkrp"}));
  AddDatabaseOption(sub, o->db);
  sub->add_option("--patterns", o->patterns,
                  "Corpus patterns to measure: the manifest's first ones for the kernel, a "
                  "representative slice")
      ->check(CountIn(2, 100000))
      ->capture_default_str();
  sub->add_option("--samples,-n", o->samples, "Sampled schedules per pattern (plus FixedCSR)")
      ->check(CountIn(1, 10000))
      ->capture_default_str();
  sub->add_option("--minutes", o->minutes,
                  "Measuring budget: no pattern starts once it would end after this (the "
                  "fine-tuning comes after, about a second per pattern and epoch)")
      ->check(FiniteNumber(false, 1e6))
      ->capture_default_str();
  sub->add_option("--epochs", o->epochs, "Passes of the fine-tuning over the measured patterns")
      ->check(CountIn(1, 10000))
      ->capture_default_str();
  sub->add_option("--learning-rate", o->learning_rate, "Adam's step size")
      ->check(FiniteNumber(false, 1))
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Sampling and fine-tuning seed")->capture_default_str();
  sub->add_option("--model", o->model, "The model to start from (default: the shipped one)");
  sub->add_option("--out", o->out,
                  "Where the calibrated model goes (default: this machine's folder under "
                  "$XDG_DATA_HOME/sparsetune/models, where tune looks first)");
  sub->add_option("--corpus", o->corpus,
                  "The training corpus manifest (default: datasets/corpus/corpus.tsv beside the "
                  "models)");
  AddOnBusyOption(sub, o->on_busy, "leaves them unstored for the next run");
  sub->add_flag("--json", o->json, "A JSON summary on stdout");
  sub->callback([o] { RunCalibrate(*o); });
}

}  // namespace sparsetune::cli
