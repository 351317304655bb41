// The schedule's JSON form: what the database, the CLI and the model exchange. Reading and
// writing it back gives the same canonical text (equal schedules hash equal), and malformed
// JSON is refused naming the field and the cause.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"

namespace sparsetune {
namespace {

using nlohmann::json;

Schedule Read(const json& j) {
  return Schedule::FromJson(j, "s.json");
}

// SparseAuto's fused SDDMM-SpMM schedule (the README's example).
constexpr const char* kFused = R"J({"tree": {"loops": ["i","j"], "where": {"temp": "t",
      "producer": {"loops": ["k"], "compute": "t += B(i,j) * C(i,k) * D(j,k)"},
      "consumer": {"loops": ["l"], "compute": "A(i,l) += t * E(j,l)"}}},
      "format": ["i:U","j:C"], "parallel": {"index": "i", "chunk": 16}})J";

// Canonical JSON survives FromJson(ToJson(.)) unchanged, and is a fixed point of itself.
void ExpectRoundTrip(const Schedule& s) {
  const std::string canonical = s.CanonicalJson();
  const Schedule back = Read(json::parse(canonical));
  EXPECT_EQ(back.CanonicalJson(), canonical);
  EXPECT_EQ(Read(s.ToJson()).CanonicalJson(), canonical);
  EXPECT_EQ(back.Summary(), [&] {
    Schedule c = s;
    c.Canonicalize();
    return c.Summary();
  }());
}

TEST(ScheduleJson, RoundTripsEveryField) {
  const json bcsr = {{"splits", {{"i", 4}, {"k", 8}}},
                     {"loop_order", {"i1", "k1", "i0", "k0"}},
                     {"format", {"i1:U", "k1:C", "i0:U", "k0:U"}},
                     {"parallel", {{"index", "i1"}, {"chunk", 32}, {"threads", 2}}},
                     {"unroll", 4},
                     {"narrow_coordinates", true},
                     {"transpose", {"x"}}};
  const Schedule s = Read(bcsr);
  EXPECT_EQ(s.splits, (std::map<std::string, int64_t>{{"i", 4}, {"k", 8}}));
  EXPECT_EQ(s.root.loops, (std::vector<std::string>{"i1", "k1", "i0", "k0"}));
  ASSERT_EQ(s.format.size(), 4u);
  EXPECT_EQ(s.format[1], std::make_pair(std::string("k1"), LevelKind::kCompressed));
  EXPECT_EQ(s.parallel, "i1");
  EXPECT_EQ(s.chunk, 32);
  EXPECT_EQ(s.threads, 2);
  EXPECT_EQ(s.unroll, 4);
  EXPECT_TRUE(s.narrow_coordinates);
  EXPECT_EQ(s.transposed, std::vector<std::string>{"x"});
  ExpectRoundTrip(s);
  // loop_order is shorthand for a tree of one section.
  EXPECT_EQ(s.ToJson()["tree"], json({{"loops", {"i1", "k1", "i0", "k0"}}}));

  const Schedule balanced = Read({{"loop_order", {"i", "k"}},
                                  {"format", {"i:U", "k:S"}},
                                  {"parallel", {{"index", "i"}, {"partition", "balanced"}}}});
  EXPECT_EQ(balanced.partition, Partition::kBalanced);
  EXPECT_EQ(balanced.format[1].second, LevelKind::kSliced);
  ExpectRoundTrip(balanced);

  // Every named kernel's default schedule, and SparseAuto's fused tree.
  for (const KernelDef& k : KernelLibrary())
    ExpectRoundTrip(FixedCsrSchedule(KernelExpression(k.name)));
  const json fused = json::parse(kFused);
  const Schedule tree = Read(fused);
  ASSERT_TRUE(tree.root.is_where());
  EXPECT_EQ(tree.root.temp, "t");
  EXPECT_EQ(tree.root.consumer->compute, "A(i,l) += t * E(j,l)");
  ExpectRoundTrip(tree);
  EXPECT_EQ(Read(tree.ToJson()).ToJson()["tree"], fused["tree"]);
}

TEST(ScheduleJson, CanonicalFormIsCompactSortedAndOmitsDefaults) {
  const Schedule csr = FixedCsrSchedule(KernelExpression("spmv"));
  EXPECT_EQ(csr.CanonicalJson(),
            R"({"format":["i:U","k:C"],"parallel":{"chunk":128,"index":"i","threads":0},)"
            R"("splits":{},"tree":{"loops":["i","k"]}})");
  // Equal schedules written differently have one canonical text: key order, the short forms
  // of "parallel", lower-case level letters and splits of 1.
  const std::string a = Read({{"format", {"i:u", "k:c"}},
                              {"loop_order", {"i", "k"}},
                              {"parallel", "i"},
                              {"comment", "ignored"}})
                            .CanonicalJson();
  const std::string b = Read({{"splits", {{"k", 1}}},
                              {"tree", {{"loops", {"i", "k1", "k0"}}}},
                              {"format", {"i:U", "k1:C", "k0:U"}},
                              {"parallel", {{"index", "i"}, {"chunk", 1}, {"threads", 0}}},
                              {"unroll", 1},
                              {"narrow_coordinates", false}})
                            .CanonicalJson();
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, R"({"format":["i:U","k:C"],"parallel":{"chunk":1,"index":"i","threads":0},)"
               R"("splits":{},"tree":{"loops":["i","k"]}})");
  // A balanced partition has no chunk to tell apart; a serial schedule no partition.
  const json balanced = {{"loop_order", {"i", "k"}},
                         {"format", {"i:U", "k:C"}},
                         {"parallel", {{"index", "i"}, {"chunk", 64}, {"partition", "balanced"}}}};
  json balanced_other = balanced;
  balanced_other["parallel"]["chunk"] = 7;
  EXPECT_EQ(Read(balanced).CanonicalJson(), Read(balanced_other).CanonicalJson());
  EXPECT_NE(Read(balanced).CanonicalJson().find(R"("partition":"balanced")"), std::string::npos);
  json serial = balanced;
  serial["parallel"] = nullptr;
  EXPECT_NE(Read(serial).CanonicalJson().find(R"("parallel":null)"), std::string::npos);
  EXPECT_EQ(Read(serial).CanonicalJson().find("partition"), std::string::npos);
  // A split of 1 on the parallel inner part leaves the schedule serial.
  const Schedule inner = Read({{"splits", {{"i", 1}}},
                               {"loop_order", {"i1", "i0", "k"}},
                               {"format", {"i1:U", "i0:U", "k:C"}},
                               {"parallel", "i0"}});
  Schedule c = inner;
  c.Canonicalize();
  EXPECT_TRUE(c.parallel.empty());
  EXPECT_EQ(c.root.loops, (std::vector<std::string>{"i", "k"}));
}

TEST(ScheduleJson, SummaryIsOneReadableLine) {
  const Schedule s = Read({{"splits", {{"i", 4}}},
                           {"loop_order", {"i1", "k", "i0"}},
                           {"format", {"i1:U", "k:S", "i0:U"}},
                           {"parallel", {{"index", "i1"}, {"chunk", 32}, {"threads", 2}}},
                           {"unroll", 2},
                           {"narrow_coordinates", true}});
  EXPECT_EQ(s.Summary(),
            "i1,k,i0 | i1:U k:S i0:U i/4 | par i1 chunk 32 threads 2 | unroll 2 | narrow");
}

// Malformed schedules: the message starts with the source's name and says which field is
// wrong and why.
TEST(ScheduleJson, MalformedSchedulesAreRefusedNamingTheField) {
  const json base = {{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:C"}}};
  auto with = [&](const std::string& key, const json& value) {
    json j = base;
    j[key] = value;
    return j;
  };
  json both = base;
  both["tree"] = {{"loops", {"i", "k"}}};
  json no_tree = base;
  no_tree.erase("loop_order");
  json no_format = base;
  no_format.erase("format");
  const std::vector<std::pair<json, std::string>> cases = {
      {json::array({1}), "a schedule is a JSON object"},
      {with("split", {{"i", 4}}), "unknown key \"split\""},
      {with("splits", json::array({4})), "\"splits\" must map index names to split sizes"},
      {with("splits", {{"i", "4"}}), "split of i must be an integer"},
      {with("splits", {{"i", 2.5}}), "split of i must be an integer"},
      {with("splits", {{"i", 0}}), "split of i is 0; it must be an integer from 1 to 2147483647"},
      {with("splits", {{"k", -3}}), "split of k is -3; it must be an integer from 1 to 2147483647"},
      {both, "give either \"tree\" or \"loop_order\""},
      {no_tree, "missing \"tree\" (or \"loop_order\")"},
      {with("loop_order", "i k"), "\"loop_order\" must be an array of loop variables"},
      {with("loop_order", {"i", 2}), "\"loop_order\" must hold strings"},
      {no_format, "missing \"format\""},
      {with("format", "i:U k:C"), "missing \"format\""},
      {with("format", {"i:U", 3}), "\"format\" entries are strings such as \"k:C\""},
      {with("format", {"i:U", "k"}), "format level \"k\" is not VAR:U or VAR:C"},
      {with("format", {"i:U", ":C"}), "format level \":C\" is not VAR:U or VAR:C"},
      {with("format", {"i:U", "k:D"}), "level format \"D\" is not U, C, S, Q or G<size>"},
      {with("parallel", 3), "\"parallel\" must be null, a loop variable, or"},
      {with("parallel", {{"chunk", 4}}), "\"parallel\" must be null, a loop variable, or"},
      {with("parallel", {{"index", "i"}, {"chunk", 0}}),
       "parallel chunk is 0; it must be an integer from 1 to 2147483647"},
      {with("parallel", {{"index", "i"}, {"chunk", "8"}}),
       "parallel chunk is not a number; it must be an integer from 1 to 2147483647"},
      {with("parallel", {{"index", "i"}, {"threads", -1}}),
       "parallel threads is -1; it must be an integer from 0 to 4096"},
      {with("parallel", {{"index", "i"}, {"threads", 5000}}),
       "parallel threads is 5000; it must be an integer from 0 to 4096"},
      {with("parallel", {{"index", "i"}, {"partition", "static"}}),
       "parallel partition must be \"dynamic\" or \"balanced\""},
      {with("parallel", {{"index", "i"}, {"schedule", "static"}}),
       "unknown key \"schedule\" in \"parallel\""},
      {with("unroll", 0), "\"unroll\" must be an integer from 1 to 16"},
      {with("unroll", 17), "\"unroll\" must be an integer from 1 to 16"},
      {with("unroll", "4"), "\"unroll\" must be an integer from 1 to 16"},
      {with("narrow_coordinates", 1), "\"narrow_coordinates\" must be true or false"},
      {with("transpose", "C"), "\"transpose\" must be an array of tensor names"},
      {with("transpose", {1}), "\"transpose\" must hold tensor names"},
      {with("transpose", {"C", "B", "C"}), "\"transpose\" names a tensor twice"},
      {{{"tree", {"i", "k"}}, {"format", {"i:U"}}}, "tree: expected an object with \"loops\""},
      {{{"tree", {{"loops", {"i"}}, {"order", 1}}}, {"format", {"i:U"}}},
       "tree: unknown key \"order\""},
      {{{"tree", {{"loops", "i"}}}, {"format", {"i:U"}}},
       "tree: \"loops\" must be an array of loop variable names"},
      {{{"tree", {{"loops", {1}}}}, {"format", {"i:U"}}}, "tree: \"loops\" must hold strings"},
      {{{"tree", {{"loops", {"i"}}, {"compute", 1}}}, {"format", {"i:U"}}},
       "tree: \"compute\" must be a string"},
      {{{"tree", {{"loops", {"i"}}, {"where", {{"temp", "t"}}}}}, {"format", {"i:U"}}},
       "tree: \"where\" needs \"temp\", \"producer\" and \"consumer\""},
      {{{"tree",
         {{"loops", {"i"}},
          {"where", {{"temp", 1}, {"producer", json::object()}, {"consumer", json::object()}}}}},
        {"format", {"i:U"}}},
       "tree: \"temp\" must be a string"},
      {{{"tree",
         {{"loops", {"i"}},
          {"compute", "A(i) += t"},
          {"where", {{"temp", "t"}, {"producer", json::object()}, {"consumer", json::object()}}}}},
        {"format", {"i:U"}}},
       "tree: a section has either \"compute\" or \"where\", not both"},
      {{{"tree",
         {{"loops", {"i"}},
          {"where",
           {{"temp", "t"},
            {"producer", {{"loops", {"k"}}, {"kompute", "t += A(i,k)"}}},
            {"consumer", json::object()}}}}},
        {"format", {"i:U"}}},
       "tree.where.producer: unknown key \"kompute\""},
  };
  for (const auto& [j, cause] : cases) {
    try {
      Read(j);
      ADD_FAILURE() << "accepted: " << j.dump();
    } catch (const InputError& error) {
      const std::string message = error.what();
      EXPECT_EQ(message.rfind("s.json: ", 0), 0u) << message;
      EXPECT_NE(message.find(cause), std::string::npos)
          << j.dump() << "\n  gave: " << message << "\n  want: " << cause;
    }
  }
}

// FromJson checks structure only: a loop order that misses a variable, or names one the
// expression lacks, reads fine and is refused when lowered against the expression, naming it.
TEST(ScheduleJson, LoopOrderMissingAVariableIsRefusedByLowering) {
  const Expression spmm = KernelExpression("spmm");
  const Schedule missing =
      Read({{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:C"}}, {"parallel", "i"}});
  LowerOutcome outcome = Lower(spmm, missing);
  EXPECT_EQ(outcome.nest, nullptr);
  EXPECT_NE(outcome.error.find("uses index j but no loop j encloses it"), std::string::npos)
      << outcome.error;
  const Schedule extra =
      Read({{"loop_order", {"i", "k", "j", "z"}}, {"format", {"i:U", "k:C"}}, {"parallel", "i"}});
  outcome = Lower(spmm, extra);
  EXPECT_EQ(outcome.nest, nullptr);
  EXPECT_NE(outcome.error.find("loop z names an unknown loop variable z"), std::string::npos)
      << outcome.error;
}

// A copied schedule owns its tree: changing the copy leaves the original alone.
TEST(ScheduleJson, CopiesAreDeep) {
  Schedule a = Read(json::parse(kFused));
  Schedule b = a;
  b.root.producer->loops.push_back("x");
  b.root.consumer->compute = "changed";
  EXPECT_EQ(a.root.producer->loops, std::vector<std::string>{"k"});
  EXPECT_EQ(a.root.consumer->compute, "A(i,l) += t * E(j,l)");
  a = b;
  EXPECT_EQ(a.root.consumer->compute, "changed");
  b.root.consumer->compute = "again";
  EXPECT_EQ(a.root.consumer->compute, "changed");
}

}  // namespace
}  // namespace sparsetune
