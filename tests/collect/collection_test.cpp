// RunCollection called as a library: what it stores, what a rerun skips, how it reports files it
// leaves out, and the tally it carries across a restart.
#include "collect/collection.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "base/errors.hpp"
#include "base/threads.hpp"
#include "ir/kernels.hpp"
#include "measure/contest.hpp"
#include "superschedule/waco_template.hpp"
#include "support/spinners.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

class CollectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sparsetune_collection_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Compiled kernels are shared with the command-line tests: the cache is content-addressed.
    setenv("SPARSETUNE_CACHE",
           (fs::path(SPARSETUNE_BINARY).parent_path() / "test-jit-cache").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("SPARSETUNE_CACHE");
    fs::remove_all(dir_);
  }

  // A random square pattern in Matrix Market coordinate form.
  std::string Matrix(const std::string& name, int rows, int nnz, unsigned seed) {
    std::mt19937 rng(seed);
    std::set<std::pair<int, int>> entries;
    while (int(entries.size()) < nnz) entries.insert({int(rng() % rows), int(rng() % rows)});
    const fs::path path = dir_ / (name + ".mtx");
    std::ofstream out(path);
    out << "%%MatrixMarket matrix coordinate real general\n"
        << rows << " " << rows << " " << nnz << "\n";
    for (const auto& [i, j] : entries) out << i + 1 << " " << j + 1 << " 1.5\n";
    return path.string();
  }

  CollectRequest Spmv(std::vector<std::string> paths, int samples) {
    CollectRequest request;
    request.paths = std::move(paths);
    request.kernel = "spmv";
    request.expression = KernelExpression("spmv");
    request.db_path = (dir_ / "t.db").string();
    request.samples = samples;
    request.rules = false;  // their number depends on the machine's caches
    return request;
  }

  std::vector<std::string> Texts(const std::string& sql) {
    sqlite3* db = nullptr;
    std::vector<std::string> out;
    if (sqlite3_open_v2((dir_ / "t.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* stmt = nullptr;
      if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
        while (sqlite3_step(stmt) == SQLITE_ROW)
          out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
      }
      sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return out;
  }

  int64_t Count(const std::string& sql) {
    sqlite3* db = nullptr;
    int64_t count = -1;
    if (sqlite3_open_v2((dir_ / "t.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* stmt = nullptr;
      if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
          sqlite3_step(stmt) == SQLITE_ROW) {
        count = sqlite3_column_int64(stmt, 0);
      }
      sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return count;
  }

  fs::path dir_;
};

TEST_F(CollectionTest, StoresFixedCsrAndSamplesThenARerunSkipsEverything) {
  const std::string a = Matrix("a", 40, 200, 1), b = Matrix("b", 64, 300, 2);
  const CollectRequest request = Spmv({a, b}, 3);
  std::vector<std::string> steps;
  CollectProgress last;
  CollectObserver observer;
  observer.status = [&](const CollectProgress& p) {
    steps.push_back(p.matrix_name + " " + p.status);
    last = p;
  };
  observer.progress = [&](const CollectProgress& p) { last = p; };
  observer.file_skipped = [&](const std::string& cause) { ADD_FAILURE() << cause; };

  CollectReport report = RunCollection(request, observer);
  EXPECT_EQ(report.kernel, "spmv");
  EXPECT_EQ(report.files, 2);
  EXPECT_EQ(report.tally.measured + report.tally.failed_total(), 8);  // FixedCSR + 3, twice
  EXPECT_GE(report.tally.measured, 2);
  EXPECT_EQ(report.tally.skipped, 0);
  EXPECT_EQ(report.tally.matrices_done, 2);
  EXPECT_FALSE(report.bad_input());
  EXPECT_GT(report.schedules_per_minute(), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM measurements"), report.tally.measured);
  EXPECT_EQ(Count("SELECT count(*) FROM failures"), report.tally.failed_total());
  EXPECT_EQ(Count("SELECT count(*) FROM measurements WHERE source = 'fixed_csr'"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM matrices"), 2);
  // FixedCSR was timed twice on each matrix: one spread each, and the twin is not a row.
  EXPECT_EQ(report.tally.twin_spreads.size(), 2u);
  EXPECT_LE(report.tally.TwinSpread(0.5), report.tally.TwinSpread(0.9));
  // FixedCSR anchors each matrix's groups: one drift correction per matrix.
  EXPECT_EQ(report.tally.drift_corrections.size(), 2u);
  ASSERT_GE(steps.size(), 4u);
  EXPECT_EQ(steps.front(), "a reading");
  EXPECT_EQ(steps.back(), "b measuring");
  EXPECT_EQ(last.matrix_index, 1u);
  EXPECT_EQ(last.matrix_count, 2u);
  EXPECT_EQ(last.total, 8);
  EXPECT_EQ(last.done(), 8);

  const nlohmann::json json = report.ToJson();
  for (const char* field :
       {"kernel", "database", "files", "measured", "failed", "failed_by_reason", "skipped",
        "unreadable", "restarts", "busy_matrices", "disturbed", "twins_retimed", "twin_pairs",
        "twin_spread_median", "twin_spread_p90", "drift_correction_median", "drift_correction_max",
        "elapsed_s", "schedules_per_minute"})
    EXPECT_TRUE(json.contains(field)) << field;

  steps.clear();
  report = RunCollection(request, observer);
  EXPECT_EQ(report.tally.measured, 0);
  EXPECT_EQ(report.tally.failed_total(), 0);
  EXPECT_EQ(report.tally.skipped, 8);
  // Nothing to measure: no reference, no measuring.
  EXPECT_EQ(steps,
            (std::vector<std::string>{"a reading", "a sampling", "b reading", "b sampling"}));
  EXPECT_EQ(last.done(), 8);
}

TEST_F(CollectionTest, RuleCandidatesTheTemplateExpressesAreMeasuredBesideTheSamples) {
  CollectRequest request = Spmv({Matrix("a", 64, 300, 3)}, 2);
  request.rules = true;
  const CollectReport report = RunCollection(request, {});
  const std::string rule_schedules =
      "SELECT s.canonical_json FROM schedules s JOIN measurements m ON m.schedule_id = s.id "
      "WHERE m.source IN ('heuristic', 'scorch')";
  const std::vector<std::string> rules = Texts(rule_schedules);
  // CSR with nonzero-balanced rows at least; rules with prefetching, orderings or grouped
  // levels would be dropped by training and are not measured.
  ASSERT_FALSE(rules.empty());
  const auto spmv = WacoTemplate::ForKernel("spmv");
  for (const std::string& json : rules) {
    std::string error;
    EXPECT_TRUE(spmv->FromSchedule(Schedule::FromJson(nlohmann::json::parse(json), "db"), &error))
        << json << ": " << error;
  }
  // Besides FixedCSR and the two samples (rules that packing refuses are failures).
  EXPECT_GE(report.tally.measured + report.tally.failed_total(), 3 + int64_t(rules.size()));
}

TEST_F(CollectionTest, NeighboursOfTheFastestAreMeasuredAfterTheSamplesAndARerunSkipsThem) {
  CollectRequest request = Spmv({Matrix("a", 64, 300, 5)}, 6);
  request.neighbours = 4;
  CollectReport report = RunCollection(request, {});
  EXPECT_EQ(report.tally.matrices_done, 1);
  // FixedCSR and 6 samples, then 4 neighbours (a refused format is stored as a failure).
  EXPECT_EQ(report.tally.measured + report.tally.failed_total(), 11);
  const std::vector<std::string> neighbours = Texts(
      "SELECT s.canonical_json FROM schedules s JOIN measurements m ON m.schedule_id = s.id "
      "WHERE m.source = 'refined'");
  ASSERT_FALSE(neighbours.empty());
  // Each one move from one of the three fastest of the first phase, and none of its schedules.
  const std::vector<std::string> first = Texts(
      "SELECT s.canonical_json FROM schedules s JOIN measurements m ON m.schedule_id = s.id "
      "WHERE m.source != 'refined' ORDER BY m.median_ms");
  const auto spmv = WacoTemplate::ForKernel("spmv");
  const std::map<std::string, int64_t> sizes = {{"i", 64}, {"k", 64}};
  std::set<std::string> reachable;
  int anchors = 0;
  for (const std::string& json : first) {
    const auto point =
        spmv->FromSchedule(Schedule::FromJson(nlohmann::json::parse(json), "db"), nullptr);
    if (!point || anchors++ == 3) continue;
    for (const SuperSchedule& n : spmv->Neighbours(*point, sizes)) {
      Schedule schedule = spmv->ToSchedule(n);
      schedule.Canonicalize();
      reachable.insert(schedule.CanonicalJson());
    }
  }
  for (const std::string& json : neighbours) {
    EXPECT_TRUE(reachable.count(json)) << json;
    EXPECT_EQ(std::count(first.begin(), first.end(), json), 0) << json;
  }
  // FixedCSR was timed twice in each of the two contests, and stored once.
  EXPECT_EQ(report.tally.twin_spreads.size(), 2u);
  EXPECT_EQ(Count("SELECT count(*) FROM measurements WHERE source = 'fixed_csr'"), 1);

  const int64_t stored =
      Count("SELECT count(*) FROM measurements") + Count("SELECT count(*) FROM failures");
  report = RunCollection(request, {});
  EXPECT_EQ(report.tally.measured + report.tally.failed_total(), 0);
  EXPECT_EQ(report.tally.skipped, stored);
}

TEST(CollectTally, TwinSpreadIsANearestRankQuantile) {
  CollectTally tally;
  EXPECT_EQ(tally.TwinSpread(0.9), 0);
  tally.twin_spreads = {0.04, 0.01, 0.03, 0.02, 0.30};
  EXPECT_EQ(tally.TwinSpread(0.5), 0.03);
  EXPECT_EQ(tally.TwinSpread(0.9), 0.30);
  EXPECT_EQ(tally.TwinSpread(0.0), 0.01);
  EXPECT_EQ(CollectTally::FromJson(tally.ToJson()).twin_spreads, tally.twin_spreads);
}

TEST(CollectTally, DriftCorrectionsAreCarriedAcrossARestart) {
  CollectTally tally;
  EXPECT_EQ(tally.DriftCorrection(1), 0);
  tally.drift_corrections = {0, 0.12, 0, 0.05};
  EXPECT_EQ(tally.DriftCorrection(0.5), 0);
  EXPECT_EQ(tally.DriftCorrection(1), 0.12);
  EXPECT_EQ(CollectTally::FromJson(tally.ToJson()).drift_corrections, tally.drift_corrections);
}

// More schedules than a contest's group: FixedCSR is timed beside every group, and a group's
// times are scaled only when its FixedCSR ran outside the anchor's own noise.
TEST_F(CollectionTest, GroupsOfAMatrixAreScaledByFixedCsrTimedInEach) {
  CollectRequest request = Spmv({Matrix("a", 64, 300, 7)}, 20);
  request.rules = false;
  const CollectReport report = RunCollection(request, {});
  EXPECT_EQ(report.tally.matrices_done, 1);
  ASSERT_EQ(report.tally.drift_corrections.size(), 1u);
  const double correction = report.tally.drift_corrections[0];
  EXPECT_TRUE(correction == 0 || correction >= kDriftTolerance - 1e-12) << correction;
  EXPECT_EQ(Count("SELECT count(*) FROM measurements WHERE source = 'fixed_csr'"), 1);
}

// Times taken while other processes hold the cores (threads of this test spinning, more than
// there are CPUs) are measured again and, still disturbed, never stored: a later run on a
// quiet machine measures them. Only the verdict under heavy deliberate load is checked.
TEST_F(CollectionTest, TimesTakenWhileTheCoresAreBusyAreNotStored) {
  const std::string a = Matrix("a", 300, 3000, 3);
  CollectRequest request = Spmv({a}, 1);
  request.on_busy = BusyPolicy::kFail;
  CollectReport report;
  {
    testing::Spinners busy(3 * HardwareThreads());
    report = RunCollection(request, CollectObserver());
  }
  EXPECT_GT(report.tally.disturbed, 0);
  EXPECT_EQ(report.tally.measured + report.tally.failed_total() + report.tally.disturbed, 2);
  EXPECT_EQ(Count("SELECT count(*) FROM measurements"), report.tally.measured);
  EXPECT_EQ(report.ToJson().value("disturbed", int64_t(-1)), report.tally.disturbed);
}

// Asked to store anyway ("store", or "ignore" as the test suite runs), disturbed times are kept.
TEST_F(CollectionTest, BusyTimesAreStoredWhenAskedTo) {
  const std::string a = Matrix("a", 300, 3000, 3);
  for (const BusyPolicy policy : {BusyPolicy::kStore, BusyPolicy::kIgnore}) {
    CollectRequest request = Spmv({a}, 1);
    request.db_path = (dir_ / (policy == BusyPolicy::kStore ? "store.db" : "ignore.db")).string();
    request.on_busy = policy;
    CollectReport report;
    {
      testing::Spinners busy(3 * HardwareThreads());
      report = RunCollection(request, CollectObserver());
    }
    EXPECT_EQ(report.tally.disturbed, 0);
    EXPECT_EQ(report.tally.measured + report.tally.failed_total(), 2);
  }
}

TEST_F(CollectionTest, ABadFileIsReportedAndLeftOut) {
  const std::string a = Matrix("a", 30, 90, 3);
  const std::string bad = (dir_ / "bad.mtx").string();
  std::ofstream(bad) << "%%MatrixMarket matrix coordinate real general\n3 3 1\n9 9 1\n";
  std::vector<std::string> causes;
  CollectObserver observer;
  observer.file_skipped = [&](const std::string& cause) { causes.push_back(cause); };
  const CollectReport report = RunCollection(Spmv({bad, a}, 1), observer);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_NE(causes[0].find("bad.mtx"), std::string::npos) << causes[0];
  EXPECT_TRUE(report.bad_input());
  EXPECT_EQ(report.tally.unreadable, 1);
  EXPECT_EQ(report.tally.measured + report.tally.failed_total(), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM matrices"), 1);
}

TEST_F(CollectionTest, BadRequestsThrowBeforeAnythingIsStored) {
  const std::string a = Matrix("a", 20, 50, 4);
  CollectRequest request = Spmv({a}, 1);
  request.dense = {{"q", 3}};
  EXPECT_THROW(RunCollection(request), InputError);
  request = Spmv({a}, -1);
  EXPECT_THROW(RunCollection(request), InputError);
  request = Spmv({a}, 1);
  request.max_ms = 0;
  EXPECT_THROW(RunCollection(request), InputError);
  request = Spmv({(dir_ / "missing.mtx").string()}, 1);
  EXPECT_THROW(RunCollection(request), InputError);
  EXPECT_FALSE(fs::exists(dir_ / "t.db"));
}

TEST(CollectTally, CarriesCountsAcrossARestart) {
  CollectTally tally;
  tally.measured = 5;
  tally.skipped = 2;
  tally.failed = {{"timed_out", 1}, {"format_refused", 2}};
  tally.unreadable = 1;
  tally.matrices_done = 3;
  tally.restarts = 1;
  tally.busy_matrices = 1;
  tally.elapsed_before = 12.5;
  EXPECT_EQ(tally.failed_total(), 3);

  setenv(kCollectStateVariable, tally.ToJson().dump().c_str(), 1);
  const CollectTally carried = TakeCarriedTally();
  EXPECT_EQ(std::getenv(kCollectStateVariable), nullptr);
  EXPECT_EQ(carried.measured, 5);
  EXPECT_EQ(carried.skipped, 2);
  EXPECT_EQ(carried.failed, tally.failed);
  EXPECT_EQ(carried.restarts, 1);
  EXPECT_EQ(carried.busy_matrices, 1);
  EXPECT_DOUBLE_EQ(carried.elapsed_before, 12.5);
  // What was counted is met again as stored after the restart, and not counted twice.
  EXPECT_EQ(carried.recounted, 10);
  // Files are walked again from the start: these are counted anew.
  EXPECT_EQ(carried.unreadable, 0);
  EXPECT_EQ(carried.matrices_done, 0);

  setenv(kCollectStateVariable, "{not json", 1);
  EXPECT_EQ(TakeCarriedTally().measured, 0);
  EXPECT_EQ(std::getenv(kCollectStateVariable), nullptr);
  EXPECT_EQ(TakeCarriedTally().recounted, 0);
}

}  // namespace
}  // namespace sparsetune
