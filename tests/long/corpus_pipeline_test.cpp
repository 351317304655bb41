// The training pipeline on a real slice of the corpus, as a user runs it: the collection script
// over the first spmv entries (generated and shared files), its export, a rerun that resumes
// without measuring again, two epochs of training on that data, and a tune that uses the model.
//
// The slice is kept under the build directory (tests/long-work/slice) so the training test can
// reuse it; long tests run one at a time, so the two never race.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "db/database.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::ReadText;
using testing::RunCli;
using testing::RunCommand;
using testing::TempDir;

const std::string kSource = SPARSETUNE_SOURCE_DIR;
const std::string kShared = std::string(SPARSETUNE_SHARED_DIR) + "/datasets";
constexpr int kLimit = 3;
constexpr int kSamples = 5;

fs::path WorkDir() {
  return fs::read_symlink("/proc/self/exe").parent_path() / "long-work";
}

// The spmv entries of the manifest (name, source) in order, and the held-out files.
struct Corpus {
  std::vector<std::pair<std::string, std::string>> spmv;
  std::set<std::string> held_out;
};

Corpus ReadCorpus() {
  Corpus corpus;
  std::ifstream validation(kSource + "/datasets/corpus/validation.txt");
  std::string line;
  while (std::getline(validation, line)) {
    line = line.substr(0, line.find_first_of("#\t "));
    if (!line.empty()) corpus.held_out.insert(line);
  }
  std::ifstream manifest(kSource + "/datasets/corpus/corpus.tsv");
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("name\t", 0) == 0) continue;
    std::vector<std::string> fields;
    std::stringstream s(line);
    for (std::string field; std::getline(s, field, '\t');) fields.push_back(field);
    if (fields.size() < 4 || ("," + fields[1] + ",").find(",spmv,") == std::string::npos) continue;
    corpus.spmv.emplace_back(fields[0], fields[3]);
  }
  return corpus;
}

// The first kLimit spmv entries that the script collects: those not made from a held-out file.
std::vector<std::string> ExpectedNames(const Corpus& corpus) {
  std::vector<std::string> names;
  for (const auto& [name, source] : corpus.spmv) {
    // The shared file an entry is (shared:PATH) or is resized from (gen resize shared:PATH ...).
    std::string used = source.rfind("gen resize ", 0) == 0 ? source.substr(11) : source;
    used = used.rfind("shared:", 0) == 0 ? used.substr(7, used.find(' ') - 7) : "";
    if (!used.empty() && corpus.held_out.count(used)) continue;
    names.push_back(name);
    if (static_cast<int>(names.size()) == kLimit) break;
  }
  return names;
}

struct Slice {
  fs::path dir;
  std::string export_file;  // the script's --out export
  std::string cache;        // its --cache (generated files, working database)
};

// Runs scripts/collect_training_data.sh over the first kLimit spmv entries into `dir`.
CommandResult CollectSlice(const Slice& slice, const std::string& log) {
  std::vector<std::string> args = {"bash",        kSource + "/scripts/collect_training_data.sh",
                                   "--limit",     std::to_string(kLimit),
                                   "--samples",   std::to_string(kSamples),
                                   "--wait-idle", "0",
                                   "--cache",     slice.cache,
                                   "--out",       (slice.dir / "out").string(),
                                   "--shared",    kShared};
  // The held-out files are measured for validation by default where the script does that; the
  // training test gives its own validation list, so they would only add time here.
  if (ReadText(kSource + "/scripts/collect_training_data.sh").find("--no-held-out") !=
      std::string::npos)
    args.push_back("--no-held-out");
  args.push_back("spmv");
  return RunCommand(args, log, {std::string("SPARSETUNE_BIN=") + SPARSETUNE_BINARY});
}

Slice SliceAt(const fs::path& dir) {
  return {dir, (dir / "out" / "spmv.jsonl.gz").string(), (dir / "cache").string()};
}

// The export's spmv measurements, through a scratch database.
std::vector<MeasurementRow> ExportedRows(const std::string& export_file,
                                         const std::string& scratch_db, DatabaseStats* stats) {
  fs::remove(scratch_db);
  auto db = Database::Open(scratch_db, OpenMode::kReadWrite);
  db->ImportMeasurements(export_file);
  *stats = db->Statistics();
  MeasurementFilter filter;
  filter.kernel = "spmv";
  return db->Measurements(filter);
}

// Each measurement's time by matrix and schedule: a schedule measured again gets another time.
std::map<std::string, double> Times(const std::vector<MeasurementRow>& rows) {
  std::map<std::string, double> times;
  for (const MeasurementRow& row : rows)
    times[row.matrix_name + " " + row.schedule.hash] = row.median_ms;
  return times;
}

bool SharedDataPresent() {
  return fs::exists(kShared + "/matrices");
}

TEST(CorpusSlice, CollectsEveryMatrixAndResumesWithoutMeasuringAgain) {
  if (!SharedDataPresent()) GTEST_SKIP() << "no shared datasets at " << kShared;
  const Slice slice = SliceAt(WorkDir() / "slice");
  fs::remove_all(slice.dir);
  fs::create_directories(slice.dir);
  const auto first = CollectSlice(slice, (slice.dir / "collect.log").string());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_TRUE(fs::exists(slice.export_file)) << first.output;

  DatabaseStats stats;
  const auto rows = ExportedRows(slice.export_file, (slice.dir / "check.db").string(), &stats);
  std::map<std::string, int> measurements;
  std::set<std::string> with_fixed_csr;
  for (const MeasurementRow& row : rows) {
    ++measurements[row.matrix_name];
    if (row.source == "fixed_csr") with_fixed_csr.insert(row.matrix_name);
  }
  const std::vector<std::string> expected = ExpectedNames(ReadCorpus());
  ASSERT_EQ(static_cast<int>(expected.size()), kLimit);
  for (const std::string& name : expected) {
    ASSERT_TRUE(measurements.count(name)) << name << " has no measurements in the export";
    EXPECT_TRUE(with_fixed_csr.count(name)) << name << ": FixedCSR is always measured";
    // FixedCSR and the samples that were not refused or timed out: most of them.
    EXPECT_GE(measurements[name], 1 + kSamples / 2) << name;
    EXPECT_LE(measurements[name], 1 + kSamples) << name;
  }
  // Every matrix the export holds has measurements (none stored with failures only).
  EXPECT_EQ(stats.matrices, static_cast<int64_t>(measurements.size()));

  // Resuming from the export alone (the working database lost, as on another machine): the
  // same command measures nothing again.
  for (const char* suffix : {"", "-wal", "-shm"})
    fs::remove(fs::path(slice.cache) / ("training-spmv.db" + std::string(suffix)));
  const auto again = CollectSlice(slice, (slice.dir / "collect-again.log").string());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  DatabaseStats stats_again;
  const auto rows_again =
      ExportedRows(slice.export_file, (slice.dir / "check.db").string(), &stats_again);
  EXPECT_EQ(Times(rows_again), Times(rows)) << again.output;
  EXPECT_EQ(stats_again.failures, stats.failures);
  if (!HasFailure())
    std::ofstream(slice.dir / "complete") << "limit " << kLimit << " samples " << kSamples << "\n";
}

TEST(CorpusSlice, TrainsSpmvForTwoEpochsAndTuneUsesTheModel) {
  if (!SharedDataPresent()) GTEST_SKIP() << "no shared datasets at " << kShared;
  Slice slice = SliceAt(WorkDir() / "slice");
  TempDir dir;
  if (!fs::exists(slice.dir / "complete")) {
    // Run alone: collect a slice of its own.
    slice = SliceAt(dir.path() + "/slice");
    fs::create_directories(slice.dir);
    const auto collected = CollectSlice(slice, dir.File("collect.log"));
    ASSERT_EQ(collected.exit_code, 0) << collected.output;
  }
  const Corpus corpus = ReadCorpus();
  const std::vector<std::string> names = ExpectedNames(corpus);
  // Validate on the slice's shared file; train on the generated ones.
  std::string validation_file;
  for (const auto& [name, source] : corpus.spmv) {
    if (std::find(names.begin(), names.end(), name) != names.end() &&
        source.rfind("shared:", 0) == 0)
      validation_file = source.substr(7);
  }
  ASSERT_FALSE(validation_file.empty()) << "the slice holds no shared file to validate on";
  const std::string validation = dir.File("validation.txt", validation_file + "\n");

  // train finds a generated pattern's file through the whole manifest, which wants a file for
  // every entry; the entries outside the slice are never read, so empty stand-ins serve.
  const std::string cache = dir.path() + "/cache";
  fs::create_directories(cache + "/files");
  for (const auto& [name, source] : corpus.spmv) {
    if (source.rfind("gen ", 0) != 0) continue;
    const fs::path collected = fs::path(slice.cache) / "files" / (name + ".mtx");
    const fs::path target = fs::path(cache) / "files" / (name + ".mtx");
    if (fs::exists(collected)) {
      fs::copy_file(collected, target);
    } else {
      std::ofstream{target};
    }
  }
  const std::string db = dir.File("train.db");
  const auto imported = RunCli({"db", "import", "--db", db, slice.export_file});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;

  const std::string model = dir.path() + "/model";
  const std::vector<std::string> env = {"SPARSETUNE_SHARED_DATASETS=" + kShared,
                                        "SPARSETUNE_CORPUS_CACHE=" + cache};
  const auto trained = RunCli({"train", "--kernel", "spmv", "--db", db, "--out", model, "--epochs",
                               "2", "--validation", validation, "--json"},
                              env);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const auto metrics = nlohmann::json::parse(trained.out);
  EXPECT_EQ(metrics["kernel"], "spmv");
  EXPECT_EQ(metrics["validation_patterns"], 1);
  for (const char* part : {"validation", "summary_features"}) {
    for (const char* field :
         {"pairwise_accuracy", "kendall_tau", "top1_regret", "top10_regret", "top10_within_10pct"})
      EXPECT_TRUE(metrics[part].contains(field)) << part << " " << field;
  }
  const auto written = nlohmann::json::parse(ReadText(model + "/metrics.json"));
  EXPECT_EQ(written["kernel"], "spmv");

  // The model ranks a tune's candidates.
  const auto tuned =
      RunCli({"tune", kSource + "/datasets/examples/cavity24.mtx", "--kernel", "spmv", "--db",
              dir.File("tune.db"), "--model", model, "--top-k", "3", "--json"},
             env);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  const auto report = nlohmann::json::parse(tuned.out);
  bool from_model = false;
  for (const auto& c : report["candidates"]) from_model |= c["source"] == "model";
  EXPECT_TRUE(from_model) << tuned.out;
}

}  // namespace
}  // namespace sparsetune
