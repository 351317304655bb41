// Runs the real binary on every malformed input in tests/data/bad_inputs and checks the
// contract: exit code 2 and one stderr line naming the file, the line and the cause.

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

namespace {

const std::string kBadInputs = std::string(SPARSETUNE_SOURCE_DIR) + "/tests/data/bad_inputs";

struct Outcome {
  int exit_code = -1;
  std::string stderr_text;
};

// Runs `sparsetune info path` with stdout discarded and stderr captured.
Outcome RunInfo(const std::string& path) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  std::string binary = SPARSETUNE_BINARY;
  std::string command = "info";
  std::string file = path;
  char* argv[] = {binary.data(), command.data(), file.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  Outcome outcome;
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(pipe_fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    outcome.stderr_text.append(buffer, static_cast<size_t>(got));
  }
  close(pipe_fds[0]);
  if (spawned != 0) return outcome;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
