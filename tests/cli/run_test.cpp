// `sparsetune run` as a user drives it: valid runs report verified times; every invalid
// schedule, expression or size is refused with exit code 2 and its reason before any compiler
// runs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace sparsetune {
namespace {

using testing::RunCli;
using testing::TempDir;

const std::string kMatrix =
    "%%MatrixMarket matrix coordinate real general\n"
    "6 5 9\n1 1 1.5\n1 4 2\n2 2 -1\n3 1 4\n3 5 0.5\n4 3 3\n5 5 -2\n6 1 1\n6 4 2.5\n";

// A fresh JIT cache per test run: a refused schedule must leave it empty.
std::vector<std::string> CacheEnv(const TempDir& dir) {
  return {"SPARSETUNE_CACHE=" + dir.path() + "/cache"};
}

TEST(RunCommand, DefaultScheduleVerifiesAndReportsJson) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  auto r = RunCli({"run", m, "--kernel", "spmm", "--dense", "j=7", "--json"}, CacheEnv(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kernel"], "spmm");
  EXPECT_TRUE(j["verified"].get<bool>());
  EXPECT_GT(j["time_ms"]["median"].get<double>(), 0.0);
  EXPECT_GE(j["reps"].get<int>(), 5);
  EXPECT_GE(j["pack_ms"].get<double>(), 0.0);
  EXPECT_GT(j["compile_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["schedule"]["format"], nlohmann::json({"i:U", "k:C"}));
  EXPECT_EQ(j["dense"]["j"], 7);
}

TEST(RunCommand, SplitScheduleFileAndBakedMode) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  const std::string s = dir.File("s.json", R"({"splits": {"i": 4, "k": 3},
      "loop_order": ["i1", "k1", "i0", "k0"], "format": ["i1:U", "k1:C", "i0:U", "k0:U"],
      "parallel": {"index": "i1", "chunk": 2, "threads": 2}})");
  for (const char* mode : {"--verify", "--baked"}) {
    auto r = RunCli({"run", m, "--kernel", "spmv", "--schedule", s, mode, "--json"}, CacheEnv(dir));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(nlohmann::json::parse(r.out)["verified"].get<bool>()) << mode;
  }
}

TEST(RunCommand, RuntimeParametersReuseOneCompiledKernel) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  std::string first_source;
  for (int split : {2, 3, 5}) {
    const std::string s =
        dir.File("s" + std::to_string(split) + ".json",
                 R"({"splits": {"i": )" + std::to_string(split) +
                     R"(}, "loop_order": ["i1", "i0", "k"], "format": ["i1:U", "i0:U", "k:C"],
                                       "parallel": {"index": "i1", "chunk": )" +
                     std::to_string(split) + "}}");
    auto r = RunCli({"run", m, "--kernel", "spmv", "--schedule", s, "--json"}, CacheEnv(dir));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j["verified"].get<bool>());
    if (first_source.empty()) {
      first_source = j["source"];
    } else {
      EXPECT_EQ(j["source"], first_source);
      EXPECT_TRUE(j["compile_cached"].get<bool>());
    }
  }
}

TEST(RunCommand, ExpressionWithSparseOutput) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  auto r =
      RunCli({"run", m, "--expr", "D(i,j) = A(i,j) * B(i,k) * C(k,j)", "--dense", "k=5", "--json"},
             CacheEnv(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["verified"].get<bool>());
}

struct BadCase {
  std::string name;
  std::vector<std::string> args;  // FILE is replaced by the matrix path, SCHED by the schedule
  std::string schedule;           // JSON text, when the case uses SCHED
  std::string expected;           // part of the message
};

class RunRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(RunRejects, WithExitCodeTwoBeforeCompiling) {
  const BadCase& c = GetParam();
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  const std::string s = c.schedule.empty() ? "" : dir.File("sched.json", c.schedule);
  std::vector<std::string> args;
  for (const auto& a : c.args) args.push_back(a == "FILE" ? m : a == "SCHED" ? s : a);
  auto r = RunCli(args, CacheEnv(dir));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(c.expected), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/cache/jit")) << "a compiler ran";
}

const std::string kSpmv = R"("format": ["i:U", "k:C"])";

INSTANTIATE_TEST_SUITE_P(
    Cases, RunRejects,
    ::testing::Values(
        BadCase{"order_breaks_levels",
                {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
                R"({"loop_order": ["k", "i"], )" + kSpmv + "}",
                "must follow its level order"},
        BadCase{"split_zero",
                {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
                R"({"splits": {"i": 0}, "loop_order": ["i", "k"], )" + kSpmv + "}",
                "split of i is 0; it must be an integer from 1 to"},
        BadCase{"unknown_index",
                {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
                R"({"loop_order": ["i", "q"], )" + kSpmv + "}",
                "unknown loop variable q"},
        BadCase{"split_of_unknown_index",
                {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
                R"({"splits": {"z": 4}, "loop_order": ["i", "k"], )" + kSpmv + "}",
                "no index z"},
        BadCase{
            "inner_before_outer",
            {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
            R"({"splits": {"i": 2}, "loop_order": ["i0", "i1", "k"], "format": ["i1:U", "i0:U", "k:C"]})",
            "must be inside loop i1"},
        BadCase{"parallel_not_in_nest",
                {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
                R"({"loop_order": ["i", "k"], )" + kSpmv +
                    R"(, "parallel": {"index": "j", "chunk": 4}})",
                "unknown loop variable j"},
        BadCase{"missing_level",
                {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
                R"({"loop_order": ["i", "k"], "format": ["i:U"]})",
                "has no level for k"},
        BadCase{"missing_loop",
                {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
                R"({"loop_order": ["i"], )" + kSpmv + "}",
                "no loop k encloses it"},
        BadCase{"padding_cap",
                {"run", "FILE", "-k", "spmm", "--dense", "j=2", "-s", "SCHED"},
                R"({"splits": {"i": 64, "k": 64}, "loop_order": ["i1", "k1", "i0", "k0", "j"],
                    "format": ["i1:U", "k1:C", "i0:U", "k0:U"]})",
                "padding cap"},
        BadCase{"bad_json",
                {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
                "{\n\"loop_order\": [\"i\",,]}",
                ":2: invalid JSON"},
        BadCase{"chunk_zero",
                {"run", "FILE", "-k", "spmv", "-s", "SCHED"},
                R"({"loop_order": ["i", "k"], )" + kSpmv +
                    R"(, "parallel": {"index": "i", "chunk": 0}})",
                "parallel chunk is 0; it must be an integer from 1 to 2147483647"},
        BadCase{"repeated_index",
                {"run", "FILE", "--expr", "y(i) = A(i,i) * x(i)"},
                "",
                "column 12: index i is repeated in A"},
        BadCase{"no_product",
                {"run", "FILE", "--expr", "y(i) = A(i,k) + x(k)"},
                "",
                "column 15: unexpected '+'"},
        BadCase{"unknown_sparse",
                {"run", "FILE", "--expr", "y(i) = A(i,k) * x(k)", "--sparse", "Q"},
                "",
                "--sparse names Q"},
        BadCase{"missing_dense_size",
                {"run", "FILE", "--expr", "C(i,j) = A(i,k) * B(k,j)"},
                "",
                "index j has no size"},
        BadCase{"unknown_kernel", {"run", "FILE", "--kernel", "spmx"}, "", "unknown kernel 'spmx'"},
        BadCase{"dense_too_large",
                {"run", "FILE", "--kernel", "spmm", "--dense", "j=4000000000000"},
                "",
                "a run on this operand needs at least"},
        BadCase{"wrong_order_tensor",
                {"run", "FILE", "--kernel", "mttkrp"},
                "",
                "has 3 indices but the tensor file has order 2"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

}  // namespace
}  // namespace sparsetune
