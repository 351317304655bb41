// The tensor writer and `sparsetune gen`, run as a real process.

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "io/read.hpp"
#include "io/write.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/generate.hpp"
#include "tensor/stats.hpp"

namespace sparsetune {
namespace {

class GenFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "sparsetune_gen_" + std::to_string(getpid()) + "_" + info->name();
    mkdir(dir_.c_str(), 0755);
  }
  void TearDown() override {
    for (const std::string& name : List()) std::remove((dir_ + "/" + name).c_str());
    rmdir(dir_.c_str());
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::vector<std::string> List() const {
    std::vector<std::string> names;
    if (DIR* d = opendir(dir_.c_str())) {
      while (dirent* entry = readdir(d)) {
        const std::string name = entry->d_name;
        if (name != "." && name != "..") names.push_back(name);
      }
      closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string dir_;
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ReadGz(const std::string& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  EXPECT_NE(gz, nullptr);
  std::string text;
  char buffer[1 << 16];
  int got;
  while ((got = gzread(gz, buffer, sizeof buffer)) > 0) text.append(buffer, got);
  gzclose(gz);
  return text;
}

CooTensor Small() {
  CooTensor t;
  t.Reset({3, 4});
  const int32_t a[2] = {0, 3}, b[2] = {2, 0}, c[2] = {2, 1};
  t.Append(a, 0.1);
  t.Append(b, -2.5e-300);
  t.Append(c, 1.0 / 3.0);
  return t;
}

// --- writer ---------------------------------------------------------------------------------

TEST_F(GenFiles, WritesMatrixMarketExactly) {
  WriteTensorFile(Small(), Path("a.mtx"));
  EXPECT_EQ(ReadText(Path("a.mtx")),
            "%%MatrixMarket matrix coordinate real general\n"
            "3 4 3\n"
            "1 4 0.1\n"
            "3 1 -2.5e-300\n"
            "3 2 0.3333333333333333\n");
  CooTensor pattern = Small();
  pattern.pattern_only = true;
  WriteTensorFile(pattern, Path("p.mtx"), "first line\nsecond line");
  EXPECT_EQ(ReadText(Path("p.mtx")),
            "%%MatrixMarket matrix coordinate pattern general\n"
            "% first line\n"
            "% second line\n"
            "3 4 3\n"
            "1 4\n"
            "3 1\n"
            "3 2\n");
  // No temporary files are left behind.
  EXPECT_EQ(List(), (std::vector<std::string>{"a.mtx", "p.mtx"}));
}

TEST_F(GenFiles, WritesFrosttForTensorsAndTnsNames) {
  CooTensor t;
  t.Reset({2, 3, 4});
  const int32_t a[3] = {0, 2, 3}, b[3] = {1, 0, 0};
  t.Append(a, 4.0);
  t.Append(b, -0.125);
  WriteTensorFile(t, Path("t.tns"));
  EXPECT_EQ(ReadText(Path("t.tns")), "1 3 4 4\n2 1 1 -0.125\n");
  // A matrix under a .tns name is written as FROSTT too; pattern entries get value 1.
  CooTensor m = Small();
  m.pattern_only = true;
  WriteTensorFile(m, Path("m.tns"));
  EXPECT_EQ(ReadText(Path("m.tns")), "1 4 1\n3 1 1\n3 2 1\n");
  EXPECT_THROW(WriteTensorFile(t, Path("t.mtx")), InputError);
}

TEST_F(GenFiles, GzipOutputMatchesPlainText) {
  UniformParams p;
  p.rows = p.cols = 2000;
  p.nnz = 100000;  // several formatting blocks
  const CooTensor t = GenerateUniform(p);
  WriteTensorFile(t, Path("u.mtx"));
  WriteTensorFile(t, Path("u.mtx.gz"));
  const std::string plain = ReadText(Path("u.mtx"));
  EXPECT_EQ(ReadGz(Path("u.mtx.gz")), plain);
  EXPECT_LT(ReadText(Path("u.mtx.gz")).size(), plain.size() / 2);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), '\n'), 100000 + 2);
}

TEST_F(GenFiles, ReplacesExistingFileAndReportsBadPaths) {
  std::ofstream(Path("x.mtx")) << "old";
  WriteTensorFile(Small(), Path("x.mtx"));
  EXPECT_EQ(ReadText(Path("x.mtx")).substr(0, 14), "%%MatrixMarket");
  try {
    WriteTensorFile(Small(), Path("missing/dir/x.mtx"));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing/dir/x.mtx"), std::string::npos) << e.what();
  }
  EXPECT_THROW(WriteTensorFile(Small(), dir_ + "/"), InputError);
  EXPECT_EQ(List(), (std::vector<std::string>{"x.mtx"}));
}

TEST_F(GenFiles, FailedWriteIsInternalErrorAndLeavesNoFile) {
  // A file size limit makes write() fail as a full disk would (EFBIG instead of ENOSPC); the
  // ignored SIGXFSZ survives exec, so the process sees the error instead of dying.
  const std::string command =
      "sh -c \"trap '' XFSZ; ulimit -f 64; exec " + std::string(SPARSETUNE_BINARY) +
      " gen uniform --rows 1000 --nnz 100k -o " + Path("big.mtx") + "\" 2>" + Path("err.txt");
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  const std::string err = ReadText(Path("err.txt"));
  EXPECT_NE(err.find(Path("big.mtx")), std::string::npos) << err;
  EXPECT_EQ(List(), (std::vector<std::string>{"err.txt"}));
}

TEST_F(GenFiles, KilledWhileWritingLeavesNoFile) {
  const std::string out = Path("big.mtx");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(SPARSETUNE_BINARY, SPARSETUNE_BINARY, "gen", "uniform", "--rows", "1M", "--nnz", "5M",
          "-o", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for the temporary file, then interrupt the write.
  bool seen = false;
  for (int k = 0; k < 20000 && !seen; ++k) {
    for (const std::string& name : List()) seen = seen || name.rfind(".big.mtx.tmp", 0) == 0;
    if (!seen) usleep(1000);
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!seen || WIFEXITED(status)) GTEST_SKIP() << "the write finished before it was interrupted";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_EQ(List(), std::vector<std::string>{});
}

// Round trips need the readers.
TEST_F(GenFiles, RoundTripThroughReader) {
  struct Case {
    std::string name;
    CooTensor tensor;
  };
  std::vector<Case> cases;
  {
    PowerLawParams p;
    p.rows = 3000;
    p.cols = 2000;
    p.nnz = 40000;
    cases.push_back({"powerlaw.mtx", GeneratePowerLaw(p)});
    p.pattern = true;
    cases.push_back({"pattern.mtx.gz", GeneratePowerLaw(p)});
  }
  {
    StencilParams p;
    p.nx = p.ny = p.nz = 12;
    cases.push_back({"stencil.mtx", GenerateStencil3d(p)});
  }
  {
    TensorParams p;
    p.dims = {50, 40, 30};
    p.nnz = 20000;  // dense enough that every index of every mode occurs
    cases.push_back({"tensor.tns", GenerateTensorUniform(p)});
    cases.push_back({"tensor.tns.gz", GenerateTensorUniform(p)});
  }
  cases.push_back({"small.mtx", Small()});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WriteTensorFile(c.tensor, Path(c.name));
    const CooTensor back = ReadTensorFile(Path(c.name));
    EXPECT_EQ(back.dims, c.tensor.dims);
    EXPECT_EQ(PatternFingerprint(back), PatternFingerprint(c.tensor));
    EXPECT_EQ(back.values, c.tensor.values);  // exact: shortest round-trip text
    if (c.name.find(".mtx") != std::string::npos) {
      EXPECT_EQ(back.pattern_only, c.tensor.pattern_only);
    }
  }
}

// --- the command ----------------------------------------------------------------------------

struct GenRun {
  int code;
  std::string err;
};

GenRun Gen(const std::string& args, const std::string& dir) {
  const std::string err_path = dir + "/stderr.txt";
  const std::string command =
      std::string(SPARSETUNE_BINARY) + " gen " + args + " 2>" + err_path + " >/dev/null";
  const int status = std::system(command.c_str());
  GenRun run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadText(err_path)};
  std::remove(err_path.c_str());
  return run;
}

TEST_F(GenFiles, CliGeneratesDeterministicFiles) {
  const std::string base = "uniform --rows 2k --cols 1500 --nnz 30k -o ";
  GenRun r = Gen(base + Path("a.mtx"), dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("2000 x 1500"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nnz 30000"), std::string::npos) << r.err;
  ASSERT_EQ(Gen(base + Path("b.mtx") + " --seed 1", dir_).code, 0);
  ASSERT_EQ(Gen(base + Path("c.mtx") + " --seed 2", dir_).code, 0);
  const std::string a = ReadText(Path("a.mtx"));
  EXPECT_EQ(a.substr(0, a.find('\n')), "%%MatrixMarket matrix coordinate real general");
  EXPECT_NE(a.find("\n2000 1500 30000\n"), std::string::npos);
  EXPECT_EQ(a, ReadText(Path("b.mtx")));
  EXPECT_NE(a, ReadText(Path("c.mtx")));
  ASSERT_EQ(Gen(base + Path("p.mtx.gz") + " --pattern", dir_).code, 0);
  EXPECT_EQ(ReadGz(Path("p.mtx.gz")).substr(0, 48),
            "%%MatrixMarket matrix coordinate pattern general");
}

TEST_F(GenFiles, CliEveryKindRuns) {
  const std::vector<std::string> kinds = {
      "uniform --rows 100 --density 0.05",
      "powerlaw --rows 300 --cols 200 --nnz 2k --a 0.5 --b 0.2 --c 0.2 --shuffle",
      "banded --rows 500 --bandwidth 4 --fill 0.5",
      "blocked --rows 256 --cols 128 --block 8 --nblocks 20 --block-fill 0.75",
      "blocked --rows 256 --block 4 --nnz 1k",
      "stencil2d --nx 20 --ny 30",
      "stencil3d --nx 10 --ny 10 --nz 10",
      "diagonal-heavy --rows 1k --nnz 5k --diag-fraction 0.4 --offdiagonals 2",
      "dnn --rows 64 --cols 128 --density 0.1",
      "dnn --rows 64 --cols 128 --structure nm --nm 1:4",
      "dnn --rows 64 --cols 128 --density 0.2 --structure block --block 8",
  };
  int k = 0;
  for (const std::string& kind : kinds) {
    const std::string out = Path("k" + std::to_string(k++) + ".mtx");
    const GenRun r = Gen(kind + " -o " + out, dir_);
    EXPECT_EQ(r.code, 0) << kind << ": " << r.err;
    EXPECT_EQ(ReadText(out).substr(0, 14), "%%MatrixMarket") << kind;
  }
  const GenRun t =
      Gen("tensor3 powerlaw --dims 100,80,60 --nnz 5k --alpha 1.2 -o " + Path("t.tns"), dir_);
  EXPECT_EQ(t.code, 0) << t.err;
  const std::string tns = ReadText(Path("t.tns"));
  EXPECT_EQ(std::count(tns.begin(), tns.end(), '\n'), 5000);
  EXPECT_EQ(Gen("tensor3 uniform --dims 10x20x30 --nnz 100 -o " + Path("u.tns.gz"), dir_).code, 0);
  EXPECT_EQ(std::count(tns.begin(), tns.begin() + tns.find('\n'), ' '), 3);
}

TEST_F(GenFiles, CliBadOptionsExitTwo) {
  const std::string out = " -o " + Path("bad.mtx");
  const std::vector<std::string> bad = {
      "",                                               // no kind
      "nosuchkind" + out,                               // unknown kind
      "uniform --rows 10 --nnz 5",                      // no output
      "uniform --nnz 5" + out,                          // no rows
      "uniform --rows 10 --nnz 500" + out,              // nnz > rows * cols
      "uniform --rows 10X --nnz 5" + out,               // not a count
      "uniform --rows 0 --nnz 5" + out,                 // zero size
      "uniform --rows 3G --nnz 5" + out,                // beyond int32
      "uniform --rows 10 --nnz 5 --density 0.1" + out,  // both
      "uniform --rows 10" + out,                        // neither
      "uniform --rows 10 --nnz 0" + out,                // zero nnz
      "blocked --rows 16 --block 4 --nblocks 0" + out,  // zero blocks
      "uniform --rows 10 --density 2" + out,            // density out of range
      "uniform --rows 10 --nnz 5 --frobnicate" + out,   // unknown option
      "uniform --rows 10 --nnz 5 --seed -3" + out,      // negative seed
      "powerlaw --rows 10 --nnz 5 --a 0.9 --b 0.9" + out,
      "banded --rows 10 --bandwidth -1" + out,
      "banded --rows 2G --bandwidth 1M" + out,           // far more entries than memory holds
      "dnn --rows 2G --cols 2G --density 0.5" + out,
      "blocked --rows 16 --block 4" + out,
      "dnn --rows 10 --cols 10 --density 0.5 --structure diagonal" + out,
      "dnn --rows 10 --cols 10 --structure nm --nm 24" + out,
      "diagonal-heavy --rows 10 --nnz 5" + out,
      "tensor3 uniform --dims 10,10 --nnz 500" + out,
      "tensor3 --dims 10,10,10 --nnz 5" + out,
      "uniform --rows 10 --nnz 5 -o " + Path("no/such/dir/x.mtx"),
      "uniform --rows 10 --nnz 5 -o " + Path("x.mtx") + " extra",
  };
  for (const std::string& args : bad) {
    const GenRun r = Gen(args, dir_);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_FALSE(r.err.empty()) << args;
  }
  EXPECT_EQ(List(), std::vector<std::string>{});  // nothing written, no temporary files
}

TEST_F(GenFiles, CliHelpForEveryKind) {
  for (const char* kind : {"", "uniform", "powerlaw", "banded", "blocked", "stencil2d", "stencil3d",
                           "diagonal-heavy", "dnn", "resize", "tensor3", "tensor3 powerlaw"}) {
    const std::string command =
        std::string(SPARSETUNE_BINARY) + " gen " + kind + " --help > " + Path("help.txt") + " 2>&1";
    const int status = std::system(command.c_str());
    EXPECT_EQ(WEXITSTATUS(status), 0) << kind;
    EXPECT_NE(ReadText(Path("help.txt")).find("Usage"), std::string::npos) << kind;
  }
  const std::string command = std::string(SPARSETUNE_BINARY) + " gen resize --help";
  FILE* pipe = popen(command.c_str(), "r");
  std::string help;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) help.append(buffer, got);
  pclose(pipe);
  EXPECT_NE(help.find("diagonal"), std::string::npos);  // the method is documented
}

// Needs the readers: resizing reads a real file.
TEST_F(GenFiles, CliResizeKeepsBand) {
  ASSERT_EQ(Gen("banded --rows 400 --bandwidth 2 --pattern -o " + Path("band.mtx"), dir_).code, 0);
  const GenRun r =
      Gen("resize " + Path("band.mtx") + " --rows 4k --cols 4k -o " + Path("big.mtx"), dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  const CooTensor big = ReadTensorFile(Path("big.mtx"));
  EXPECT_EQ(big.dims, (std::vector<int64_t>{4000, 4000}));
  EXPECT_EQ(big.nnz(), (400 * 5 - 6) * 10);
  EXPECT_LE(ComputePatternStats(big).bandwidth, 30);
  EXPECT_EQ(
      Gen("resize " + Path("nothere.mtx") + " --rows 10 --cols 10 -o " + Path("x.mtx"), dir_).code,
      2);
}

}  // namespace
}  // namespace sparsetune
