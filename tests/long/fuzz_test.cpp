// The bounded fuzz run (fuzz/run_short.sh: 20000 inputs per target: the readers, schedule JSON
// and database imports) from the default build. libFuzzer needs clang, so the fuzz targets get
// a build of their own under the build directory (tests/long-work/fuzz-build, configured once,
// as scripts/fuzz.sh does); without clang the test is skipped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_support.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a program found on PATH (no shell), output into `log`.
CommandResult RunCommand(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> all = args;
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  CommandResult result;
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  std::ifstream in(log);
  std::stringstream s;
  s << in.rdbuf();
  result.output = s.str();
  return result;
}

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
