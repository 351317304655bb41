// A run timed while other work holds the cores (threads of this test spinning, more than there
// are CPUs) says so: it is timed again, and the report marks the time as not to be trusted.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/threads.hpp"
#include "cli_support.hpp"
#include "support/spinners.hpp"

namespace sparsetune {
namespace {

using testing::RunCli;
using testing::TempDir;

TEST(BusyRun, ARunBesideSpinningThreadsIsReportedDisturbed) {
  TempDir dir;
  const std::vector<std::string> env = {"SPARSETUNE_CACHE=" + dir.path() + "/cache"};
  const std::string m = dir.path() + "/m.mtx";
  // Runs of a few milliseconds: longer than a scheduler's time slice.
  auto r = RunCli({"gen", "uniform", "--rows", "200k", "--cols", "200k", "--nnz", "2M", "-o", m});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  {
    testing::Spinners busy(3 * HardwareThreads());
    r = RunCli({"run", m, "--kernel", "spmv", "--json"}, env);
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["verified"].get<bool>());
  EXPECT_TRUE(j["disturbed"].get<bool>());
  EXPECT_EQ(j["timing_attempts"], 3);  // timed again twice
  EXPECT_FALSE(j["disturbance"].get<std::string>().empty());
}

}  // namespace
}  // namespace sparsetune
