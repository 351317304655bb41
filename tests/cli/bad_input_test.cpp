// Runs the real binary on every malformed input in tests/data/bad_inputs and checks the
// contract: exit code 2 and one stderr line naming the file, the line and the cause.

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/process.hpp"

namespace {

const std::string kBadInputs = std::string(SPARSETUNE_SOURCE_DIR) + "/tests/data/bad_inputs";

struct Outcome {
  int exit_code = -1;
  std::string stderr_text;
};

// Runs `sparsetune info path` with stdout discarded and stderr captured.
Outcome RunInfo(const std::string& path) {
  const std::string err_path =
      ::testing::TempDir() + "bad_input_" + std::to_string(getpid()) + ".err";
  Outcome outcome;
  outcome.exit_code = sparsetune::testing::WaitForExit(
      sparsetune::testing::StartProcess({SPARSETUNE_BINARY, "info", path}, "/dev/null", err_path));
  outcome.stderr_text = sparsetune::testing::ReadText(err_path);
  std::remove(err_path.c_str());
  return outcome;
}

struct Expectation {
  int line = 0;  // 0: the message names no line
  std::string cause;
};

std::string Trim(std::string s) {
  const char* blanks = " \t`";
  s.erase(0, s.find_first_not_of(blanks));
  s.erase(s.find_last_not_of(blanks) + 1);
  return s;
}

// The table in the folder's README: | `file` | line or - | `message part` | what |
std::map<std::string, Expectation> ReadExpectations() {
  std::map<std::string, Expectation> table;
  std::ifstream readme(kBadInputs + "/README.md");
  std::string row;
  while (std::getline(readme, row)) {
    if (row.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream cells_stream(row.substr(1));
    std::string cell;
    while (std::getline(cells_stream, cell, '|')) cells.push_back(Trim(cell));
    if (cells.size() < 3) continue;
    Expectation e;
    e.line = cells[1] == "-" ? 0 : std::stoi(cells[1]);
    e.cause = cells[2];
    table[cells[0]] = e;
  }
  return table;
}

std::set<std::string> ListInputs() {
  std::set<std::string> names;
  if (DIR* dir = opendir(kBadInputs.c_str())) {
    while (const dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != ".." && name != "README.md") names.insert(name);
    }
    closedir(dir);
  }
  return names;
}

TEST(BadInput, EveryFileHasARowInTheReadme) {
  const auto table = ReadExpectations();
  const auto files = ListInputs();
  EXPECT_GE(files.size(), 30u);
  for (const auto& name : files) EXPECT_TRUE(table.count(name)) << name << " is not in README.md";
  for (const auto& [name, e] : table) EXPECT_TRUE(files.count(name)) << name << " is missing";
}

TEST(BadInput, EachFileFailsWithExitCode2AndOneLineNamingFileLineAndCause) {
  const auto table = ReadExpectations();
  ASSERT_FALSE(table.empty());
  for (const auto& [name, expected] : table) {
    SCOPED_TRACE(name);
    const std::string path = kBadInputs + "/" + name;
    const Outcome outcome = RunInfo(path);
    EXPECT_EQ(outcome.exit_code, 2) << outcome.stderr_text;
    const std::string& err = outcome.stderr_text;
    ASSERT_FALSE(err.empty());
    EXPECT_EQ(err.find('\n'), err.size() - 1) << "expected one line: " << err;
    EXPECT_NE(err.find(path), std::string::npos) << err;
    if (expected.line > 0) {
      EXPECT_NE(err.find(":" + std::to_string(expected.line) + ": "), std::string::npos) << err;
    }
    EXPECT_NE(err.find(expected.cause), std::string::npos) << err;
  }
}

TEST(BadInput, MissingFileFailsWithExitCode2) {
  const std::string path = kBadInputs + "/no_such_file.mtx";
  const Outcome outcome = RunInfo(path);
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_NE(outcome.stderr_text.find(path + ": cannot open"), std::string::npos)
      << outcome.stderr_text;
}

TEST(BadInput, UnreadableFileFailsWithExitCode2) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files regardless of their mode";
  char dir[] = "/tmp/sparsetune_unreadable_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/locked.mtx";
  { std::ofstream(path) << "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n"; }
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  const Outcome outcome = RunInfo(path);
  unlink(path.c_str());
  rmdir(dir);
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_NE(outcome.stderr_text.find("cannot open"), std::string::npos) << outcome.stderr_text;
}

TEST(ValidInput, EdgeCasesLoadWithExitCode0) {
  char dir[] = "/tmp/sparsetune_valid_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"empty.mtx", "%%MatrixMarket matrix coordinate real general\n4 3 0\n"},
      {"one.mtx", "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 -2.5\n"},
      {"pattern.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n1 1\n3 1\n"},
      {"crlf.mtx", "%%MatrixMarket matrix coordinate real general\r\n% c\r\n2 2 1\r\n2 1 3\r\n"},
      {"tensor.tns", "# c\n1 2 3 1.5\n2 1 1 2\n"},
  };
  for (const auto& [name, text] : files) {
    SCOPED_TRACE(name);
    const std::string path = std::string(dir) + "/" + name;
    { std::ofstream(path, std::ios::binary) << text; }
    const Outcome outcome = RunInfo(path);
    EXPECT_EQ(outcome.exit_code, 0) << outcome.stderr_text;
    EXPECT_EQ(outcome.stderr_text, "");
    unlink(path.c_str());
  }
  rmdir(dir);
}

}  // namespace
