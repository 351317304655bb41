// `sparsetune schedules` as a user drives it: JSON fields, sizes from a tensor file, and every
// kind of bad input refused with exit code 2 and its cause.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../cli/cli_support.hpp"

namespace sparsetune {
namespace {

using testing::RunCli;
using testing::TempDir;

TEST(SchedulesCommand, JsonHasTheContractFields) {
  auto r = RunCli({"schedules", "--kernel", "spmm_gemm", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["expression"], "A(i,l) = B(i,j) * C(j,k) * D(k,l)");
  ASSERT_EQ(j["stages"].size(), 6u);
  for (const auto& s : j["stages"]) {
    EXPECT_TRUE(s["name"].is_string());
    EXPECT_TRUE(s["count"].is_number_unsigned());
    EXPECT_GE(s["ms"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["stages"][0]["name"], "generated");
  ASSERT_FALSE(j["survivors"].empty());
  for (const auto& c : j["survivors"]) {
    EXPECT_TRUE(c["notation"].is_string());
    EXPECT_TRUE(c["time"].is_string());
    EXPECT_TRUE(c["memory"].is_string());
    EXPECT_TRUE(c["schedule"]["tree"].is_object());
    EXPECT_TRUE(c["schedule"]["format"].is_array());
  }
  const int chosen = j["chosen"].get<int>();
  ASSERT_GE(chosen, 0);
  ASSERT_LT(chosen, static_cast<int>(j["survivors"].size()));
  EXPECT_EQ(j["survivors"][chosen]["notation"],
            "i,k <t; j': t += B(i,j)*C(j,k) | l: A(i,l) += t*D(k,l)>");
  EXPECT_EQ(j["survivors"][chosen]["time"], "I*jpos*K + I*K*L");
}

TEST(SchedulesCommand, SizesComeFromTheTensorAndDense) {
  TempDir dir;
  const std::string m = dir.File("m.mtx",
                                 "%%MatrixMarket matrix coordinate real general\n"
                                 "6 5 8\n1 1 1\n1 4 2\n2 2 -1\n3 1 4\n3 5 1\n4 3 3\n6 1 1\n"
                                 "6 4 2\n");
  auto r = RunCli({"schedules", "--kernel", "spmm_gemm", "--tensor", m, "--dense", "k=32",
                   "--constraint", "k <= 64", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["sizes"]["i"], 6);
  EXPECT_EQ(j["sizes"]["j"], 5);
  EXPECT_DOUBLE_EQ(j["sizes"]["jpos"].get<double>(), 8.0 / 6);
  EXPECT_EQ(j["sizes"]["k"], 32);
  EXPECT_EQ(j["sizes"]["l"], 64);
  bool found = false;
  for (const auto& c : j["constraints"]) found |= c == "k <= 64";
  EXPECT_TRUE(found);

  auto text = RunCli({"schedules", "--kernel", "spmm_gemm", "--tensor", m});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("stage3_smt"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("chosen"), std::string::npos) << text.out;
}

TEST(SchedulesCommand, ExpressionsWork) {
  auto r = RunCli({"schedules", "--expr", "X(i,m) = S(i,j) * P(j,k) * Q(k,m)", "--sparse", "S",
                   "--dense", "k=8,m=8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["survivors"][j["chosen"].get<int>()]["notation"],
            "i,k <t; j': t += S(i,j)*P(j,k) | m: X(i,m) += t*Q(k,m)>");
}

TEST(SchedulesCommand, BadInputExitsWithTwoAndTheCause) {
  struct Case {
    std::vector<std::string> args;
    std::string cause;
  };
  const std::vector<Case> cases = {
      {{"--expr", "A(i) = B(i,i) * c(i)"}, "repeated"},
      {{"--expr", "A(i,l) = B(i,j) * C(j,l)", "--sparse", "Z"}, "not a tensor"},
      {{"--expr", "A(i,l) = B(i,j) * C(j,l)", "--sparse", "A"}, "the output"},
      {{"--expr", "A(i,l) = B(i,j) * B(j,l)"}, "appears twice"},
      {{"--kernel", "nope"}, "unknown kernel"},
      {{"--kernel", "spmm_gemm", "--constraint", "10*q < k"}, "unknown variable q"},
      {{"--kernel", "spmm_gemm", "--constraint", "10*j <"}, "column"},
      {{"--kernel", "spmm_gemm", "--constraint", "k < 10", "--constraint", "k > 20"},
       "contradictory"},
      {{"--kernel", "spmm_gemm", "--tensor", "/nonexistent/m.mtx"}, "m.mtx"},
      {{"--kernel", "spmm_gemm", "--dense", "q=4"}, "no index q"},
      {{"--kernel", "ttmc", "--tensor", std::string(SPARSETUNE_SOURCE_DIR) + "/README.md"}, ""},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"schedules"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << c.cause << "\n" << r.err;
    EXPECT_NE(r.err.find(c.cause), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace sparsetune
