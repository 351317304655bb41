// What a user learns from the command line itself: --version, an example in every --help,
// "did you mean" for a mistyped subcommand or option.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "cli_support.hpp"

namespace sparsetune {
namespace {

using testing::CliResult;
using testing::RunCli;
using testing::TempDir;

const std::string kExample = std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";

// The names under "Subcommands:" in a --help text.
std::vector<std::string> Subcommands(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "Subcommands:") {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.empty()) break;
    std::smatch match;
    if (std::regex_search(line, match, std::regex("^  ([a-z0-9-]+)"))) names.push_back(match[1]);
  }
  return names;
}

TEST(Help, VersionNamesTheVersionAndTheRevision) {
  const CliResult r = RunCli({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex("sparsetune [0-9]+\\.[0-9]+\\.[0-9]+ \\(git "
                                                 "[0-9a-z.-]+\\)\n")))
      << r.out;
}

TEST(Help, EverySubcommandsHelpEndsWithAnExample) {
  // Walk the tree of subcommands through their own --help.
  std::vector<std::vector<std::string>> pending = {{}};
  int checked = 0;
  while (!pending.empty()) {
    const std::vector<std::string> path = pending.back();
    pending.pop_back();
    std::vector<std::string> args = path;
    args.push_back("--help");
    const CliResult r = RunCli(args);
    std::string name = "sparsetune";
    for (const auto& p : path) name += " " + p;
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    const size_t example = r.out.find("\nExample:\n  sparsetune ");
    EXPECT_NE(example, std::string::npos) << name << " --help has no example:\n" << r.out;
    // The example runs the subcommand it documents.
    if (!path.empty() && example != std::string::npos) {
      std::string command = "sparsetune";
      for (const auto& p : path) command += " " + p;
      EXPECT_EQ(r.out.find(command + " ", example), example + 12) << r.out;
    }
    ++checked;
    for (const auto& sub : Subcommands(r.out)) {
      std::vector<std::string> next = path;
      next.push_back(sub);
      pending.push_back(next);
    }
  }
  EXPECT_GE(checked, 25);  // the commands, gen's kinds and db's subcommands
}

TEST(Help, AMistypedSubcommandGetsTheNearestNames) {
  CliResult r = RunCli({"tun", kExample, "--kernel", "spmv"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'tun' is not a command; did you mean tune?"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("A subcommand is required"), std::string::npos) << r.err;

  r = RunCli({"db", "stat"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("sparsetune db: 'stat' is not a command; did you mean stats?"),
            std::string::npos)
      << r.err;

  r = RunCli({"gen", "stencil"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean stencil2d or stencil3d?"), std::string::npos) << r.err;

  // Nothing near: the list of commands only.
  r = RunCli({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("commands: info gen run"), std::string::npos) << r.err;
}

TEST(Help, AMistypedOptionGetsTheNearestNames) {
  CliResult r = RunCli({"tune", kExample, "--kernal", "spmv"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("sparsetune tune: unknown option --kernal; did you mean --kernel?"),
            std::string::npos)
      << r.err;

  r = RunCli({"query", kExample, "--kernel=spmv", "--fallbak=heuristic"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown option --fallbak; did you mean --fallback?"), std::string::npos)
      << r.err;

  // Nothing near: where to look.
  r = RunCli({"info", kExample, "--frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown option --frobnicate (see sparsetune info --help)"),
            std::string::npos)
      << r.err;
}

TEST(Help, NoCommandShowsTheCommands) {
  const CliResult r = RunCli({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Subcommands:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tune"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sparsetune
