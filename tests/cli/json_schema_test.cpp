// Every --json output matches its schema in schemas/: the documented fields are there with
// their types, and so are the schedules in them (schedule.schema.json). The validator itself
// is checked first: a schema check that passes everything would prove nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "json_schema.hpp"

namespace sparsetune {
namespace {

using testing::CliResult;
using testing::JsonSchemaValidator;
using testing::RunCli;
using testing::TempDir;

const std::string kSchemas = std::string(SPARSETUNE_SOURCE_DIR) + "/schemas";
const std::string kExample = std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";
const std::string kTensor =
    std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/parti_3D_12031.tns";

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

// Runs a command with --json and checks its output against `schema`; returns the output.
nlohmann::json ExpectMatches(const std::vector<std::string>& args, const std::string& schema,
                             int exit_code = 0, const std::vector<std::string>& env = {}) {
  const CliResult r = RunCli(args, env);
  EXPECT_EQ(r.exit_code, exit_code) << r.err;
  nlohmann::json out;
  try {
    out = nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << args[0] << " --json printed no JSON: " << e.what() << "\n" << r.out;
    return out;
  }
  JsonSchemaValidator validator(kSchemas);
  const auto errors = validator.Validate(out, schema);
  EXPECT_TRUE(errors.empty()) << args[0] << " against " << schema << ":\n" << Joined(errors);
  return out;
}

TEST(JsonSchemaValidator, FindsWhatIsWrong) {
  TempDir dir;
  const std::string schema = R"({
    "type": "object", "required": ["a", "b"],
    "properties": {
      "a": {"type": "integer", "minimum": 0},
      "b": {"type": "array", "items": {"enum": ["x", "y"]}},
      "c": {"type": ["string", "null"], "pattern": "^[0-9a-f]+$"},
      "d": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/point"}]},
      "e": {"$ref": "other.schema.json"}},
    "$defs": {"point": {"type": "object", "required": ["x"], "additionalProperties": false,
                        "properties": {"x": {"type": "number"}}}}})";
  std::ofstream(dir.File("t.schema.json")) << schema;
  std::ofstream(dir.File("other.schema.json")) << R"({"type": "boolean"})";
  JsonSchemaValidator validator(dir.path());
  const auto good = nlohmann::json::parse(
      R"({"a": 3, "b": ["x", "y"], "c": null, "d": {"x": 1.5}, "e": true, "more": 1})");
  EXPECT_TRUE(validator.Validate(good, "t.schema.json").empty());
  const auto bad = nlohmann::json::parse(
      R"({"a": -1.5, "b": ["z"], "c": "XYZ", "d": {"x": 1, "y": 2}, "e": 3})");
  const auto errors = validator.Validate(bad, "t.schema.json");
  const std::string text = Joined(errors);
  EXPECT_NE(text.find("/a: is number, not \"integer\""), std::string::npos) << text;
  EXPECT_NE(text.find("/b/0: \"z\" is not one of"), std::string::npos) << text;
  EXPECT_NE(text.find("/c: \"XYZ\" does not match"), std::string::npos) << text;
  EXPECT_NE(text.find("/d: matches 0 of oneOf"), std::string::npos) << text;
  EXPECT_NE(text.find("/e: is number, not \"boolean\""), std::string::npos) << text;
  EXPECT_EQ(Joined(validator.Validate(nlohmann::json::object(), "t.schema.json")),
            "(root): lacks the required field a\n(root): lacks the required field b\n");
  // A keyword it does not implement is an error, not a pass.
  std::ofstream(dir.File("unknown.schema.json")) << R"({"multipleOf": 2})";
  EXPECT_THROW(validator.Validate(3, "unknown.schema.json"), std::runtime_error);
}

TEST(JsonSchemas, EveryShippedSchemaLoadsAndUsesOnlyKnownKeywords) {
  JsonSchemaValidator validator(kSchemas);
  for (const char* name :
       {"info", "run", "schedules", "tune", "query", "bench", "db_stats", "batch", "schedule"}) {
    const std::string file = std::string(name) + ".schema.json";
    // Validating anything walks the whole top level; unknown keywords throw.
    EXPECT_NO_THROW(validator.Validate(nlohmann::json::object(), file)) << file;
  }
}

TEST(JsonSchemas, InfoRunAndSchedulesMatch) {
  TempDir dir;
  const std::vector<std::string> env = {"SPARSETUNE_CACHE=" + dir.path() + "/cache"};
  ExpectMatches({"info", kExample, "--json"}, "info.schema.json");
  ExpectMatches({"info", kTensor, "--json"}, "info.schema.json");
  ExpectMatches({"run", kExample, "--kernel", "spmv", "--json"}, "run.schema.json", 0, env);
  const auto enumeration =
      ExpectMatches({"schedules", "--kernel", "sddmm_spmm", "--json"}, "schedules.schema.json");
  EXPECT_TRUE(enumeration.contains("survivors"));
  const auto heuristic = ExpectMatches(
      {"schedules", "--kernel", "spmv", "--tensor", kExample, "--heuristic", "--json"},
      "schedules.schema.json");
  EXPECT_TRUE(heuristic.contains("explain"));
}

TEST(JsonSchemas, TuneQueryBatchAndDbStatsMatch) {
  TempDir dir;
  const std::string db = dir.File("t.db");
  const std::vector<std::string> tune = {"tune", kExample,     "--kernel",  "spmv", "--db",
                                         db,     "--no-model", "--samples", "2",    "--orderings",
                                         "none", "--json"};
  const auto measured = ExpectMatches(tune, "tune.schema.json");
  EXPECT_FALSE(measured["from_db"].get<bool>());
  const auto stored = ExpectMatches(tune, "tune.schema.json");
  EXPECT_TRUE(stored["from_db"].get<bool>());
  ExpectMatches({"query", kExample, "--kernel", "spmv", "--db", db, "--json"}, "query.schema.json");
  const auto miss = ExpectMatches({"query", kExample, "--kernel", "spmm", "--db", db, "--json"},
                                  "query.schema.json", 1);
  EXPECT_TRUE(miss["winner"].is_null());
  ExpectMatches(
      {"query", kExample, "--kernel", "spmm", "--db", db, "--fallback", "heuristic", "--json"},
      "query.schema.json");
  ExpectMatches(
      {"batch", kExample, dir.File("absent.mtx"), "--kernel", "spmv", "--db", db, "--json"},
      "batch.schema.json", 2);
  ExpectMatches({"db", "stats", "--db", db, "--json"}, "db_stats.schema.json");
}

TEST(JsonSchemas, BenchMatches) {
  TempDir dir;
  const auto out = ExpectMatches({"bench", kExample, "--kernel", "spmv", "--min-ms", "1",
                                  "--no-libraries", "--db", dir.File("b.db"), "--json"},
                                 "bench.schema.json");
  EXPECT_GT(out["results"].size(), 1u);
  // In the tuned order: the winner of tune --tuned-order beside the rest.
  const std::string db = dir.File("tuned_order.db");
  ASSERT_EQ(RunCli({"tune", kExample, "--kernel", "spmv", "--db", db, "--tuned-order", "--no-model",
                    "--samples", "0"})
                .exit_code,
            0);
  const auto tuned = ExpectMatches({"bench", kExample, "--kernel", "spmv", "--min-ms", "1",
                                    "--no-libraries", "--db", db, "--tuned-order", "--json"},
                                   "bench.schema.json");
  EXPECT_EQ(tuned["best_sparsetune_in_tuned_order"], "tuned@tuned-order");
}

}  // namespace
}  // namespace sparsetune
