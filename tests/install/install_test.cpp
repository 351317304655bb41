// `cmake --install` as a user runs it, into a temporary prefix: the installed sparsetune runs
// from there (and from wherever the tree is moved), finds its modules and the shipped models
// beside it and says so on stderr when the models are gone; a user's CMake project finds the
// package and links an emitted kernel, which takes a matrix of the same kind with wider
// columns, new values without packing again and OpenMP's threads; pkg-config gives its flags. And
// scripts/sparsetune runs through a symlink without a word from the build.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"

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
        "include/sparsetune/version.h", "lib/libsparsetune_orderings.so"})
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

// A user's program around the emitted SpMV kernel: a small product, a matrix whose columns
// pass 2^16, new values without packing again, both orders of a renumbered matrix, and the
// thread count; it prints what agreed.
const char* const kUserMain = R"(#include <cmath>
#include <cstdio>
#include <vector>
#include <sparsetune/version.h>
#include "sparsetune_spmv.h"
using Value = sparsetune_spmv_value;
struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> row_ptr;
  std::vector<int32_t> col;
  std::vector<Value> val;
};
// The kernel's y = A x against a loop in double.
bool Agrees(const sparsetune_spmv_operand* a, const Csr& m) {
  std::vector<Value> x(m.cols), y(m.rows, NAN);
  for (int64_t j = 0; j < m.cols; ++j) x[j] = Value(std::sin(0.1 * j));
  const Value* inputs[] = {x.data()};
  if (sparsetune_spmv_compute(a, inputs, y.data()) != 0) return false;
  for (int64_t i = 0; i < m.rows; ++i) {
    double sum = 0, magnitude = 0;
    for (int64_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p) {
      sum += double(m.val[p]) * x[m.col[p]];
      magnitude += std::fabs(double(m.val[p]) * x[m.col[p]]);
    }
    if (!(std::fabs(y[i] - sum) <= 1e-5 * (1 + magnitude))) return false;
  }
  return true;
}
int main() {
  // [[1 0 2] [0 3 0] [4 0 5]] times (1 2 3) is (7 6 19).
  const int64_t row_ptr[] = {0, 2, 3, 5};
  const int32_t col_idx[] = {0, 2, 1, 0, 2};
  const Value values[] = {1, 2, 3, 4, 5}, x[] = {1, 2, 3};
  Value y[3] = {0, 0, 0};
  sparsetune_spmv_operand* a = sparsetune_spmv_pack_csr(3, 3, row_ptr, col_idx, values);
  if (!a) { std::printf("pack: %s\n", sparsetune_spmv_last_error()); return 1; }
  const Value* inputs[] = {x};
  sparsetune_spmv_compute(a, inputs, y);
  sparsetune_spmv_free(a);
  const bool ok = y[0] == 7 && y[1] == 6 && y[2] == 19;
  std::printf("%s with sparsetune %s\n", ok ? "agrees" : "differs", SPARSETUNE_VERSION);

  // A matrix of the same kind whose columns pass 2^16 (every row spans 0 to 99999).
  Csr m;
  m.rows = 60;
  m.cols = 100000;
  m.row_ptr.push_back(0);
  for (int64_t i = 0; i < m.rows; ++i) {
    for (int32_t c : {0, int32_t(i * 1499 % 99998) + 1, 99999}) {
      m.col.push_back(c);
      m.val.push_back(Value(1 + (i + c) % 7));
    }
    m.row_ptr.push_back(int64_t(m.col.size()));
  }
  sparsetune_spmv_operand* wide =
      sparsetune_spmv_pack_csr(m.rows, m.cols, m.row_ptr.data(), m.col.data(), m.val.data());
  if (!wide) { std::printf("pack: %s\n", sparsetune_spmv_last_error()); return 1; }
  std::printf("wider columns %s\n", Agrees(wide, m) ? "agree" : "differ");
  // New values for the same entries, in CSR order: no packing again.
  for (size_t p = 0; p < m.val.size(); ++p) m.val[p] = Value(0.5 + double(p % 11) / 4);
  if (sparsetune_spmv_update_values(wide, m.val.data()) != 0) return 1;
  std::printf("updated values %s\n", Agrees(wide, m) ? "agree" : "differ");
  sparsetune_spmv_free(wide);
  // A square one, which the schedule renumbers: in the caller's order and in the tuned one.
  Csr s;
  s.rows = s.cols = 6000;
  s.row_ptr.push_back(0);
  for (int64_t i = 0; i < s.rows; ++i) {
    for (int64_t c : {(i * 7919) % s.cols, i, (i + 1) % s.cols}) {
      if (s.col.size() > size_t(s.row_ptr.back()) && s.col.back() >= c) continue;
      s.col.push_back(int32_t(c));
      s.val.push_back(Value(1 + (i + c) % 5));
    }
    s.row_ptr.push_back(int64_t(s.col.size()));
  }
  sparsetune_spmv_operand* square =
      sparsetune_spmv_pack_csr(s.rows, s.cols, s.row_ptr.data(), s.col.data(), s.val.data());
  if (!square) { std::printf("pack: %s\n", sparsetune_spmv_last_error()); return 1; }
  std::vector<Value> sx(s.cols), sx_tuned(s.cols), sy(s.rows), sy_tuned(s.rows);
  for (int64_t j = 0; j < s.cols; ++j) sx[j] = Value(std::sin(0.1 * j));
  const Value* tuned_inputs[] = {sx_tuned.data()};
  sparsetune_spmv_to_tuned_order_x(square, sx.data(), sx_tuned.data());
  sparsetune_spmv_compute_tuned_order(square, tuned_inputs, sy_tuned.data());
  sparsetune_spmv_from_tuned_order_y(square, sy_tuned.data(), sy.data());
  bool same = Agrees(square, s);
  for (int64_t i = 0; i < s.rows; ++i) {
    double sum = 0;
    for (int64_t p = s.row_ptr[i]; p < s.row_ptr[i + 1]; ++p) sum += double(s.val[p]) * sx[s.col[p]];
    same = same && std::fabs(sy[i] - sum) <= 1e-4 * (1 + std::fabs(sum));
  }
  std::printf("both orders %s\n", same ? "agree" : "differ");
  sparsetune_spmv_free(square);
  std::printf("threads %d\n", sparsetune_spmv_threads());
  sparsetune_spmv_set_threads(0);
  std::printf("threads after set_threads(0) %d\n", sparsetune_spmv_threads());
  return ok ? 0 : 1;
}
)";

TEST(Install, AUsersProjectFindsThePackageAndLinksAnEmittedKernel) {
  TempDir dir;
  const std::string prefix = Install(dir);
  const std::string db = dir.File("t.db");
  const CliResult tune = RunProgram(prefix + "/bin/sparsetune",
                                    {"tune", kExample, "--kernel", "spmv", "--db", db, "--no-model",
                                     "--samples", "0", "--orderings", "none"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;

  // The winner made to renumber rows by METIS parts, as tune stores one that does: its kernel
  // needs the installed orderings library, which sparsetune_add_kernel links.
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(handle,
                         "UPDATE schedules SET canonical_json = json_set(canonical_json, "
                         "'$.ordering', 'partition') WHERE id IN (SELECT schedule_id FROM winners)",
                         nullptr, nullptr, &error),
            SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(handle);

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
  std::ofstream(project + "/main.cpp") << kUserMain;
  const std::string build = dir.path() + "/project-build";
  CliResult r = RunProgram("cmake", {"-S", project, "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("sparsetune: stored winner"), std::string::npos) << r.out;
  r = RunProgram("cmake", {"--build", build});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = RunProgram(build + "/user", {}, {"OMP_NUM_THREADS=3"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("agrees with sparsetune ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\nwider columns agree\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nupdated values agree\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nboth orders agree\n"), std::string::npos) << r.out;
  // OpenMP's threads, except that a schedule tuned for one keeps one until asked.
  std::ifstream schedule_file(build + "/tuned_spmv_tuned/sparsetune_spmv.schedule.json");
  const nlohmann::json schedule = nlohmann::json::parse(schedule_file);
  const bool one_thread = schedule.contains("parallel") && schedule["parallel"].is_object() &&
                          schedule["parallel"].value("threads", 0) == 1;
  EXPECT_NE(r.out.find(one_thread ? "\nthreads 1\n" : "\nthreads 3\n"), std::string::npos)
      << r.out << schedule;
  EXPECT_NE(r.out.find("\nthreads after set_threads(0) 3\n"), std::string::npos) << r.out;

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
