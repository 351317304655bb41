// examples/cmake as a user builds it: configuring stops with the tune command while the
// database has no winner; after a tune it emits, builds and links the kernel, and the program
// agrees with a plain CSR loop and times itself against it.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "cli/cli_support.hpp"

namespace sparsetune {
namespace {

using testing::CommandResult;
using testing::RunCli;
using testing::RunCommand;
using testing::TempDir;

const std::string kExample = std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";
const std::string kProject = std::string(SPARSETUNE_SOURCE_DIR) + "/examples/cmake";

CommandResult Configure(const TempDir& dir, const std::string& build, const std::string& db) {
  // The build tree's package (sparsetuneConfig.cmake), as an installed one would be found.
  return RunCommand({"cmake", "-S", kProject, "-B", build, "-Dsparsetune_DIR=" SPARSETUNE_BUILD_DIR,
                     "-DSPARSETUNE_DB=" + db, "-DMATRIX=" + kExample},
                    dir.File("configure.log"));
}

TEST(CMakeExample, BuildsTheTunedKernelAndMatchesCsr) {
  TempDir dir;
  const std::string db = dir.File("t.db");

  // Nothing stored yet: configuring fails and tells the user what to run.
  const auto miss = Configure(dir, dir.path() + "/miss", db);
  EXPECT_NE(miss.exit_code, 0) << miss.output;
  EXPECT_NE(miss.output.find("sparsetune tune " + kExample + " --kernel spmv --db " + db),
            std::string::npos)
      << miss.output;

  const auto tune = RunCli(
      {"tune", kExample, "--kernel", "spmv", "--db", db, "--samples", "2", "--no-model", "--json"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;

  const std::string build = dir.path() + "/build";
  const auto configure = Configure(dir, build, db);
  ASSERT_EQ(configure.exit_code, 0) << configure.output;
  EXPECT_NE(configure.output.find("stored winner"), std::string::npos) << configure.output;
  const auto compile =
      RunCommand({"cmake", "--build", build, "--parallel", "2"}, dir.File("build.log"));
  ASSERT_EQ(compile.exit_code, 0) << compile.output;

  const auto run = RunCommand({build + "/spmv_example"}, dir.File("run.log"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(run.output, match, std::regex("max error ([0-9.eE+-]+)")))
      << run.output;
  const double error = std::stod(match[1]);
  EXPECT_LT(error, 1e-4) << run.output;
  EXPECT_NE(run.output.find("138187 nonzeros"), std::string::npos) << run.output;
  // It times the tuned kernel against its own plain CSR loop and prints the ratio.
  EXPECT_TRUE(std::regex_search(run.output, std::regex("plain CSR loop [0-9.]+ us"))) << run.output;
  EXPECT_TRUE(
      std::regex_search(run.output, std::regex("speedup over the plain CSR loop: [0-9.]+x")))
      << run.output;
}

}  // namespace
}  // namespace sparsetune
