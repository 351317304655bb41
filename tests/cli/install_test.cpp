// `cmake --install` as a user runs it, into a temporary prefix: the installed sparsetune runs
// from there (and from wherever the tree is moved), finds its modules and the shipped models
// beside it and says so on stderr when the models are gone; a user's CMake project finds the
// package and links an emitted kernel; pkg-config gives its flags. And scripts/sparsetune
// runs through a symlink without a word from the build.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::RunCli;
using testing::RunProgram;
using testing::TempDir;

const std::string kExample = std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";

// No $SPARSETUNE_MODELS from the caller's environment: the installed tree must find its own.
const std::vector<std::string> kOwnModels = {"SPARSETUNE_MODELS="};

std::string Install(const TempDir& dir) {
  const std::string prefix = dir.path() + "/prefix";
  const CliResult r = RunProgram("cmake", {"--install", SPARSETUNE_BUILD_DIR, "--prefix", prefix});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return prefix;
}

TEST(Install, TheInstalledBinaryRunsFromItsPrefix) {
  TempDir dir;
  const std::string prefix = Install(dir);
  for (const char* file :
       {"bin/sparsetune", "lib/sparsetune/libsparsetune_costmodel_torch.so",
        "lib/sparsetune/libsparsetune_baselines_libraries.so",
        "share/sparsetune/models/spmv/model.json", "share/sparsetune/schemas/schedule.schema.json",
        "lib/cmake/sparsetune/sparsetuneConfig.cmake", "lib/pkgconfig/sparsetune.pc",
        "include/sparsetune/version.h"})
    EXPECT_TRUE(fs::exists(prefix + "/" + file)) << file;

  // Moved elsewhere, it still runs: nothing in it points back at the build.
  const std::string moved = dir.path() + "/moved";
  fs::rename(prefix, moved);
  const std::string sparsetune = moved + "/bin/sparsetune";
  CliResult r = RunProgram(sparsetune, {"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, RunCli({"--version"}).out);
  r = RunProgram(sparsetune, {"info", kExample, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["nnz"], 138187);

  const std::string db = dir.File("empty.db");
  r = RunProgram(sparsetune, {"query", kExample, "--kernel", "spmv", "--db", db});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("\n  sparsetune tune " + kExample + " --kernel spmv --db " + db + "\n"),
            std::string::npos)
      << r.err;
}

TEST(Install, TuneFindsTheInstalledModelsAndSaysWhenTheyAreGone) {
  TempDir dir;
  const std::string moved = dir.path() + "/moved";
  fs::rename(Install(dir), moved);
  const std::string sparsetune = moved + "/bin/sparsetune";
  const std::vector<std::string> tune = {"tune",        kExample,         "--kernel", "spmv",
                                         "--db",        dir.File("t.db"), "--top-k",  "2",
                                         "--orderings", "none",           "--force",  "--json"};
  CliResult r = RunProgram(sparsetune, tune, kOwnModels);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("no cost model"), std::string::npos) << r.err;
  auto sources = nlohmann::json::parse(r.out)["sources"];
  EXPECT_NE(std::find(sources.begin(), sources.end(), "model"), sources.end()) << sources;

  fs::remove_all(moved + "/share/sparsetune/models");
  r = RunProgram(sparsetune, tune, kOwnModels);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: no cost model for spmv (looked in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(moved + "/share/sparsetune/models/spmv"), std::string::npos) << r.err;
  sources = nlohmann::json::parse(r.out)["sources"];
  EXPECT_EQ(std::find(sources.begin(), sources.end(), "model"), sources.end()) << sources;
  // --no-model asks for exactly that: no warning.
  std::vector<std::string> no_model = tune;
  no_model.push_back("--no-model");
  r = RunProgram(sparsetune, no_model, kOwnModels);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("no cost model"), std::string::npos) << r.err;
}

TEST(Install, AUsersProjectFindsThePackageAndLinksAnEmittedKernel) {
  TempDir dir;
  const std::string prefix = Install(dir);
  const std::string db = dir.File("t.db");
  const CliResult tune = RunProgram(prefix + "/bin/sparsetune",
                                    {"tune", kExample, "--kernel", "spmv", "--db", db, "--no-model",
                                     "--samples", "0", "--orderings", "none"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;

  const std::string project = dir.path() + "/project";
  fs::create_directories(project);
  std::ofstream(project + "/CMakeLists.txt") << R"(cmake_minimum_required(VERSION 3.16)
project(user LANGUAGES CXX)
find_package(sparsetune 0.1 CONFIG REQUIRED)
sparsetune_add_kernel(tuned_spmv MATRIX ")" << kExample
                                             << R"(" KERNEL spmv DATABASE ")" << db << R"(")
add_executable(user main.cpp)
target_link_libraries(user PRIVATE tuned_spmv)
)";
  std::ofstream(project + "/main.cpp") << R"(#include <cmath>
#include <cstdio>
#include <sparsetune/version.h>
#include "sparsetune_spmv.h"
int main() {
  // [[1 0 2] [0 3 0] [4 0 5]] times (1 2 3) is (7 6 19).
  const int64_t row_ptr[] = {0, 2, 3, 5};
  const int32_t col_idx[] = {0, 2, 1, 0, 2};
  const sparsetune_spmv_value values[] = {1, 2, 3, 4, 5}, x[] = {1, 2, 3};
  sparsetune_spmv_value y[3] = {0, 0, 0};
  sparsetune_spmv_operand* a = sparsetune_spmv_pack_csr(3, 3, row_ptr, col_idx, values);
  if (!a) { std::printf("pack: %s\n", sparsetune_spmv_last_error()); return 1; }
  const sparsetune_spmv_value* inputs[] = {x};
  sparsetune_spmv_compute(a, inputs, y);
  sparsetune_spmv_free(a);
  const bool ok = y[0] == 7 && y[1] == 6 && y[2] == 19;
  std::printf("%s with sparsetune %s\n", ok ? "agrees" : "differs", SPARSETUNE_VERSION);
  return ok ? 0 : 1;
}
)";
  const std::string build = dir.path() + "/project-build";
  CliResult r = RunProgram("cmake", {"-S", project, "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("sparsetune: stored winner"), std::string::npos) << r.out;
  r = RunProgram("cmake", {"--build", build});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = RunProgram(build + "/user", {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("agrees with sparsetune ", 0), 0u) << r.out;

  // pkg-config: the flags the kernel was timed with, and where sparsetune is.
  const std::vector<std::string> env = {"PKG_CONFIG_PATH=" + prefix + "/lib/pkgconfig"};
  r = RunProgram("pkg-config", {"--cflags", "--libs", "sparsetune"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("-fopenmp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-O3"), std::string::npos) << r.out;
  r = RunProgram("pkg-config", {"--variable=sparsetune", "sparsetune"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string executable = r.out.substr(0, r.out.find('\n'));
  EXPECT_TRUE(fs::equivalent(executable, prefix + "/bin/sparsetune")) << executable;
}

TEST(Install, TheScriptRunsThroughASymlinkQuietly) {
  TempDir dir;
  const std::string link = dir.path() + "/sparsetune";
  fs::create_symlink(std::string(SPARSETUNE_SOURCE_DIR) + "/scripts/sparsetune", link);
  const CliResult r =
      RunProgram(link, {"--version"}, {"SPARSETUNE_BUILD_DIR=" SPARSETUNE_BUILD_DIR});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, RunCli({"--version"}).out);
  // An up-to-date build says nothing (no "ninja: no work to do").
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace sparsetune
