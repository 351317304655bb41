// A file that another process truncates while it is read is bad input (exit 2, the file named),
// never a SIGBUS: large files are mapped, and the pages past a truncated file's new end fault.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "base/errors.hpp"
#include "io/read.hpp"
#include "io/read_internal.hpp"
#include "io_test_util.hpp"
#include "support/process.hpp"

namespace sparsetune {
namespace {

using testing::TempDir;

// A Matrix Market file of at least `bytes` bytes: above 16 MB the reader maps it.
std::string LargeMatrixMarket(size_t bytes, int64_t* entries_out = nullptr) {
  std::string body;
  body.reserve(bytes + 64);
  int64_t entries = 0;
  while (body.size() < bytes) {
    body += std::to_string(entries % 4000 + 1) + " " + std::to_string(entries / 4000 + 1) +
            " 0.5078125\n";
    ++entries;
  }
  if (entries_out) *entries_out = entries;
  return "%%MatrixMarket matrix coordinate real general\n4000 " +
         std::to_string(entries / 4000 + 1) + " " + std::to_string(entries) + "\n" + body;
}

TEST(MappedFile, PagesLostToTruncationReadAsChangedNotSigbus) {
  TempDir dir;
  const std::string path = dir.Write("big.mtx", LargeMatrixMarket(size_t(20) << 20));
  io_internal::Bytes bytes = io_internal::LoadFile(path);
  ASSERT_GT(bytes.size(), size_t(16) << 20);
  EXPECT_FALSE(bytes.changed());
  ASSERT_EQ(::truncate(path.c_str(), 4096), 0);
  // Reading every page of the mapping: those past the new end would raise SIGBUS.
  const std::string_view text = bytes.view();
  const int64_t lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_GT(lines, 0);
  EXPECT_TRUE(bytes.changed());
  try {
    io_internal::FailIfChanged(bytes, path);
    ADD_FAILURE() << "no error for a truncated file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("changed"), std::string::npos) << e.what();
  }
  // Whatever the parser makes of the zeros, the change is what gets reported.
  try {
    io_internal::ParseUnchanged(bytes, path, [&] {
      return io_internal::ParseMatrixMarket(text, path, nullptr, io_internal::ParseOptions());
    });
    ADD_FAILURE() << "the damaged text parsed without an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("changed"), std::string::npos) << e.what();
  }
}

TEST(MappedFile, AnUntouchedFileIsNotChanged) {
  TempDir dir;
  int64_t entries = 0;
  const std::string path = dir.Write("big.mtx", LargeMatrixMarket(size_t(17) << 20, &entries));
  const CooTensor t = ReadTensorFile(path);
  EXPECT_EQ(t.nnz(), entries);
  io_internal::Bytes bytes = io_internal::LoadFile(path);
  const std::string_view text = bytes.view();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), entries + 2);
  EXPECT_FALSE(bytes.changed());
  EXPECT_NO_THROW(io_internal::FailIfChanged(bytes, path));
}

// True once process `pid` has `path` mapped.
bool Maps(pid_t pid, const std::string& path) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() >= path.size() &&
        line.compare(line.size() - path.size(), path.size(), path) == 0)
      return true;
  }
  return false;
}

TEST(MappedFile, TruncatedWhileTheCommandReadsItExitsTwo) {
  TempDir dir;
  const std::string path = dir.Track("race.mtx");
  const std::string err_path = dir.Track("err.txt");
  const std::string text = LargeMatrixMarket(size_t(64) << 20);
  int changed_reports = 0;
  // The command may finish reading before the truncation lands; a few attempts see it caught.
  for (int attempt = 0; attempt < 6 && changed_reports == 0; ++attempt) {
    { std::ofstream(path, std::ios::binary) << text; }
    const pid_t pid =
        sparsetune::testing::StartProcess({SPARSETUNE_BINARY, "info", path}, "/dev/null", err_path);
    ASSERT_GT(pid, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool truncated = false;
    int status = 0;
    for (;;) {
      if (waitpid(pid, &status, WNOHANG) == pid) break;
      if (!truncated && Maps(pid, path)) {
        ASSERT_EQ(::truncate(path.c_str(), 0), 0);
        truncated = true;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        FAIL() << "sparsetune info did not finish";
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const std::string err = sparsetune::testing::ReadText(err_path);
    ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status) << "\n" << err;
    const int code = WEXITSTATUS(status);
    if (!truncated) continue;  // finished before its mapping was seen
    ASSERT_TRUE(code == 0 || code == 2) << "exit " << code << ": " << err;
    if (code == 2) {
      EXPECT_NE(err.find(path), std::string::npos) << err;
      EXPECT_NE(err.find("changed"), std::string::npos) << err;
      EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
      ++changed_reports;
    }
  }
  EXPECT_GT(changed_reports, 0) << "no attempt truncated the file while it was parsed";
}

}  // namespace
}  // namespace sparsetune
