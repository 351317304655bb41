// tune never stores a winner from measurements it knows were disturbed: with threads of this
// test spinning beside it (more than there are CPUs), it measures again and then, by default,
// exits with code 3 and stores nothing; asked to store anyway, it stores and says so.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/threads.hpp"
#include "cli/cli_support.hpp"
#include "support/spinners.hpp"

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

}  // namespace
}  // namespace sparsetune
