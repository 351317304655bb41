// ScheduleLimits: what any schedule may hold, checked where schedules come in (ParseScheduleText,
// Schedule::FromJson) and again by lowering for schedules built in code; trees of any depth
// are copied and released without recursion.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"

namespace sparsetune {
namespace {

using nlohmann::json;

std::string Refusal(const std::string& text) {
  try {
    ParseScheduleText(text, "s.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string Spmv(const std::string& extra) {
  return R"({"loop_order": ["i", "k"], "format": ["i:U", "k:C"])" + extra + "}";
}

TEST(ScheduleLimits, EveryIntegerIsBoundedAndNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Spmv(R"(, "parallel": {"index": "i", "chunk": 2147483648})"),
       "s.json: parallel chunk is 2147483648; it must be an integer from 1 to 2147483647"},
      {Spmv(R"(, "parallel": {"index": "i", "chunk": -9223372036854775808})"),
       "parallel chunk is -9223372036854775808"},
      {Spmv(R"(, "splits": {"i": 2147483648})"), "split of i is 2147483648"},
      {Spmv(R"(, "splits": {"k": 18446744073709551615})"), "split of k is 18446744073709551615"},
      {Spmv(R"(, "splits": {"k": 1e18})"), "split of k must be an integer"},
      {Spmv(R"(, "parallel": {"index": "i", "threads": 4097})"), "parallel threads is 4097"},
      {Spmv(R"(, "unroll": 4294967297)"), "\"unroll\" must be an integer from 1 to 16"},
      {Spmv(R"(, "format": ["i:U", "k:G65"])"), "a grouped level is G2 to G64"},
      {R"({"loop_order": ["i", "k"],
          "format": ["i:U", "k:C"],
          "splits": {"i": 1e400}})",
       "s.json:3: splits.i: number '1e400' is out of range"},
      {R"({"loop_order": ["i", "k"], "format": ["i:U", "k:C"], "splits": {"i": -1e400}})",
       "splits.i: number '-1e400' is out of range"},
      {R"({"loop_order": ["i", "k"],
          "format": ["i:U" "k:C"]})",
       "s.json:2: invalid JSON: format[0]: syntax error"},
  };
  for (const auto& [text, cause] : cases) {
    const std::string message = Refusal(text);
    EXPECT_NE(message.find(cause), std::string::npos)
        << text << "\n  gave: " << message << "\n  want: " << cause;
  }
  // The bounds themselves are fine.
  EXPECT_EQ(Refusal(Spmv(R"(, "parallel": {"index": "i", "chunk": 2147483647, "threads": 4096},
      "splits": {"i": 2147483647})")),
            "");
}

TEST(ScheduleLimits, StructureIsBounded) {
  std::string order = "\"i\"";
  for (int k = 1; k < 65; ++k) order += ", \"i\"";
  EXPECT_NE(Refusal(R"({"loop_order": [)" + order + R"(], "format": ["i:U", "k:C"]})")
                .find("\"loop_order\" has 65 entries; the limit is 64"),
            std::string::npos);
  // Where nodes: 16 levels read, 17 do not.
  auto nested = [](int depth) {
    std::string tree = R"J({"loops": ["i"], "compute": "y(i) += A(i,k) * x(k)"})J";
    for (int d = 0; d < depth; ++d)
      tree = R"({"loops": [], "where": {"temp": "t", "producer": {"loops": [], )"
             R"J("compute": "t += A(i,k)"}, "consumer": )J" +
             tree + "}}";
    return R"({"tree": )" + tree + R"(, "format": ["i:U", "k:C"]})";
  };
  EXPECT_EQ(Refusal(nested(16)), "");
  EXPECT_NE(Refusal(nested(17)).find("where nodes nest deeper than 16 levels"), std::string::npos);
  // JSON nesting is refused by the parser, before any tree is built.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_NE(Refusal(deep).find("JSON nested deeper than 80 levels"), std::string::npos);
  EXPECT_NE(Refusal(std::string(2 << 20, ' ')).find("over the limit of 1048576"),
            std::string::npos);
  std::string long_name(65, 'v');
  EXPECT_NE(Refusal(Spmv(R"(, "parallel": ")" + long_name + "\"")).find("is not a name of 1 to 64"),
            std::string::npos);
}

// A loop order of 500,000 entries built as JSON (not text) is refused by FromJson too.
TEST(ScheduleLimits, FromJsonChecksTheSameBounds) {
  json j = {{"format", {"i:U", "k:C"}}, {"loop_order", json::array()}};
  for (int k = 0; k < 500000; ++k) j["loop_order"].push_back("i");
  try {
    Schedule::FromJson(j, "built");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"loop_order\" has 500000 entries"), std::string::npos)
        << e.what();
  }
}

// Schedules built in code skip FromJson; lowering checks the same bounds.
TEST(ScheduleLimits, LoweringChecksSchedulesBuiltInCode) {
  const Expression e = KernelExpression("spmv");
  Schedule s = FixedCsrSchedule(e);
  s.chunk = int64_t(1) << 31;
  LowerOutcome outcome = Lower(e, s);
  EXPECT_EQ(outcome.nest, nullptr);
  EXPECT_NE(outcome.error.find("parallel chunk is 2147483648"), std::string::npos) << outcome.error;
  s = FixedCsrSchedule(e);
  s.splits["i"] = INT64_MAX;
  outcome = Lower(e, s);
  EXPECT_EQ(outcome.nest, nullptr);
  EXPECT_NE(outcome.error.find("split of i is 9223372036854775807"), std::string::npos)
      << outcome.error;
  s = FixedCsrSchedule(e);
  s.root.loops.assign(100, "i");
  outcome = Lower(e, s);
  EXPECT_EQ(outcome.nest, nullptr);
  EXPECT_NE(outcome.error.find("a section has 100 loops; the limit is 64"), std::string::npos)
      << outcome.error;
}

// A tree far deeper than any stack: copied, checked and released without recursion.
TEST(ScheduleLimits, DeepTreesAreCopiedAndReleasedIteratively) {
  constexpr int kDepth = 1000000;
  auto schedule = std::make_unique<Schedule>();
  ScheduleNode* node = &schedule->root;
  for (int d = 0; d < kDepth; ++d) {
    node->temp = "t";
    node->producer = std::make_unique<ScheduleNode>();
    node->consumer = std::make_unique<ScheduleNode>();
    node = node->consumer.get();
  }
  EXPECT_NE(schedule->LimitViolation().find("where nodes nest deeper than 16"), std::string::npos);
  {
    const Schedule copy = *schedule;  // Clone
    int depth = 0;
    for (const ScheduleNode* n = &copy.root; n->consumer; n = n->consumer.get()) ++depth;
    EXPECT_EQ(depth, kDepth);
  }
  schedule.reset();  // the destructor
}

// Input text quoted in a refusal is escaped: a newline or a broken UTF-8 byte in a level name
// (found by fuzz_schedule_json) once split the message over lines.
TEST(ScheduleLimits, QuotedInputKeepsTheMessageOnOneLine) {
  const std::string newline =
      Refusal(R"({"loop_order": ["i", "k"], "format": ["i:nn\nnU", "k:C"]})");
  EXPECT_EQ(newline.find('\n'), std::string::npos) << newline;
  EXPECT_NE(newline.find(R"("nn\nnU")"), std::string::npos) << newline;
  const std::string bytes =
      Refusal("{\"loop_order\": [\"i\", \"k\"], \"format\": [\"i:\xff\x01U\", \"k:C\"]}");
  EXPECT_FALSE(bytes.empty());
  EXPECT_EQ(bytes.find('\n'), std::string::npos) << bytes;
  // A syntax error inside an object whose key holds a newline: the key is in the path named.
  const std::string syntax = Refusal(R"({"loop_order": ["i", "k"], "a\nb": 1 "c"})");
  EXPECT_NE(syntax.find("invalid JSON"), std::string::npos) << syntax;
  EXPECT_EQ(syntax.find('\n'), std::string::npos) << syntax;
}

}  // namespace
}  // namespace sparsetune
