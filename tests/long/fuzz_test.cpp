// The bounded fuzz run (fuzz/run_short.sh: 20000 inputs per target: the readers, schedule JSON
// and database imports) from the default build. libFuzzer needs clang, so the fuzz targets get
// a build of their own under the build directory (tests/long-work/fuzz-build, configured once,
// as scripts/fuzz.sh does); without clang the test is skipped.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_support.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;
using testing::RunCommand;

TEST(Fuzz, TargetsSurviveTheBoundedRun) {
  const fs::path work = fs::read_symlink("/proc/self/exe").parent_path() / "long-work";
  fs::create_directories(work);
  const std::string log = (work / "fuzz.log").string();
  if (RunCommand({"clang++", "--version"}, log).exit_code != 0)
    GTEST_SKIP() << "no clang++: the fuzz targets need it";
  const std::string build = (work / "fuzz-build").string();
  if (!fs::exists(build + "/build.ninja")) {
    const auto configured = RunCommand(
        {"cmake", "-S", SPARSETUNE_SOURCE_DIR, "-B", build, "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_C_COMPILER=clang",
         "-DCMAKE_CXX_COMPILER=clang++", "-DSPARSETUNE_FUZZ=ON", "-DSPARSETUNE_BUILD_BENCH=OFF"},
        log);
    ASSERT_EQ(configured.exit_code, 0) << configured.output;
  }
  const auto built = RunCommand({"cmake", "--build", build, "--target", "fuzz_matrix_market",
                                 "fuzz_tns", "fuzz_schedule_json", "fuzz_db_import"},
                                log);
  ASSERT_EQ(built.exit_code, 0) << built.output;
  // Only the fuzz runs of that build: its own long tests would start this one again.
  const auto ran = RunCommand(
      {"ctest", "--test-dir", build, "-R", "^fuzz_.*_short$", "--output-on-failure"}, log);
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("100% tests passed, 0 tests failed out of 4"), std::string::npos)
      << ran.output;
}

}  // namespace
}  // namespace sparsetune
