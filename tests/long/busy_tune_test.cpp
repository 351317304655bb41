// tune never stores a winner from measurements it knows were disturbed: with threads of this
// test spinning beside it (more than there are CPUs), it measures again and then, by default,
// exits with code 3 and stores nothing; asked to store anyway, it stores and says so. batch
// waits and tunes such a matrix again, and leaves it busy, unstored, when the cores stay busy.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/threads.hpp"
#include "cli/cli_support.hpp"
#include "ir/kernels.hpp"
#include "support/spinners.hpp"
#include "tune/batch.hpp"

namespace sparsetune {
namespace {

using testing::RunCli;
using testing::TempDir;

nlohmann::json Counts(const std::string& db) {
  const auto r = RunCli({"db", "stats", "--db", db, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(BusyTune, DisturbedMeasurementsStoreNothingUnlessAsked) {
  TempDir dir;
  const std::string db = dir.path() + "/t.db";
  const std::vector<std::string> env = {"SPARSETUNE_CACHE=" + dir.path() + "/cache"};
  const std::string m = dir.path() + "/m.mtx";
  auto r = RunCli({"gen", "uniform", "--rows", "200k", "--cols", "200k", "--nnz", "2M", "-o", m});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> tune = {"tune",       m,           "--kernel", "spmv",  "--db", db,
                                         "--no-model", "--samples", "0",        "--json"};
  auto with = [&](const std::string& policy) {
    std::vector<std::string> args = tune;
    args.push_back("--on-busy");
    args.push_back(policy);
    return args;
  };
  {
    testing::Spinners busy(3 * HardwareThreads());
    r = RunCli(with("fail"), env);
  }
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("the times were disturbed while measuring " + m), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("after measuring 3 times): nothing was stored"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  const nlohmann::json after_fail = Counts(db);
  EXPECT_EQ(after_fail["winners"], 0);
  EXPECT_EQ(after_fail["measurements"], 0);
  EXPECT_EQ(after_fail["matrices"], 0);

  {
    testing::Spinners busy(3 * HardwareThreads());
    r = RunCli(with("store"), env);
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["disturbed"].get<bool>());
  EXPECT_EQ(j["measure_attempts"], 3);
  EXPECT_FALSE(j["disturbance"].get<std::string>().empty());
  EXPECT_EQ(Counts(db)["winners"], 1);
}

// A matrix of 2M nonzeros: its runs last longer than a scheduler's time slice.
std::string BusyMatrix(const TempDir& dir) {
  const std::string m = dir.path() + "/m.mtx";
  const auto r =
      RunCli({"gen", "uniform", "--rows", "200k", "--cols", "200k", "--nnz", "2M", "-o", m});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return m;
}

TEST(BusyBatch, AMatrixBusyThroughEveryAttemptIsLeftForARerun) {
  TempDir dir;
  const std::string db = dir.path() + "/t.db";
  const std::string summary = dir.path() + "/summary.csv";
  const std::vector<std::string> env = {"SPARSETUNE_CACHE=" + dir.path() + "/cache"};
  const std::string m = BusyMatrix(dir);
  const std::vector<std::string> batch = {
      "batch",          m,   "--kernel",    "spmv",      "--db",  db,          "--no-model",
      "--samples",      "0", "--json",      "--summary", summary, "--on-busy", "fail",
      "--busy-retries", "1", "--busy-wait", "0"};
  testing::CliResult r;
  {
    testing::Spinners busy(3 * HardwareThreads());
    r = RunCli(batch, env);
  }
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["busy"], 1);
  EXPECT_EQ(report["failed"], 0);
  const auto& row = report["matrices"][0];
  EXPECT_EQ(row["status"], "busy");
  EXPECT_NE(row["message"].get<std::string>().find("nothing was stored"), std::string::npos) << row;
  EXPECT_NE(r.err.find("before attempt 2"), std::string::npos) << r.err;
  std::stringstream csv;
  csv << std::ifstream(summary).rdbuf();
  EXPECT_NE(csv.str().find(",busy,"), std::string::npos) << csv.str();
  EXPECT_EQ(Counts(db)["winners"], 0);

  // On a quiet machine the same command tunes it.
  r = RunCli(batch, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tuned"], 1);
  EXPECT_EQ(Counts(db)["winners"], 1);
}

TEST(BusyBatch, AMatrixIsTunedAgainAfterTheWait) {
  TempDir dir;
  BatchRequest request;
  request.paths = {BusyMatrix(dir)};
  request.tune.kernel = "spmv";
  request.tune.expression = KernelExpression("spmv");
  request.tune.db_path = dir.path() + "/t.db";
  request.tune.use_model = false;
  request.tune.samples = 0;
  request.tune.on_busy = BusyPolicy::kFail;
  request.busy_retries = 1;
  request.busy_wait_s = 0;
  // The cores are busy until the batch starts to wait.
  auto busy = std::make_unique<testing::Spinners>(3 * HardwareThreads());
  std::vector<int> attempts;
  BatchProgress progress;
  progress.busy = [&](const std::string& cause, double wait_s, int next_attempt) {
    EXPECT_NE(cause.find("disturbed"), std::string::npos) << cause;
    EXPECT_EQ(wait_s, 0);
    attempts.push_back(next_attempt);
    busy.reset();
  };
  const BatchReport report = RunBatch(request, progress);
  EXPECT_EQ(attempts, std::vector<int>{2});
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(report.rows[0].status, BatchStatus::kTuned) << report.rows[0].message;
  EXPECT_NE(report.rows[0].message.find("tuned at attempt 2"), std::string::npos)
      << report.rows[0].message;
  EXPECT_EQ(report.ExitCode(), 0);
  EXPECT_EQ(Counts(request.tune.db_path)["winners"], 1);
}

}  // namespace
}  // namespace sparsetune
