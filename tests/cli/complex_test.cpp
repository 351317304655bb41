// Complex values as a user meets them: a complex Matrix Market file is tuned with --dtype c64,
// stored apart from its f32 winner, queried and emitted, and benched beside the contenders
// that take complex values, every one verified; under f32 the same file says what it leaves
// out.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace sparsetune {
namespace {

using testing::CliResult;
using testing::RunCli;
using testing::TempDir;

// A 120 x 120 complex matrix with a few entries per row, as Matrix Market text.
std::string ComplexMatrixText() {
  std::mt19937_64 rng(5);
  std::ostringstream entries;
  int count = 0;
  for (int i = 1; i <= 120; ++i) {
    for (int e = 0; e < 5; ++e) {
      const int j = 1 + int(rng() % 120);
      entries << i << " " << j << " " << double(int(rng() % 9) - 4) / 4 << " "
              << double(int(rng() % 7) - 3) / 8 << "\n";
      ++count;
    }
  }
  return "%%MatrixMarket matrix coordinate complex general\n120 120 " + std::to_string(count) +
         "\n" + entries.str();
}

TEST(Complex, TuneQueryEmitAndBenchWithComplexValues) {
  TempDir dir;
  const std::string matrix = dir.File("z.mtx", ComplexMatrixText());
  const std::string db = dir.File("t.db");
  const std::vector<std::string> quick = {"--no-model", "--samples", "2", "--orderings", "none"};

  std::vector<std::string> tune = {"tune", matrix, "--kernel", "spmv",  "--dtype",
                                   "c64",  "--db", db,         "--json"};
  tune.insert(tune.end(), quick.begin(), quick.end());
  CliResult r = RunCli(tune);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json tuned = nlohmann::json::parse(r.out);
  EXPECT_GT(tuned["winner"]["time_ms"].get<double>(), 0);
  EXPECT_EQ(r.err.find("real parts"), std::string::npos) << r.err;

  // The complex winner is stored under c64 only.
  r = RunCli({"query", matrix, "--kernel", "spmv", "--dtype", "c64", "--db", db});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunCli({"query", matrix, "--kernel", "spmv", "--dtype", "f32", "--db", db});
  EXPECT_EQ(r.exit_code, 1) << r.out;

  // Under f32 the imaginary parts are left out, and the user is told.
  std::vector<std::string> tune_real = {"tune", matrix, "--kernel", "spmv", "--db", db, "--json"};
  tune_real.insert(tune_real.end(), quick.begin(), quick.end());
  r = RunCli(tune_real);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("f32 kernels use the real parts"), std::string::npos) << r.err;

  // batch says so too, on the matrix's line.
  r = RunCli({"batch", dir.path(), "--kernel", "spmv", "--db", dir.File("b.db"), "--no-model",
              "--samples", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("z: tuned"), std::string::npos) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("f32 kernels use the real parts"), std::string::npos)
      << r.out << r.err;

  // The emitted kernel declares complex values for C++ and C alike.
  const std::string emitted = dir.path() + "/emitted";
  r = RunCli(
      {"query", matrix, "--kernel", "spmv", "--dtype", "c64", "--db", db, "--emit", emitted});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream header(emitted + "/sparsetune_spmv.h");
  const std::string text((std::istreambuf_iterator<char>(header)), {});
  EXPECT_NE(text.find("typedef std::complex<float> sparsetune_spmv_value;"), std::string::npos);
  EXPECT_NE(text.find("typedef float _Complex sparsetune_spmv_value;"), std::string::npos);

  // Every contender that takes complex values runs and is verified.
  r = RunCli({"bench", matrix, "--kernel", "spmv", "--dtype", "c64", "--db", db, "--min-ms", "1",
              "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json bench = nlohmann::json::parse(r.out);
  EXPECT_EQ(bench["dtype"], "c64");
  std::set<std::string> names;
  for (const auto& c : bench["results"]) {
    names.insert(c["name"].get<std::string>());
    EXPECT_TRUE(c["verified"].get<bool>()) << c["name"];
  }
  for (const char* name : {"fixed_csr", "tuned", "hand", "eigen", "librsb", "graphblas"})
    EXPECT_TRUE(names.count(name)) << name;
}

}  // namespace
}  // namespace sparsetune
