// `sparsetune batch` on a terminal: each matrix's result stays on a line of its own above the
// progress bar instead of being drawn over by it. The terminal is a pseudo-terminal from
// script(1) (util-linux, in every Debian system).
#include <gtest/gtest.h>

#include <regex>

#include "cli_support.hpp"

namespace sparsetune {
namespace {

using testing::CliResult;
using testing::RunProgram;
using testing::TempDir;

TEST(BatchOnATerminal, EveryMatrixKeepsItsLineAboveTheBar) {
  TempDir dir;
  const std::string a = dir.File("first.mtx",
                                 "%%MatrixMarket matrix coordinate real general\n"
                                 "4 4 5\n1 1 1\n2 2 2\n3 1 3\n3 3 4\n4 4 5\n");
  const std::string b = dir.File("second.mtx",
                                 "%%MatrixMarket matrix coordinate real general\n"
                                 "5 5 6\n1 2 1\n2 2 2\n3 4 3\n4 4 4\n5 1 5\n5 5 6\n");
  const std::string command = std::string(SPARSETUNE_BINARY) + " batch " + a + " " + b +
                              " --kernel spmv --db " + dir.File("b.db") +
                              " --no-model --samples 0 --orderings none";
  const CliResult r = RunProgram("script", {"-qec", command, "/dev/null"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* name : {"first", "second"}) {
    // The line ends with a newline (the pseudo-terminal writes \r\n), not with the bar.
    const std::regex kept(std::string("batch: ") + name + ": tuned [^\r\n]*x FixedCSR\r?\n");
    EXPECT_TRUE(std::regex_search(r.out, kept)) << name << " in:\n" << r.out;
  }
}

}  // namespace
}  // namespace sparsetune
