// Hostile schedules, streams, sizes and options (tests/data/hostile/): each ends with exit code
// 2 and a one-line message naming the file or option, the field and the cause, within bounded
// time and memory, and nothing is stored. Large inputs are written by make_large.sh at test
// time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::RunCli;
using testing::TempDir;

const std::string kHostile = std::string(SPARSETUNE_SOURCE_DIR) + "/tests/data/hostile/";

const std::string kMatrix =
    "%%MatrixMarket matrix coordinate real general\n"
    "6 5 9\n1 1 1.5\n1 4 2\n2 2 -1\n3 1 4\n3 5 0.5\n4 3 3\n5 5 -2\n6 1 1\n6 4 2.5\n";

// Address-space limit for runs that must stay small (the binary alone maps some 100 MB).
constexpr int64_t kSmallMb = 1024;

// The large inputs, written once per test process and removed when it exits.
const std::string& Large() {
  static const TempDir dir;
  static const std::string path = [] {
    const std::string out = dir.path() + "/large";
    const std::string command = "bash '" + kHostile + "make_large.sh' '" + out + "'";
    if (std::system(command.c_str()) != 0) ADD_FAILURE() << "make_large.sh failed";
    return out + "/";
  }();
  return path;
}

std::vector<std::string> Env(const TempDir& dir) {
  return {"SPARSETUNE_CACHE=" + dir.path() + "/cache", "SPARSETUNE_DB=" + dir.path() + "/t.db"};
}

void ExpectRefused(const CliResult& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  // The error is one line (a progress line may come before it).
  const size_t error = r.err.find("sparsetune: error: ");
  ASSERT_NE(error, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n', error), r.err.size() - 1) << r.err;
  for (const auto& part : parts) EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
}

double SecondsOf(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- schedules ------------------------------------------------------------------------------

struct ScheduleCase {
  std::string file;  // under tests/data/hostile/, or "large:" and a make_large.sh output
  std::vector<std::string> message;
};

class HostileSchedule : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(HostileSchedule, IsRefusedBeforeAnythingIsCompiled) {
  const ScheduleCase& c = GetParam();
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  const std::string path =
      c.file.rfind("large:", 0) == 0 ? Large() + c.file.substr(6) : kHostile + c.file;
  CliResult r;
  const double seconds = SecondsOf([&] {
    r = RunCli({"run", m, "--kernel", "spmv", "--schedule", path}, Env(dir), kSmallMb);
  });
  std::vector<std::string> parts = c.message;
  parts.push_back(path);
  ExpectRefused(r, parts);
  EXPECT_LT(seconds, 10);
  EXPECT_FALSE(fs::exists(dir.path() + "/cache/jit")) << "something was compiled";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HostileSchedule,
    ::testing::Values(
        // Generated code holds the chunk in an int: 2^31 crashed or spun.
        ScheduleCase{"chunk_2p31.json", {"parallel chunk is 2147483648", "from 1 to 2147483647"}},
        // Near INT64_MAX, Pack's sizes overflowed and corrupted the heap.
        ScheduleCase{"split_int64.json",
                     {"split of i is 9223372036854775000", "from 1 to 2147483647"}},
        ScheduleCase{"split_2p64.json", {"split of i is 18446744073709551615"}},
        // Was a raw JSON exception with exit code 3.
        ScheduleCase{"split_1e400.json", {":2: splits.i: number '1e400' is out of range"}},
        ScheduleCase{"where_depth_17.json", {"where nodes nest deeper than 16 levels"}},
        ScheduleCase{"loop_order_65.json", {"\"loop_order\" has 65 entries; the limit is 64"}},
        // 5,000 levels took 390 MB; 50,000 ran out of stack.
        ScheduleCase{"large:where_5000.json", {"JSON nested deeper than 80 levels"}},
        // 500,000 loops overflowed the stack in a recursive destructor.
        ScheduleCase{"large:loop_order_500k.json", {"longer than 1048576 bytes"}},
        ScheduleCase{"large:loop_order_100.json", {"\"loop_order\" has 100 entries"}},
        ScheduleCase{"large:json_depth_100k.json", {"JSON nested deeper than 80 levels"}}),
    [](const ::testing::TestParamInfo<ScheduleCase>& info) {
      std::string name = info.param.file.substr(info.param.file.rfind(':') + 1);
      name = name.substr(0, name.find('.'));
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(HostileSchedule, TheLargestChunkAndSplitStillRun) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  const std::string s = dir.File("s.json", R"({"splits": {"i": 2147483647},
      "loop_order": ["i1", "k", "i0"], "format": ["i1:U", "k:C", "i0:C"],
      "parallel": {"index": "i1", "chunk": 2147483647, "threads": 2}})");
  for (const char* mode : {"--verify", "--baked"}) {
    const CliResult r =
        RunCli({"run", m, "--kernel", "spmv", "--schedule", s, mode, "--json"}, Env(dir));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(nlohmann::json::parse(r.out)["verified"].get<bool>()) << mode;
  }
}

TEST(HostileSchedule, AScheduleStreamIsReadUpToItsLimit) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  ExpectRefused(RunCli({"run", m, "-k", "spmv", "-s", "/dev/zero"}, Env(dir), kSmallMb),
                {"/dev/zero: longer than 1048576 bytes"});
  ExpectRefused(RunCli({"run", m, "-k", "spmv", "-s", dir.path()}, Env(dir)), {"is a directory"});
}

// ---- streams and sizes ---------------------------------------------------------------------

TEST(HostileStream, DevicesAreRefusedAtOnce) {
  for (const char* device : {"/dev/zero", "/dev/urandom"}) {
    CliResult r;
    const double seconds = SecondsOf([&] { r = RunCli({"info", device}, {}, kSmallMb); });
    ExpectRefused(r, {device, "is a character device, not a file"});
    EXPECT_LT(seconds, 10);
  }
}

// Feeds `bytes` (repeated until the reader leaves) into a named pipe while `run` reads it.
CliResult ThroughFifo(const TempDir& dir, const std::string& bytes, bool repeat,
                      const std::function<CliResult(const std::string&)>& run) {
  const std::string fifo = dir.path() + "/stream.mtx";
  EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ::signal(SIGPIPE, SIG_IGN);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    do {
      size_t done = 0;
      while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) {
          ::close(fd);
          return;
        }
        done += size_t(n);
      }
    } while (repeat);
    ::close(fd);
  });
  CliResult r = run(fifo);
  writer.join();
  return r;
}

TEST(HostileStream, APipeOfZerosIsRefusedAsBinaryAtItsFirstBytes) {
  TempDir dir;
  const CliResult r = ThroughFifo(dir, std::string(1 << 16, '\0'), true, [&](const std::string& f) {
    return RunCli({"info", f}, {}, kSmallMb);
  });
  ExpectRefused(r, {"binary data (a NUL byte at offset 0)"});
}

TEST(HostileStream, AnEndlessTextPipeStopsAtTheInputLimit) {
  TempDir dir;
  std::string text;
  while (text.size() < (1 << 16)) text += "1 1 1.0\n";
  const CliResult r = ThroughFifo(dir, text, true, [&](const std::string& f) {
    return RunCli({"info", f}, {"SPARSETUNE_MAX_INPUT_MB=4"}, kSmallMb);
  });
  ExpectRefused(r, {"the stream holds more than 4 MiB", "SPARSETUNE_MAX_INPUT_MB"});
}

TEST(HostileStream, APipeOfAMatrixIsRead) {
  TempDir dir;
  const CliResult r = ThroughFifo(dir, kMatrix, false, [&](const std::string& f) {
    return RunCli({"info", f, "--json"}, {}, kSmallMb);
  });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["nnz"], 9);
}

TEST(HostileStream, AGzipBombStopsEarly) {
  CliResult r;
  const double seconds = SecondsOf([&] {
    r = RunCli({"info", Large() + "bomb.mtx.gz"}, {}, kSmallMb);
  });
  ExpectRefused(
      r, {"bomb.mtx.gz", "inflates to over 200 times its size", "refused as a decompression bomb"});
  EXPECT_LT(seconds, 20);
}

TEST(HostileStream, AMeasurementsFileBombStopsEarly) {
  TempDir dir;
  CliResult r;
  const double seconds = SecondsOf([&] {
    r = RunCli({"db", "import", "--db", dir.path() + "/t.db", Large() + "bomb.jsonl.gz"}, {},
               kSmallMb);
  });
  ExpectRefused(r, {"bomb.jsonl.gz", "refused as a decompression bomb"});
  EXPECT_LT(seconds, 20);
  const CliResult stats = RunCli({"db", "stats", "--db", dir.path() + "/t.db", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["measurements"], 0);
}

TEST(HostileSize, DeclaredRowsDoNotDecideMemory) {
  // 2^31 - 1 rows and one entry: statistics follow the entries (this needed over 16 GB).
  const CliResult r = RunCli({"info", kHostile + "huge_rows.mtx", "--json"}, {}, kSmallMb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rows"], 2147483647);
  EXPECT_EQ(j["nnz"], 1);
  EXPECT_EQ(j["stats"]["empty_rows"], 2147483646);
  EXPECT_EQ(j["stats"]["nnz"], 1);
}

TEST(HostileSize, ARunBeyondThisMachineIsRefusedUpFrontSayingWhatItNeeds) {
  TempDir dir;
  for (const char* file : {"huge_rows.mtx", "tall.mtx"}) {
    for (const char* command : {"run", "tune"}) {
      CliResult r;
      const double seconds = SecondsOf([&] {
        r = RunCli({command, kHostile + file, "--kernel", "spmv"}, Env(dir), 4096);
      });
      ExpectRefused(r, {file, "a run on this operand needs at least", " GB (",
                        "are available to this process"});
      EXPECT_LT(seconds, 60) << command << " " << file;
    }
  }
  // Refused before the database was opened: nothing stored.
  EXPECT_FALSE(fs::exists(dir.path() + "/t.db"));
}

TEST(HostileSize, APackingPastTheCapNamesAPositiveCount) {
  // Two U levels of a million each: their product is reported as it is, never as an overflowed
  // negative count.
  TempDir dir;
  const std::string m = dir.File("m.mtx",
                                 "%%MatrixMarket matrix coordinate real general\n"
                                 "1000000 1000000 1\n1 1 1.0\n");
  const std::string s = dir.File("s.json", R"({"loop_order": ["i", "k"],
      "format": ["i:U", "k:U"], "parallel": null})");
  const CliResult r = RunCli({"run", m, "-k", "spmv", "-s", s}, Env(dir), kSmallMb);
  ExpectRefused(r, {"would hold 1000000000000 positions, over the padding cap"});
}

// ---- the database path ----------------------------------------------------------------------

TEST(HostileDatabase, SqliteSpecialNamesAreRefused) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  const fs::path before = fs::current_path();
  fs::current_path(dir.path());
  for (const std::string name : {":memory:", "file:x.db?mode=memory", "file:tuned.db"}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"tune", m, "-k", "spmv", "--db", name},
          std::vector<std::string>{"query", m, "-k", "spmv", "--db", name},
          std::vector<std::string>{"db", "stats", "--db", name}}) {
      ExpectRefused(RunCli(args, Env(dir)),
                    {name, "the database must be a file path", "./" + name});
    }
  }
  // Nothing was created for them.
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "m.mtx" || name == "cache") << name;
  }
  fs::current_path(before);
}

// ---- options ------------------------------------------------------------------------------

TEST(HostileOptions, ThreadCountsOutsideTheirRangeAreRefused) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  for (const char* command : {"run", "bench"}) {
    for (const char* threads : {"10000", "-1", "two"}) {
      const CliResult r = RunCli({command, m, "-k", "spmv", "--threads", threads}, Env(dir));
      EXPECT_EQ(r.exit_code, 2) << command << " " << threads << ": " << r.err;
      EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("threads must be a whole number from 0 (all) to"), std::string::npos)
          << r.err;
    }
  }
}

TEST(HostileOptions, MillisecondsMustBeFiniteAndPositive) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  for (const char* command : {"tune", "batch", "collect"}) {
    for (const char* ms : {"nan", "inf", "-1", "0", "1e400"}) {
      const CliResult r = RunCli({command, m, "-k", "spmv", "--max-ms", ms}, Env(dir));
      EXPECT_EQ(r.exit_code, 2) << command << " " << ms << ": " << r.err;
      EXPECT_NE(r.err.find("--max-ms"), std::string::npos) << r.err;
    }
  }
  EXPECT_FALSE(fs::exists(dir.path() + "/t.db"));
}

TEST(HostileOptions, CandidateCountsAreBounded) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  ExpectRefused(RunCli({"tune", m, "-k", "spmv", "--samples", "2000000000"}, Env(dir)),
                {"--samples must be from 0 to 100000"});
  ExpectRefused(RunCli({"tune", m, "-k", "spmv", "--top-k", "1000000"}, Env(dir)),
                {"--top-k must be from 1 to 10000"});
  ExpectRefused(RunCli({"tune", m, "-k", "spmv", "--search-ef", "0"}, Env(dir)),
                {"--search-ef must be from 1 to 100000"});
  EXPECT_FALSE(fs::exists(dir.path() + "/t.db"));
}

TEST(HostileOptions, EmitAtAnExistingFileIsRefusedBeforeTuning) {
  TempDir dir;
  const std::string m = dir.File("m.mtx", kMatrix);
  const std::string file = dir.File("out", "not a directory");
  CliResult r;
  const double seconds = SecondsOf([&] {
    r = RunCli({"tune", m, "-k", "spmv", "--no-model", "--emit", file}, Env(dir));
  });
  ExpectRefused(r, {file, "--emit needs a directory"});
  EXPECT_LT(seconds, 5);  // nothing was measured
  // Nothing stored: the database was not even opened.
  EXPECT_FALSE(fs::exists(dir.path() + "/t.db"));
  ExpectRefused(RunCli({"query", m, "-k", "spmv", "--emit", file}, Env(dir)),
                {file, "--emit needs a directory"});
}

}  // namespace
}  // namespace sparsetune
