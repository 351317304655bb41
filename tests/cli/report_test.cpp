// What tune and query tell a user in words: the candidates counted by outcome, a legend on
// request, and after a query miss the exact tune command to run.
#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include "cli_support.hpp"

namespace sparsetune {
namespace {

using testing::CliResult;
using testing::RunCli;
using testing::TempDir;

const std::string kExample = std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";

TEST(Report, TuneCountsCandidatesByOutcomeAndExplainsItself) {
  TempDir dir;
  const std::vector<std::string> tune = {"tune", kExample,         "--kernel",   "spmv",
                                         "--db", dir.File("t.db"), "--no-model", "--samples",
                                         "0",    "--orderings",    "none"};
  CliResult r = RunCli(tune);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // "  candidates  9 candidates: 8 verified and timed, 1 format the packer refused (...)"
  std::smatch counts;
  ASSERT_TRUE(std::regex_search(r.out, counts,
                                std::regex("\n  candidates  ([0-9]+) candidates: ([0-9]+) "
                                           "verified and timed[^\n]*\n")))
      << r.out;
  EXPECT_GE(std::stoi(counts[1]), std::stoi(counts[2]));
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  time        [0-9.]+ (us|ms|s)   FixedCSR")))
      << r.out;
  EXPECT_NE(r.out.find("\n  noise       "), std::string::npos) << r.out;
  // Where the threads ran while the winner was timed: it can decide between close schedules.
  if (std::thread::hardware_concurrency() > 1) {
    EXPECT_TRUE(std::regex_search(
        r.out, std::regex("\n  threads     a cache line's round trip between two of them: "
                          "[1-9][0-9]* ns; the slowest took [1-9][0-9]*\\.[0-9]{2}x the "
                          "fastest's time for the same work\n")))
        << r.out;
  }
  EXPECT_NE(r.out.find("(--explain: how to read this report)"), std::string::npos) << r.out;

  std::vector<std::string> explained = tune;
  explained.insert(explained.end(), {"--force", "--explain"});
  r = RunCli(explained);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("How to read this report:\n  winner      LOOPS | LEVELS SPLITS | PARALLEL"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the packer refused (padding over 20 x nnz)"), std::string::npos) << r.out;
  // Its percentages print as written, not as printf's conversions.
  EXPECT_NE(r.out.find("within 10% of its fastest"), std::string::npos) << r.out;
}

TEST(Report, AQueryMissPrintsTheTuneCommandToRun) {
  TempDir dir;
  const std::string db = dir.File("empty.db");
  const CliResult r = RunCli(
      {"query", kExample, "--kernel", "spmm", "--dense", "j=64", "--dtype", "f64", "--db", db});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("\n  sparsetune tune " + kExample +
                       " --kernel spmm --dense j=64 --dtype f64 --db " + db + "\n"),
            std::string::npos)
      << r.err;
  // Quoted for the shell where it must be.
  const CliResult expr = RunCli({"query", kExample, "--expr", "y(i) = A(i,k) * x(k)", "--db", db});
  EXPECT_EQ(expr.exit_code, 1);
  EXPECT_NE(expr.err.find("--expr 'y(i) = A(i,k) * x(k)'"), std::string::npos) << expr.err;
}

}  // namespace
}  // namespace sparsetune
