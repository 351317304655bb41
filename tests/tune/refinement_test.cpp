// The second round's schedules: one move from the first round's fastest, never one measured
// already, a deterministic draw.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/errors.hpp"
#include "base/threads.hpp"
#include "db/database.hpp"
#include "ir/kernels.hpp"
#include "tune/candidates.hpp"
#include "tune/refinement.hpp"

namespace sparsetune {
namespace {

using Sizes = std::map<std::string, int64_t>;

struct FirstRound {
  std::vector<TuneCandidate> candidates;
  std::vector<RunResult> results;
  void Add(const Schedule& schedule, const std::string& source, double ms, bool ok = true) {
    AddDistinct(candidates, {schedule, "", source});
    RunResult r;
    r.status = ok ? RunStatus::kOk : RunStatus::kWrongResult;
    r.time.median_ms = ms;
    results.push_back(r);
  }
};

// FixedCSR, two samples and a failed one: the fastest two that ran are the anchors.
FirstRound SpmmFirstRound(const WacoTemplate& waco, const Sizes& sizes) {
  FirstRound round;
  round.Add(FixedCsrSchedule(waco.expression()), "fixed_csr", 3.0);
  std::mt19937_64 rng(3);
  const auto samples = waco.SampleDistinct(sizes, 3, rng);
  round.Add(waco.ToSchedule(samples[0]), "sampled", 1.0);
  round.Add(waco.ToSchedule(samples[1]), "sampled", 9.0);
  round.Add(waco.ToSchedule(samples[2]), "sampled", 0.5, /*ok=*/false);
  return round;
}

std::set<std::string> NeighbourJsons(const WacoTemplate& waco, const Sizes& sizes,
                                     const std::vector<Schedule>& anchors) {
  std::set<std::string> out;
  for (const Schedule& anchor : anchors) {
    for (const SuperSchedule& n : waco.Neighbours(*waco.FromSchedule(anchor, nullptr), sizes))
      out.insert(waco.ToSchedule(n).CanonicalJson());
  }
  return out;
}

TEST(Refinement, DrawsNeighboursOfTheFastestNeverMeasuredBefore) {
  const auto waco = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = {{"i", 4000}, {"k", 4000}, {"j", 64}};
  const FirstRound round = SpmmFirstRound(*waco, sizes);
  RefinementOptions options;
  options.count = 6;
  options.anchors = 2;
  const auto picks = RefinementCandidates(*waco, sizes, round.candidates, round.results, options,
                                          "spmm/fingerprint");
  ASSERT_EQ(picks.size(), 6u);
  const std::set<std::string> allowed =
      NeighbourJsons(*waco, sizes, {round.candidates[1].schedule, round.candidates[0].schedule});
  std::set<std::string> measured;
  for (const auto& c : round.candidates) measured.insert(c.json);
  std::set<std::string> distinct;
  for (const auto& p : picks) {
    EXPECT_EQ(p.source, "refined");
    EXPECT_TRUE(allowed.count(p.json)) << "not a neighbour of the two fastest: " << p.json;
    EXPECT_FALSE(measured.count(p.json)) << "measured already: " << p.json;
    EXPECT_TRUE(distinct.insert(p.json).second);
  }
  const auto again = RefinementCandidates(*waco, sizes, round.candidates, round.results, options,
                                          "spmm/fingerprint");
  for (size_t p = 0; p < picks.size(); ++p) EXPECT_EQ(again[p].json, picks[p].json);
  // Another operand, another draw.
  const auto other =
      RefinementCandidates(*waco, sizes, round.candidates, round.results, options, "spmm/another");
  bool differs = false;
  for (size_t p = 0; p < picks.size(); ++p) differs |= other[p].json != picks[p].json;
  EXPECT_TRUE(differs);

  options.count = 0;
  EXPECT_TRUE(RefinementCandidates(*waco, sizes, round.candidates, round.results, options,
                                   "spmm/fingerprint")
                  .empty());
}

// A rule measured with 0 threads (all) is the kernel its neighbours write with their count: the
// second round never measures it again under that name.
TEST(Refinement, NeverDrawsAKernelMeasuredUnderAnotherNameForItsThreads) {
  const auto waco = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = {{"i", 4000}, {"k", 4000}, {"j", 64}};
  FirstRound round = SpmmFirstRound(*waco, sizes);
  // Every neighbour of the fastest, measured as a rule would name it.
  const Schedule fastest = round.candidates[1].schedule;
  std::set<std::string> rules;
  for (const SuperSchedule& n : waco->Neighbours(*waco->FromSchedule(fastest, nullptr), sizes)) {
    Schedule rule = waco->ToSchedule(n);
    if (rule.parallel.empty() || rule.threads != HardwareThreads()) continue;
    rule.threads = 0;
    round.Add(rule, "heuristic", 2.0);
    rules.insert(KernelJsonHere(rule));
  }
  ASSERT_FALSE(rules.empty());
  RefinementOptions options;
  options.count = 200;
  options.anchors = 1;
  for (const auto& p : RefinementCandidates(*waco, sizes, round.candidates, round.results, options,
                                            "spmm/fingerprint"))
    EXPECT_FALSE(rules.count(KernelJsonHere(p.schedule))) << "measured already: " << p.json;
}

// The neighbours of `anchor` whose move is `move`, as canonical JSON.
std::set<std::string> NeighboursByMove(const WacoTemplate& waco, const Sizes& sizes,
                                       const Schedule& anchor, const std::string& move) {
  std::vector<std::string> moves;
  const auto near = waco.Neighbours(*waco.FromSchedule(anchor, nullptr), sizes, &moves);
  EXPECT_EQ(moves.size(), near.size());
  std::set<std::string> out;
  for (size_t n = 0; n < near.size(); ++n) {
    if (moves[n] != move) continue;
    Schedule schedule = waco.ToSchedule(near[n]);
    schedule.Canonicalize();
    out.insert(schedule.CanonicalJson());
  }
  return out;
}

// The most frequent move around `anchor`.
std::string CommonestMove(const WacoTemplate& waco, const Sizes& sizes, const Schedule& anchor) {
  std::vector<std::string> moves;
  waco.Neighbours(*waco.FromSchedule(anchor, nullptr), sizes, &moves);
  std::map<std::string, int> count;
  for (const auto& m : moves) ++count[m];
  return std::max_element(count.begin(), count.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

TEST(Refinement, WeightedDrawsFavourTheMovesThatPaid) {
  const auto waco = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = {{"i", 4000}, {"k", 4000}, {"j", 64}};
  const FirstRound round = SpmmFirstRound(*waco, sizes);
  const Schedule& fastest = round.candidates[1].schedule;
  const std::string favoured = CommonestMove(*waco, sizes, fastest);
  const std::set<std::string> favoured_jsons = NeighboursByMove(*waco, sizes, fastest, favoured);
  ASSERT_GE(favoured_jsons.size(), 2u) << favoured;
  RefinementMoveWeights weights;
  // The fastest anchor is a sample: the weights of moves from drawn schedules apply.
  weights.moves[1][favoured] = 1.0;
  weights.moves[0][favoured] = 1e-9;
  weights.unseen[0] = weights.unseen[1] = 1e-9;
  RefinementOptions options;
  options.count = 2;
  options.anchors = 1;
  options.weights = &weights;
  for (const char* key : {"spmm/a", "spmm/b", "spmm/c"}) {
    const auto picks =
        RefinementCandidates(*waco, sizes, round.candidates, round.results, options, key);
    ASSERT_EQ(picks.size(), 2u);
    for (const auto& p : picks)
      EXPECT_TRUE(favoured_jsons.count(p.json)) << "not a '" << favoured << "' move: " << p.json;
  }
  // The others keep a chance: asked for more than the favoured moves give, the draw goes on.
  options.count = static_cast<int>(favoured_jsons.size()) + 2;
  const auto more =
      RefinementCandidates(*waco, sizes, round.candidates, round.results, options, "spmm/a");
  EXPECT_EQ(more.size(), favoured_jsons.size() + 2);
}

TEST(Refinement, MoveWeightsFromAManifestAreChecked) {
  using Anchor = RefinementMoveWeights::Anchor;
  const nlohmann::json good = {
      {"from_rules", {{"moves", {{"split j up", 0.4}, {"threads", 0.02}}}, {"unseen", 0.08}}},
      {"from_searched", {{"moves", {{"split j up", 0.2}}}, {"unseen", 0.1}}},
      {"anchors", {0.1, 0.05}}};
  const RefinementMoveWeights w = RefinementMoveWeights::FromJson(good, "model.json");
  EXPECT_DOUBLE_EQ(w.Weight("split j up", Anchor::kRule, 0), 0.4 * 0.1);
  EXPECT_DOUBLE_EQ(w.Weight("split j up", Anchor::kSearched, 0), 0.2 * 0.1);
  EXPECT_DOUBLE_EQ(w.Weight("threads", Anchor::kRule, 5), 0.02 * 0.05);     // past the ranks: last
  EXPECT_DOUBLE_EQ(w.Weight("threads", Anchor::kSearched, 1), 0.1 * 0.05);  // unseen
  EXPECT_EQ(RefinementMoveWeights::AnchorOf("heuristic"), Anchor::kRule);
  EXPECT_EQ(RefinementMoveWeights::AnchorOf("model"), Anchor::kSearched);
  const RefinementMoveWeights again = RefinementMoveWeights::FromJson(w.ToJson(), "again");
  EXPECT_EQ(again.moves[0], w.moves[0]);
  EXPECT_EQ(again.moves[1], w.moves[1]);
  EXPECT_EQ(again.anchors, w.anchors);
  for (const nlohmann::json& bad :
       {nlohmann::json{{"from_rules", {{"moves", {{"threads", 0}}}}}},
        nlohmann::json{{"from_searched", {{"moves", {{"x", "a"}}}}}},
        nlohmann::json{{"from_rules", {{"moves", {{"x", 1}}}}}, {"anchors", {-1}}},
        nlohmann::json{{"from_rules", 3}}, nlohmann::json::array()}) {
    try {
      RefinementMoveWeights::FromJson(bad, "models/spmm/model.json");
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("models/spmm/model.json"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("refine_moves"), std::string::npos) << e.what();
    }
  }
}

// Weights are learned from stored neighbours: each matched to the move that reaches it from
// its matrix's fastest first-round times, a win when it beats all of them.
TEST(Refinement, MoveWeightsAreLearnedFromStoredNeighbours) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "sparsetune-moves-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string dir = pattern;
  {
    const auto waco = WacoTemplate::ForKernel("spmm");
    const Sizes sizes = {{"i", 4000}, {"k", 4000}, {"j", 64}};
    const FirstRound round = SpmmFirstRound(*waco, sizes);
    auto db = Database::Open(dir + "/t.db", OpenMode::kReadWrite);
    MachineInfo machine;
    machine.cpu_model = "Test CPU";
    machine.cores = 2;
    machine.threads = 2;
    TuningKey key;
    key.fingerprint = "fp";
    key.kernel = "spmm";
    key.machine_id = db->UpsertMachine(machine);
    key.dense = {{"j", 64}};
    MatrixRecord matrix;
    matrix.fingerprint = "fp";
    matrix.name = "m";
    matrix.dims = {4000, 4000};
    matrix.nnz = 40000;
    db->UpsertMatrix(matrix);
    auto store = [&](const std::string& json, const std::string& source, double ms) {
      MeasurementRecord record;
      record.key = key;
      record.expression = waco->expression().text;
      record.schedule_json = json;
      record.median_ms = record.min_ms = record.max_ms = ms;
      record.reps = 5;
      record.verified = true;
      record.source = source;
      db->RecordMeasurement(record);
    };
    store(round.candidates[0].json, "fixed_csr", 3.0);
    store(round.candidates[1].json, "sampled", 1.0);
    const Schedule& fastest = round.candidates[1].schedule;
    std::vector<std::string> moves;
    waco->Neighbours(*waco->FromSchedule(fastest, nullptr), sizes, &moves);
    const std::string won = moves.front();
    std::string lost;
    for (const auto& m : moves) {
      if (m != won) lost = m;
    }
    ASSERT_FALSE(lost.empty());
    store(*NeighboursByMove(*waco, sizes, fastest, won).begin(), kRefinedSource, 0.5);
    store(*NeighboursByMove(*waco, sizes, fastest, lost).begin(), kRefinedSource, 2.0);
    // Faster than the first round by less than the margin: no win.
    store(*NeighboursByMove(*waco, sizes, fastest, lost).rbegin(), kRefinedSource, 0.995);

    const RefinementMoveWeights w = LearnRefinementMoveWeights(*db, "spmm");
    EXPECT_EQ(w.matrices, 1);
    const int tries = NeighboursByMove(*waco, sizes, fastest, lost).size() > 1 ? 3 : 2;
    EXPECT_EQ(w.neighbours, tries);
    // The fastest anchor is a sample: what was learned is about moves from drawn schedules,
    // each rate shrunk towards the kind's, which is shrunk towards one half.
    const auto searched = static_cast<int>(RefinementMoveWeights::Anchor::kSearched);
    EXPECT_TRUE(w.moves[1 - searched].empty());
    const double kind = (1 + kMovePriorTries * 0.5) / (tries + kMovePriorTries);
    EXPECT_DOUBLE_EQ(w.unseen[searched], kind);
    EXPECT_DOUBLE_EQ(w.moves[searched].at(won),
                     (1 + kMovePriorTries * kind) / (1 + kMovePriorTries));
    EXPECT_LT(w.moves[searched].at(lost), kind);
    EXPECT_GT(w.Weight(won, RefinementMoveWeights::Anchor::kSearched, 0),
              w.Weight(lost, RefinementMoveWeights::Anchor::kSearched, 0));
    EXPECT_TRUE(LearnRefinementMoveWeights(*db, "sddmm").empty());
  }
  std::filesystem::remove_all(dir);
}

// The leader round's schedules: one move from the final round's winner alone, whichever
// schedule it is, renumbered as it is.
TEST(Refinement, LeaderNeighboursAreOneMoveFromTheWinnerAlone) {
  const auto waco = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = {{"i", 4000}, {"k", 4000}, {"j", 64}};
  FirstRound round = SpmmFirstRound(*waco, sizes);
  RefinementOptions options;
  options.count = 6;
  const size_t winner = 2;  // not the first round's fastest
  const auto picks = LeaderNeighbours(*waco, sizes, round.candidates, winner, options, "spmm/fp");
  ASSERT_EQ(picks.size(), 6u);
  const std::set<std::string> allowed =
      NeighbourJsons(*waco, sizes, {round.candidates[winner].schedule});
  std::set<std::string> measured;
  for (const auto& c : round.candidates) measured.insert(c.json);
  std::set<std::string> distinct;
  for (const auto& p : picks) {
    EXPECT_EQ(p.source, kLeaderSource);
    EXPECT_TRUE(IsNeighbourSource(p.source));
    EXPECT_TRUE(allowed.count(p.json)) << "not a neighbour of the winner: " << p.json;
    EXPECT_FALSE(measured.count(p.json)) << "measured already: " << p.json;
    EXPECT_TRUE(distinct.insert(p.json).second);
  }
  // A renumbered winner's neighbours are renumbered alike.
  Schedule renumbered = round.candidates[1].schedule;
  renumbered.ordering = OrderingKind::kRcm;
  round.Add(renumbered, "sampled", 0.8);
  for (const auto& p : LeaderNeighbours(*waco, sizes, round.candidates, round.candidates.size() - 1,
                                        options, "spmm/fp"))
    EXPECT_EQ(p.schedule.ordering, OrderingKind::kRcm) << p.json;

  // A winning FixedCSR is a point of the template too: its neighbours are its own.
  const std::set<std::string> near_csr =
      NeighbourJsons(*waco, sizes, {round.candidates[0].schedule});
  const auto around_csr = LeaderNeighbours(*waco, sizes, round.candidates, 0, options, "spmm/fp");
  EXPECT_FALSE(around_csr.empty());
  for (const auto& p : around_csr) EXPECT_TRUE(near_csr.count(p.json)) << p.json;
  EXPECT_TRUE(LeaderNeighbours(*waco, sizes, round.candidates, 99, options, "spmm/fp").empty());
}

// Near a good schedule the better split is most often one step away, so the leader round takes
// each of the winner's splits halved and doubled before it draws among the other moves.
TEST(Refinement, LeaderNeighboursStepEverySplitFirst) {
  const auto waco = WacoTemplate::ForKernel("spmm");
  const Sizes sizes = {{"i", 4000}, {"k", 4000}, {"j", 64}};
  const FirstRound round = SpmmFirstRound(*waco, sizes);
  const size_t winner = 1;
  const Schedule& from = round.candidates[winner].schedule;
  std::set<std::string> steps, others;
  for (const std::string& json : NeighbourJsons(*waco, sizes, {from})) {
    const Schedule near = ParseScheduleText(json, "a neighbour");
    int doubled_or_halved = 0, changed = 0;
    for (const std::string index : {"i", "j", "k"}) {  // a split not written is 1
      const int64_t size = from.splits.count(index) ? from.splits.at(index) : 1;
      const int64_t to = near.splits.count(index) ? near.splits.at(index) : 1;
      changed += to != size;
      doubled_or_halved += to == 2 * size || 2 * to == size;
    }
    (changed == 1 && doubled_or_halved == 1 ? steps : others).insert(json);
  }
  ASSERT_GE(steps.size(), 2u);
  ASSERT_FALSE(others.empty());

  RefinementOptions options;
  options.count = static_cast<int>(steps.size()) + 1;
  const auto picks = LeaderNeighbours(*waco, sizes, round.candidates, winner, options, "spmm/fp");
  ASSERT_EQ(picks.size(), steps.size() + 1);
  for (size_t p = 0; p < steps.size(); ++p)
    EXPECT_TRUE(steps.count(picks[p].json)) << "not a split step: " << picks[p].json;
  EXPECT_TRUE(others.count(picks.back().json)) << "the draw repeats a step: " << picks.back().json;

  options.count = 2;  // fewer than the steps: steps alone
  for (const auto& p : LeaderNeighbours(*waco, sizes, round.candidates, winner, options, "spmm/fp"))
    EXPECT_TRUE(steps.count(p.json)) << p.json;
}

}  // namespace
}  // namespace sparsetune
