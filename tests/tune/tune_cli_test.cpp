// sparsetune tune and query as a user runs them: winners stored, answered again from the
// database, queried without tuning, bad input refused with nothing stored.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "ir/schedule.hpp"
#include "jit/jit.hpp"

namespace sparsetune {
namespace {

using testing::RunCli;
using testing::TempDir;

const std::string kExample = std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";

TEST(TuneCli, TunesStoresAndAnswersFromTheDatabase) {
  TempDir dir;
  const std::string db = dir.File("t.db");
  const auto first =
      RunCli({"tune", kExample, "--kernel", "spmv", "--db", db, "--samples", "3", "--json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto report = nlohmann::json::parse(first.out);
  for (const char* field :
       {"kernel", "fingerprint", "from_db", "winner", "fixed_csr_ms", "speedup_vs_fixed_csr",
        "pack_ms", "break_even_calls", "candidates", "tune_ms", "noise", "drift_correction"})
    EXPECT_TRUE(report.contains(field)) << field;
  EXPECT_FALSE(report["from_db"].get<bool>());
  // Scaled by FixedCSR timed beside each group, or not at all within its own noise.
  const double drift = report["drift_correction"].get<double>();
  EXPECT_TRUE(drift == 0 || drift >= 0.03 - 1e-12) << drift;
  EXPECT_EQ(report["kernel"], "spmv");
  const double winner = report["winner"]["time_ms"].get<double>();
  EXPECT_GT(winner, 0);
  // The winner is the fastest of the finalists, the first round's best timed again side by
  // side; FixedCSR is among the candidates.
  bool has_fixed = false, has_scorch = false;
  int finalists = 0;
  for (const auto& c : report["candidates"]) {
    has_fixed |= c["source"] == "fixed_csr";
    has_scorch |= c["source"] == "scorch";
    if (c["status"] == "ok" && c.value("final", false)) {
      ++finalists;
      EXPECT_GE(c["time_ms"].get<double>(), winner);
    }
  }
  EXPECT_GE(finalists, 3);
  EXPECT_TRUE(has_fixed);
  // Scorch's heuristic is always measured (unless it equals FixedCSR, which it does not here).
  EXPECT_TRUE(has_scorch);
  EXPECT_NEAR(report["speedup_vs_fixed_csr"].get<double>(),
              report["fixed_csr_ms"].get<double>() / winner, 1e-9);

  const auto again = RunCli({"tune", kExample, "--kernel", "spmv", "--db", db, "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto stored = nlohmann::json::parse(again.out);
  EXPECT_TRUE(stored["from_db"].get<bool>());
  EXPECT_EQ(stored["winner"]["schedule"], report["winner"]["schedule"]);

  const auto query = RunCli({"query", kExample, "--kernel", "spmv", "--db", db, "--json"});
  ASSERT_EQ(query.exit_code, 0) << query.err;
  const auto answer = nlohmann::json::parse(query.out);
  EXPECT_TRUE(answer["hit"].get<bool>());
  EXPECT_EQ(answer["winner"]["schedule"], report["winner"]["schedule"]);
  // By fingerprint, without the file.
  const auto by_print =
      RunCli({"query", "--fingerprint", report["fingerprint"], "--kernel", "spmv", "--db", db});
  EXPECT_EQ(by_print.exit_code, 0) << by_print.err;
  // A miss with the heuristic fallback uses the statistics stored with the pattern.
  const auto fallback = RunCli({"query", "--fingerprint", report["fingerprint"], "--kernel", "spmm",
                                "--db", db, "--fallback", "heuristic", "--json"});
  ASSERT_EQ(fallback.exit_code, 0) << fallback.err;
  EXPECT_EQ(nlohmann::json::parse(fallback.out)["fallback_basis"], "the stored pattern statistics");
  // Another kernel, another pattern: misses, exit code 1.
  EXPECT_EQ(RunCli({"query", kExample, "--kernel", "spmm", "--db", db}).exit_code, 1);
  const std::string other = dir.File("other.mtx",
                                     "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 "
                                     "1.5\n3 2 -2\n");
  const auto miss = RunCli({"query", other, "--kernel", "spmv", "--db", db, "--json"});
  EXPECT_EQ(miss.exit_code, 1);
  EXPECT_FALSE(nlohmann::json::parse(miss.out)["hit"].get<bool>());
}

// The text report gives the preparation in units that fit it: a renumbered winner's ordering
// and packing each take microseconds on this small matrix, and neither reads as "0 ms".
TEST(TuneCli, TheReportGivesThePreparationInUnitsThatFit) {
  TempDir dir;
  const auto r = RunCli({"tune", kExample, "--kernel", "spmv", "--db", dir.File("t.db"),
                         "--samples", "0", "--no-model"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex pack_line(
      "  pack        ([0-9.]+ (?:us|ms|s))(?: \\(ordering ([0-9.]+ (?:us|ms|s)), "
      "packing ([0-9.]+ (?:us|ms|s))\\))?(?:   pays for itself after [0-9]+ calls?)?\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, pack_line)) << r.out;
  for (size_t part = 1; part < m.size(); ++part) {
    if (!m[part].matched) continue;
    EXPECT_GT(std::stod(m[part].str()), 0) << m[0];
  }
}

// A caller who prepares the operand once and calls it N times: the winner is the one of least
// preparation plus N calls, stored apart from the winner per call, and query --calls answers it.
TEST(TuneCli, ForACallCountTheWinnerIsChosenWithItsPreparation) {
  TempDir dir;
  const std::string db = dir.File("calls.db");
  const std::vector<std::string> tune = {
      "tune", kExample,    "--kernel", "spmv",        "--db", db,      "--calls",
      "1",    "--samples", "3",        "--orderings", "none", "--json"};
  const auto run = RunCli(tune);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["calls"], 1);
  const double end_to_end = report["end_to_end_ms"].get<double>();
  EXPECT_NEAR(end_to_end,
              report["pack_ms"].get<double>() + report["winner"]["time_ms"].get<double>(), 1e-9);
  int finalists = 0;
  for (const auto& c : report["candidates"]) {
    if (c["status"] != "ok" || !c.value("final", false)) continue;
    ++finalists;
    EXPECT_GE(c["pack_ms"].get<double>() + c["time_ms"].get<double>(), end_to_end - 1e-9);
  }
  EXPECT_GE(finalists, 3);

  auto query = [&](const std::vector<std::string>& more) {
    std::vector<std::string> args = {"query", kExample, "--kernel", "spmv", "--db", db, "--json"};
    args.insert(args.end(), more.begin(), more.end());
    return RunCli(args);
  };
  const auto hit = query({"--calls", "1"});
  ASSERT_EQ(hit.exit_code, 0) << hit.err;
  const auto answer = nlohmann::json::parse(hit.out);
  EXPECT_EQ(answer["winner"]["schedule"], report["winner"]["schedule"]);
  EXPECT_EQ(answer["calls"], 1);
  EXPECT_NEAR(answer["prepare_ms"].get<double>(), report["pack_ms"].get<double>(), 1e-9);
  // Neither the winner per call nor one for another count was stored.
  EXPECT_EQ(query({}).exit_code, 1);
  const auto other = query({"--calls", "2"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("--calls 2"), std::string::npos) << other.err;

  // An emitted kernel's header says what it was chosen for.
  auto emitted_header = [&](const std::string& emit_dir) {
    for (const auto& entry : std::filesystem::directory_iterator(emit_dir)) {
      if (entry.path().extension() != ".h") continue;
      std::ifstream in(entry.path());
      return std::string((std::istreambuf_iterator<char>(in)), {});
    }
    return std::string();
  };
  const auto queried = query({"--calls", "1", "--emit", dir.File("queried")});
  ASSERT_EQ(queried.exit_code, 0) << queried.err;
  EXPECT_NE(emitted_header(dir.File("queried")).find("Chosen for 1 call."), std::string::npos);

  std::vector<std::string> tune_again = tune;
  tune_again.insert(tune_again.end(), {"--emit", dir.File("tuned")});
  const auto again = RunCli(tune_again);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(emitted_header(dir.File("tuned")).find("Chosen for 1 call."), std::string::npos);
  const auto stored = nlohmann::json::parse(again.out);
  EXPECT_TRUE(stored["from_db"].get<bool>());
  EXPECT_EQ(stored["winner"]["schedule"], report["winner"]["schedule"]);
  EXPECT_NEAR(stored["end_to_end_ms"].get<double>(), end_to_end, 1e-9);

  const auto negative = RunCli({"tune", kExample, "--kernel", "spmv", "--db", db, "--calls", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_NE(negative.err.find("--calls"), std::string::npos) << negative.err;
}

// An iterative method that stays in the tuned order: every candidate is timed there, the
// final round renumbers the best ones, and the winner is stored apart from the one for the
// caller's order; query and the emitted header say which it is.
TEST(TuneCli, ForTheTunedOrderTheWinnerIsTimedThereAndStoredApart) {
  TempDir dir;
  const std::string db = dir.File("tuned_order.db");
  auto query = [&](const std::vector<std::string>& more) {
    std::vector<std::string> args = {"query", kExample, "--kernel", "spmv", "--db", db, "--json"};
    args.insert(args.end(), more.begin(), more.end());
    return RunCli(args);
  };
  const auto run = RunCli({"tune", kExample, "--kernel", "spmv", "--db", db, "--tuned-order",
                           "--samples", "3", "--emit", dir.File("tuned"), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto report = nlohmann::json::parse(run.out);
  EXPECT_TRUE(report["tuned_order"].get<bool>());
  int renumbered_finalists = 0;
  for (const auto& c : report["candidates"]) {
    if (c["status"] == "ok" && c.value("final", false) &&
        c["schedule"].value("ordering", "none") != "none")
      ++renumbered_finalists;
  }
  EXPECT_GE(renumbered_finalists, 1);

  const auto hit = query({"--tuned-order"});
  ASSERT_EQ(hit.exit_code, 0) << hit.err;
  const auto answer = nlohmann::json::parse(hit.out);
  EXPECT_TRUE(answer["tuned_order"].get<bool>());
  EXPECT_EQ(answer["winner"]["schedule"], report["winner"]["schedule"]);
  // Not the winner for the caller's order: that one is still to be tuned.
  const auto miss = query({});
  EXPECT_EQ(miss.exit_code, 1);
  const auto plain = RunCli({"query", kExample, "--kernel", "spmv", "--db", dir.File("none.db")});
  EXPECT_EQ(plain.err.find("--tuned-order"), std::string::npos) << plain.err;
  const auto other =
      RunCli({"query", kExample, "--kernel", "spmv", "--db", dir.File("none.db"), "--tuned-order"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("--tuned-order"), std::string::npos) << other.err;

  bool header_says = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir.File("tuned"))) {
    if (entry.path().extension() != ".h") continue;
    std::ifstream in(entry.path());
    const std::string header((std::istreambuf_iterator<char>(in)), {});
    header_says |= header.find("Chosen for the tuned order.") != std::string::npos;
  }
  EXPECT_TRUE(header_says);
}

// After the first round, a second one measures schedules one move from the fastest, in
// --refine-steps steps of --refine each, never one twice; --refine 0 leaves it out.
TEST(TuneCli, ASecondRoundMeasuresNeighboursOfTheFirstRoundsBest) {
  TempDir dir;
  auto refined = [&](const std::string& count, const std::string& steps, nlohmann::json* report) {
    const auto run = RunCli({"tune", kExample, "--kernel", "spmv", "--db",
                             dir.File(count + "-" + steps + ".db"), "--samples", "3", "--refine",
                             count, "--refine-steps", steps, "--orderings", "none", "--json"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    *report = nlohmann::json::parse(run.out);
    int n = 0;
    std::set<std::string> distinct;
    for (const auto& c : (*report)["candidates"]) {
      if (c["source"] != "refined") continue;
      ++n;
      // A neighbour may pad a level past the cap: refused, with the reason, never run.
      if (c["status"] != "ok") {
        EXPECT_EQ(c["status"], "format_refused") << c.dump();
        EXPECT_FALSE(c["message"].get<std::string>().empty()) << c.dump();
      }
      distinct.insert(c["schedule"].dump());
    }
    EXPECT_EQ(distinct.size(), size_t(n));
    return n;
  };
  nlohmann::json one_step, two_steps, without;
  EXPECT_EQ(refined("4", "1", &one_step), 4);
  EXPECT_TRUE(one_step["stage_ms"].contains("second"));
  EXPECT_EQ(refined("4", "2", &two_steps), 8);
  EXPECT_EQ(refined("0", "2", &without), 0);
  EXPECT_FALSE(without["stage_ms"].contains("second"));
  EXPECT_EQ(RunCli({"tune", kExample, "--kernel", "spmv", "--refine", "-1"}).exit_code, 2);
  EXPECT_EQ(RunCli({"tune", kExample, "--kernel", "spmv", "--refine-steps", "0"}).exit_code, 2);
}

// The leader round times up to --leader-round schedules one move from the final round's winner,
// none measured before; --leader-round 0 leaves it out.
TEST(TuneCli, ALeaderRoundTimesNeighboursOfTheWinnerOnce) {
  TempDir dir;
  auto leaders = [&](const std::string& count, nlohmann::json* report) {
    const auto run =
        RunCli({"tune", kExample, "--kernel", "spmv", "--db", dir.File(count + ".db"), "--samples",
                "3", "--refine", "2", "--leader-round", count, "--orderings", "none", "--json"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    *report = nlohmann::json::parse(run.out);
    int n = 0;
    std::set<std::string> distinct;
    for (const auto& c : (*report)["candidates"]) {
      n += c["source"] == "leader";
      EXPECT_TRUE(distinct.insert(c["schedule"].dump()).second) << "measured twice: " << c.dump();
    }
    return n;
  };
  nlohmann::json with, without;
  const int n = leaders("3", &with);
  EXPECT_LE(n, 3);
  EXPECT_EQ(with["stage_ms"].contains("leader"), n > 0);
  EXPECT_EQ(leaders("0", &without), 0);
  EXPECT_FALSE(without["stage_ms"].contains("leader"));
  EXPECT_EQ(RunCli({"tune", kExample, "--kernel", "spmv", "--leader-round", "-1"}).exit_code, 2);
}

// A tune measures as many of the model's picks as its manifest says (tune_top_k), unless
// --top-k says otherwise; the report names the count.
// A copy of the shipped SpMV model whose manifest a test edits.
struct EditableModel {
  explicit EditableModel(const TempDir& dir) : path(dir.File("model")) {
    std::filesystem::copy(std::string(SPARSETUNE_SOURCE_DIR) + "/models/spmv", path,
                          std::filesystem::copy_options::recursive);
    manifest = nlohmann::json::parse(std::ifstream(manifest_path()));
  }
  std::string manifest_path() const { return path + "/model.json"; }
  void Write() const { std::ofstream(manifest_path()) << manifest.dump(); }
  std::string path;
  nlohmann::json manifest;
};

TEST(TuneCli, TheModelsManifestSetsHowManyOfItsPicksAreMeasured) {
  TempDir dir;
  EditableModel edited(dir);
  const std::string& model = edited.path;
  edited.manifest["tune_top_k"] = 3;
  edited.Write();
  auto picks = [&](std::vector<std::string> extra, nlohmann::json* report) {
    std::vector<std::string> args = {"tune",           kExample,  "--kernel", "spmv",     "--db",
                                     dir.File("t.db"), "--model", model,      "--refine", "0",
                                     "--orderings",    "none",    "--force",  "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto run = RunCli(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    *report = nlohmann::json::parse(run.out);
    int n = 0;
    for (const auto& c : (*report)["candidates"]) n += c["source"] == "model";
    return n;
  };
  nlohmann::json from_manifest, from_option;
  EXPECT_EQ(picks({}, &from_manifest), 3);
  EXPECT_EQ(from_manifest["model_top_k"], 3);
  EXPECT_EQ(picks({"--top-k", "5"}, &from_option), 5);
  EXPECT_EQ(from_option["model_top_k"], 5);
  EXPECT_EQ(from_option["refine_weighted"], false);  // no second round
}

// A model's manifest may say how often each kind of move paid (train learns it); the second
// round then draws with those weights. Malformed weights stop the tune before it stores
// anything, naming the manifest.
TEST(TuneCli, TheModelsMoveWeightsSteerTheSecondRound) {
  TempDir dir;
  EditableModel edited(dir);
  const std::string& model = edited.path;
  const std::string manifest_path = edited.manifest_path();
  auto tune = [&](const nlohmann::json& moves, const std::string& db) {
    edited.manifest["refine_moves"] = moves;
    edited.Write();
    return RunCli({"tune", kExample, "--kernel", "spmv", "--db", db, "--model", model, "--top-k",
                   "2", "--refine", "2", "--orderings", "none", "--force", "--json"});
  };
  const auto bad = tune({{"from_rules", {{"moves", {{"threads", -1}}}}}}, dir.File("bad.db"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(manifest_path), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("refine_moves"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("bad.db")));

  const auto weighted = tune(
      {{"from_rules", {{"moves", {{"split i up", 0.3}, {"threads", 0.01}}}}}}, dir.File("t.db"));
  ASSERT_EQ(weighted.exit_code, 0) << weighted.err;
  const nlohmann::json report = nlohmann::json::parse(weighted.out);
  EXPECT_EQ(report["refine_weighted"], true);
  int refined = 0;
  for (const auto& c : report["candidates"]) refined += c["source"] == "refined";
  EXPECT_EQ(refined, 2);
}

// The shipped MTTKRP model ranks schedules that gain 1.02x over FixedCSR at best: tune measures
// the rule candidates alone and says why; named with --model, the model is consulted.
TEST(TuneCli, AModelWithNothingToRankIsNotConsulted) {
  TempDir dir;
  const std::string tensor = dir.File("t.tns");
  ASSERT_EQ(
      RunCli({"gen", "tensor3", "uniform", "--dims", "300,200,100", "--nnz", "20000", "-o", tensor})
          .exit_code,
      0);
  auto tune = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"tune", tensor,           "--kernel", "mttkrp",
                                     "--db", dir.File("t.db"), "--force",  "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto run = RunCli(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return nlohmann::json::parse(run.out);
  };
  auto sources = [](const nlohmann::json& report) {
    std::set<std::string> out;
    for (const auto& c : report["candidates"]) out.insert(c["source"].get<std::string>());
    return out;
  };
  const nlohmann::json alone = tune({});
  ASSERT_TRUE(alone.contains("model_skipped"));
  EXPECT_NE(alone["model_skipped"].get<std::string>().find("1.02x"), std::string::npos);
  EXPECT_TRUE(alone["model"].is_null());
  EXPECT_EQ(sources(alone).count("model"), 0u);
  EXPECT_EQ(sources(alone).count("sampled"), 0u);  // no random schedules stand in for it
  EXPECT_EQ(sources(alone).count("heuristic"), 1u);
  const nlohmann::json named =
      tune({"--model", std::string(SPARSETUNE_SOURCE_DIR) + "/models/mttkrp"});
  EXPECT_FALSE(named.contains("model_skipped"));
  EXPECT_EQ(sources(named).count("model"), 1u);
}

// The final round renumbers SpMV's best schedules (x and y are a value per row), not SpMM's:
// B's and C's rows of 64 would be permuted on every call, more values than the matrix holds.
TEST(TuneCli, OrderingsAreTriedWhereTheirPermutationIsSmall) {
  TempDir dir;
  auto ordered = [&](const std::vector<std::string>& kernel) {
    std::vector<std::string> args = {"tune",      kExample, "--db",  dir.File("t.db"),
                                     "--samples", "2",      "--json"};
    args.insert(args.end(), kernel.begin(), kernel.end());
    const auto run = RunCli(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const nlohmann::json report = nlohmann::json::parse(run.out);
    int count = 0;
    for (const auto& c : report["candidates"])
      count += c["source"].get<std::string>().find('+') != std::string::npos;
    return count;
  };
  EXPECT_GT(ordered({"--kernel", "spmv"}), 0);
  EXPECT_EQ(ordered({"--kernel", "spmm", "--dense", "j=64"}), 0);
}

TEST(TuneCli, QueryFallsBackToTheHeuristicAndSaysSo) {
  TempDir dir;
  const std::string db = dir.File("none.db");
  const auto plain = RunCli({"query", kExample, "--kernel", "spmm", "--db", db});
  EXPECT_EQ(plain.exit_code, 1);
  const auto r = RunCli(
      {"query", kExample, "--kernel", "spmm", "--db", db, "--fallback", "heuristic", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto answer = nlohmann::json::parse(r.out);
  EXPECT_FALSE(answer["hit"].get<bool>());
  EXPECT_EQ(answer["fallback"], "heuristic");
  EXPECT_TRUE(answer["winner"]["time_ms"].is_null());
  // The same schedule `schedules --heuristic` gives for the file.
  const auto h =
      RunCli({"schedules", "--kernel", "spmm", "--heuristic", "--tensor", kExample, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(answer["winner"]["schedule"], nlohmann::json::parse(h.out)["schedule"]);
  // Without the file, from shapes and priors; it still says it is a fallback.
  const auto by_print = RunCli({"query", "--fingerprint", "0123", "--kernel", "spmv", "--db", db,
                                "--fallback", "heuristic"});
  EXPECT_EQ(by_print.exit_code, 0) << by_print.err;
  EXPECT_NE(by_print.err.find("heuristic"), std::string::npos) << by_print.err;
  EXPECT_NE(by_print.err.find("not measured"), std::string::npos) << by_print.err;
  EXPECT_EQ(
      RunCli({"query", kExample, "--kernel", "spmv", "--db", db, "--fallback", "guess"}).exit_code,
      2);
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(TuneCli, BadInputStoresNothing) {
  TempDir dir;
  const std::string db = dir.File("t.db");
  const auto unknown = RunCli({"tune", kExample, "--kernel", "spmvv", "--db", db});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown kernel"), std::string::npos) << unknown.err;
  const std::string bad =
      dir.File("bad.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 x\n");
  const auto malformed = RunCli({"tune", bad, "--kernel", "spmv", "--db", db});
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_NE(malformed.err.find("bad.mtx"), std::string::npos) << malformed.err;
  EXPECT_NE(malformed.err.find("bad.mtx:3"), std::string::npos) << malformed.err;
  // A matrix without entries, of no size or of some: nothing to tune.
  for (const char* size : {"0 0 0", "5 7 0"}) {
    const std::string empty = dir.File(
        "empty.mtx", std::string("%%MatrixMarket matrix coordinate real general\n") + size + "\n");
    const auto nothing = RunCli({"tune", empty, "--kernel", "spmv", "--db", db});
    EXPECT_EQ(nothing.exit_code, 2) << size;
    EXPECT_NE(nothing.err.find("empty.mtx"), std::string::npos) << nothing.err;
    EXPECT_NE(nothing.err.find("nothing to tune"), std::string::npos) << nothing.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db));
  // A query on a database that does not exist is a miss, not an error.
  EXPECT_EQ(RunCli({"query", kExample, "--kernel", "spmv", "--db", db}).exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(TuneCli, FusedKernelsTakeSparseAutoCandidates) {
  TempDir dir;
  const auto r = RunCli({"tune", kExample, "--kernel", "spmm_gemm", "--dense", "k=8,l=8", "--db",
                         dir.File("t.db"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  bool sparseauto = false;
  for (const auto& c : report["candidates"]) sparseauto |= c["source"] == "sparseauto";
  EXPECT_TRUE(sparseauto);
}

TEST(TuneCli, EmitsAStandaloneKernel) {
  TempDir dir;
  const auto r = RunCli({"tune", kExample, "--kernel", "spmv", "--db", dir.File("t.db"),
                         "--samples", "0", "--emit", dir.path() + "/out", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* file :
       {"sparsetune_spmv.h", "sparsetune_spmv.cpp", "sparsetune_spmv.schedule.json"})
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/out/" + file)) << file;
}

// A pattern file's values are all 1: every candidate of its tune but FixedCSR whose format
// stores no padding keeps one value. The file of one value and a file of the same pattern whose
// values differ are two workloads with a winner each: tuning one never replaces the other's, a
// winner that keeps one value never answers for values that differ, and each query answers with
// its own.
TEST(TuneCli, OneValueForAPatternButNotForItsValuedTwin) {
  TempDir dir;
  const std::string db = dir.File("t.db");
  std::string entries_pattern, entries_valued;
  int nnz = 0;
  for (int i = 0; i < 300; ++i) {
    for (int j = 0; j < 6; ++j, ++nnz) {
      const std::string at =
          std::to_string(i + 1) + " " + std::to_string((i * 7 + j * 13) % 300 + 1);
      entries_pattern += at + "\n";
      entries_valued += at + " " + std::to_string(0.5 + (i + j) % 5) + "\n";
    }
  }
  const std::string size = "300 300 " + std::to_string(nnz) + "\n";
  const std::string pattern = dir.File(
      "pattern.mtx", "%%MatrixMarket matrix coordinate pattern general\n" + size + entries_pattern);
  const std::string valued = dir.File(
      "valued.mtx", "%%MatrixMarket matrix coordinate real general\n" + size + entries_valued);
  const std::vector<std::string> quick = {"--kernel",   "spmv",           "--db", db,
                                          "--no-model", "--samples",      "2",    "--refine",
                                          "0",          "--leader-round", "0",    "--json"};
  auto tune = [&](const std::string& file) {
    std::vector<std::string> args = {"tune", file};
    args.insert(args.end(), quick.begin(), quick.end());
    const auto run = RunCli(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return nlohmann::json::parse(run.out);
  };
  auto query = [&](const std::vector<std::string>& what) {
    std::vector<std::string> args = {"query"};
    args.insert(args.end(), what.begin(), what.end());
    for (const char* a : {"--kernel", "spmv", "--json"}) args.push_back(a);
    args.insert(args.end(), {"--db", db});
    return RunCli(args);
  };
  auto winner_of = [](const testing::CliResult& run) {
    return nlohmann::json::parse(run.out)["winner"]["schedule"];
  };
  const auto report = tune(pattern);
  int one_value = 0;
  for (const auto& c : report["candidates"]) {
    const Schedule s = Schedule::FromJson(c["schedule"], "candidate");
    const bool expected = c["source"] != "fixed_csr" && !s.StoresPadding();
    EXPECT_EQ(s.uniform_values, expected) << c["source"] << " " << c["schedule"];
    one_value += s.uniform_values;
  }
  EXPECT_GT(one_value, 0);

  // The stored winner made one that keeps one value, as tune stores for most pattern graphs.
  auto database = Database::Open(db, OpenMode::kReadWrite);
  const auto machine = database->FindMachine(DetectMachine(Jit::DefaultCompiler(), Jit::Flags()));
  ASSERT_TRUE(machine.has_value());
  auto store_one_value_winner = [&](const std::string& kernel_key) {
    const TuningKey key{report["fingerprint"], kernel_key, *machine, {}, DType::kF32};
    for (const MeasurementRow& row : database->TopK(key, 1000)) {
      if (row.schedule.canonical_json.find("uniform_values") == std::string::npos) continue;
      database->SetWinner(key, row.schedule.id, row.median_ms);
      return row.schedule.canonical_json;
    }
    ADD_FAILURE() << "no candidate under " << kernel_key << " keeps one value";
    return std::string();
  };
  const std::string one_value_winner = store_one_value_winner("spmv@one-value");
  const auto hit_pattern = query({pattern});
  ASSERT_EQ(hit_pattern.exit_code, 0) << hit_pattern.err;
  EXPECT_EQ(winner_of(hit_pattern).dump(), nlohmann::json::parse(one_value_winner).dump());
  // By fingerprint alone, with nothing else stored: the one-value winner.
  EXPECT_EQ(query({"--fingerprint", report["fingerprint"]}).exit_code, 0);
  const auto miss = query({valued});
  EXPECT_EQ(miss.exit_code, 1) << miss.err;
  EXPECT_NE(miss.err.find("values differ"), std::string::npos) << miss.err;
  EXPECT_NE(nlohmann::json::parse(miss.out)["passed_over"].get<std::string>().find("one value"),
            std::string::npos);

  const auto valued_report = tune(valued);
  EXPECT_FALSE(valued_report["from_db"].get<bool>());
  for (const auto& c : valued_report["candidates"])
    EXPECT_FALSE(c["schedule"].contains("uniform_values"));
  const auto valued_winner = valued_report["winner"]["schedule"];
  EXPECT_FALSE(valued_winner.contains("uniform_values"));
  const auto hit_valued = query({valued});
  ASSERT_EQ(hit_valued.exit_code, 0) << hit_valued.err;
  EXPECT_EQ(winner_of(hit_valued), valued_winner);
  // Both stay stored: the pattern's tune answers from the database with its own winner.
  const auto pattern_again = tune(pattern);
  EXPECT_TRUE(pattern_again["from_db"].get<bool>());
  EXPECT_EQ(pattern_again["winner"]["schedule"].dump(),
            nlohmann::json::parse(one_value_winner).dump());
  EXPECT_EQ(winner_of(query({pattern})).dump(), nlohmann::json::parse(one_value_winner).dump());
  EXPECT_EQ(winner_of(query({"--fingerprint", report["fingerprint"]})), valued_winner);

  // A one-value winner that a build before the separate key stored under the kernel's own:
  // it answers for the pattern, and tune passes it over for the valued file.
  {
    MeasurementRecord legacy;
    legacy.key = {report["fingerprint"], "spmv", *machine, {}, DType::kF32};
    legacy.expression = report["expression"];
    legacy.schedule_json = one_value_winner;
    legacy.median_ms = legacy.min_ms = legacy.max_ms = 0.001;
    legacy.reps = 1;
    legacy.verified = true;
    legacy.source = "model";
    database->SetWinner(legacy.key, database->RecordMeasurement(legacy), legacy.median_ms);
  }
  EXPECT_EQ(winner_of(query({pattern})).dump(), nlohmann::json::parse(one_value_winner).dump());
  EXPECT_EQ(query({valued}).exit_code, 1);
  const auto again = tune(valued);
  EXPECT_FALSE(again["from_db"].get<bool>());
  EXPECT_TRUE(again.contains("stored_winner_passed_over"));
  EXPECT_FALSE(again["winner"]["schedule"].contains("uniform_values"));
}

}  // namespace
}  // namespace sparsetune
