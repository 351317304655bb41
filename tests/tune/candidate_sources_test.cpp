// Where candidates come from: the sampler's determinism, and one gathering for every source.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "base/caches.hpp"
#include "base/threads.hpp"
#include "base/vector_registers.hpp"
#include "cli/cli_support.hpp"
#include "db/database.hpp"
#include "ir/kernels.hpp"
#include "measure/runner.hpp"
#include "support/test_data.hpp"
#include "tensor/pack.hpp"
#include "tune/candidate_sources.hpp"
#include "tune/candidates.hpp"

namespace sparsetune {
namespace {

std::vector<TuneCandidate> FixedCsrThenSamples(const std::string& fingerprint, int samples) {
  static const Expression spmm = KernelExpression("spmm");
  CandidateContext context;
  context.kernel = context.kernel_key = "spmm";
  context.expression = &spmm;
  context.sizes = {{"i", 500}, {"k", 400}, {"j", 64}};
  context.fingerprint = fingerprint;
  SampleOptions options;
  options.samples = samples;
  const auto fixed_csr = FixedCsrSource();
  const auto sampled = SampledSource(options);
  return GatherCandidates({fixed_csr.get(), sampled.get()}, context).candidates;
}

TEST(Candidates, FixedCsrFirstThenDistinctDeterministicSamples) {
  const auto a = FixedCsrThenSamples("fingerprint-a", 40);
  ASSERT_EQ(a.size(), 41u);
  EXPECT_EQ(a[0].source, "fixed_csr");
  std::set<std::string> hashes;
  for (const auto& c : a) {
    EXPECT_TRUE(hashes.insert(ScheduleHash(c.json)).second) << "duplicate " << c.json;
    EXPECT_FALSE(c.json.empty());
    if (&c != &a[0]) {
      EXPECT_EQ(c.source, "sampled");
    }
  }
  const auto again = FixedCsrThenSamples("fingerprint-a", 40);
  for (size_t n = 0; n < a.size(); ++n) EXPECT_EQ(a[n].json, again[n].json);
  // Another matrix draws other schedules.
  const auto other = FixedCsrThenSamples("fingerprint-b", 40);
  int shared = 0;
  for (const auto& c : other) shared += hashes.count(ScheduleHash(c.json));
  EXPECT_LT(shared, 20);
}

// `tune --samples N` measures N random schedules: those whose format the packer refuses (a
// dense level over a long dimension of a sparse matrix) are drawn again, deterministically.
TEST(Candidates, TuneSamplesOnlyFormatsTheOperandPacksIn) {
  static const Expression sddmm = KernelExpression("sddmm");
  const CooTensor matrix = testing::RandomSparse({6000, 5000}, 9000, 17);
  auto sample = [&](bool packable_only) {
    CandidateContext context;
    context.kernel = context.kernel_key = "sddmm";
    context.expression = &sddmm;
    context.sizes = {{"i", 6000}, {"j", 5000}, {"k", 64}};
    context.tensor = &matrix;
    context.fingerprint = "sparse";
    SampleOptions options;
    options.samples = 24;
    options.packable_only = packable_only;
    return SampledSource(options)->Propose(context).value();
  };
  auto packs = [&](const Schedule& s) {
    const LowerOutcome lowered = Lower(sddmm, s);
    return lowered.nest && Pack(matrix, lowered.nest->storage, DType::kF32).packed != nullptr;
  };
  int refused = 0;
  for (const auto& c : sample(false)) refused += !packs(c.schedule);
  ASSERT_GT(refused, 0) << "no sample refused: the test shows nothing";
  const auto screened = sample(true);
  ASSERT_EQ(screened.size(), 24u);
  for (const auto& c : screened) EXPECT_TRUE(packs(c.schedule)) << c.json;
  const auto again = sample(true);
  for (size_t n = 0; n < screened.size(); ++n) EXPECT_EQ(again[n].json, screened[n].json);
}

TEST(Candidates, SourcesWithNothingToSayAreNotCountedAsUsed) {
  const Expression mttkrp = KernelExpression("mttkrp");
  CooTensor tensor;
  tensor.Reset({20, 17, 23});
  const int32_t c[3] = {1, 2, 3};
  tensor.Append(c, 1.0);
  CandidateContext context;
  context.kernel = context.kernel_key = "mttkrp";
  context.expression = &mttkrp;
  context.sizes = {{"i", 20}, {"k", 17}, {"l", 23}, {"j", 16}};
  context.tensor = &tensor;
  const auto fixed_csr = FixedCsrSource();
  const auto groupcoo = GroupCooSource();  // spmv and spmm only
  const auto rules = LibraryRuleSource();
  const GatheredCandidates gathered =
      GatherCandidates({fixed_csr.get(), groupcoo.get(), rules.get()}, context);
  EXPECT_EQ(gathered.sources_used, (std::vector<std::string>{"fixed_csr", "heuristic"}));
  ASSERT_GE(gathered.candidates.size(), 2u);
  EXPECT_EQ(gathered.candidates[0].source, "fixed_csr");
}

// The rules' schedules with 2-D tiles: a tile's rows (i0) below a compressed tile of columns.
std::vector<Schedule> TileRules(const std::string& kernel, const CooTensor& matrix,
                                const std::map<std::string, int64_t>& dense) {
  const Expression e = KernelExpression(kernel);
  CandidateContext context;
  context.kernel = context.kernel_key = kernel;
  context.expression = &e;
  context.sizes = ResolveIndexSizes(e, matrix.dims, dense);
  context.tensor = &matrix;
  const auto rules = LibraryRuleSource();
  std::vector<Schedule> tiles;
  for (auto& c : GatherCandidates({rules.get()}, context).candidates) {
    if (c.schedule.format.size() == 4 && c.schedule.format[2].first == "i0")
      tiles.push_back(std::move(c.schedule));
  }
  return tiles;
}

// A pruned layer's pattern (10% dense) takes 2-D tiles for SpMM and SDDMM, and they compute what
// the reference does; a pattern with a handful of entries per row does not, as it would pay a
// tile's bookkeeping for nothing.
TEST(Candidates, TwoDimensionalTilesOnlyOnDensePatterns) {
  const CooTensor dense = testing::RandomSparse({512, 4096}, 210000, 41);
  const CooTensor sparse = testing::RandomSparse({512, 4096}, 8000, 42);
  testing::TempDir dir;
  Jit jit(dir.path() + "/jit");
  for (const auto& [kernel, dense_sizes] :
       std::vector<std::pair<std::string, std::map<std::string, int64_t>>>{
           {"spmm", {{"j", 64}}}, {"sddmm", {{"k", 256}}}, {"sddmm_nt", {{"k", 256}}}}) {
    const std::vector<Schedule> tiles = TileRules(kernel, dense, dense_sizes);
    ASSERT_FALSE(tiles.empty()) << kernel;
    const Expression e = KernelExpression(kernel);
    KernelRunner runner(e, dense, ResolveIndexSizes(e, dense.dims, dense_sizes), DType::kF32, jit);
    for (const Schedule& tile : tiles) {
      RunOptions options;
      options.time = false;
      const RunResult r = runner.Run(tile, options);
      EXPECT_TRUE(r.verified) << kernel << " " << tile.CanonicalJson() << ": " << r.message;
    }
    EXPECT_TRUE(TileRules(kernel, sparse, dense_sizes).empty()) << kernel;
  }
}

// SDDMM's rules hold column segments that each thread owns, sized by the core's L2 (C's slice
// half, all and twice of it) whatever the last-level cache reports, and they compute what the
// reference does.
TEST(Candidates, SddmmRulesHoldSegmentsSizedByTheL2) {
  const CooTensor matrix = testing::RandomSparse({3000, 20000}, 30000, 43);
  const Expression e = KernelExpression("sddmm");
  const auto sizes = ResolveIndexSizes(e, matrix.dims, {{"k", 256}});
  std::set<int64_t> widths;
  testing::TempDir dir;
  Jit jit(dir.path() + "/jit");
  KernelRunner runner(e, matrix, sizes, DType::kF32, jit);
  for (const TuneCandidate& c : LibraryRuleCandidates("sddmm", e, sizes, matrix.nnz(), 4)) {
    if (c.schedule.parallel != "j1") continue;
    widths.insert(c.schedule.splits.at("j"));
    RunOptions options;
    options.time = false;
    EXPECT_TRUE(runner.Run(c.schedule, options).verified) << c.json;
  }
  auto columns_within = [](int64_t bytes) {  // a power of two, C's rows of 1 KiB
    int64_t columns = 1;
    while (columns * 2 * 1024 <= bytes) columns *= 2;
    return columns;
  };
  const int64_t l2 = MachineCaches().l2;
  for (int64_t budget : {l2 / 2, l2, 2 * l2}) {
    const int64_t width = columns_within(budget);
    if (width >= 64 && 2 * width <= 20000) EXPECT_TRUE(widths.count(width)) << width;
  }
}

// SpMM's block rows of 2, 4 and 8 keep a tile of each row's slice of C in half the vector
// registers (2 x 128, 4 x 64 and 8 x 32 floats with AVX-512), and they compute what the
// reference does.
TEST(Candidates, SpmmBlockRowsFillHalfTheVectorRegisters) {
  const CooTensor matrix = testing::RandomSparse({600, 500}, 6000, 44);
  const Expression e = KernelExpression("spmm");
  const auto sizes = ResolveIndexSizes(e, matrix.dims, {{"j", 256}});
  testing::TempDir dir;
  Jit jit(dir.path() + "/jit");
  KernelRunner runner(e, matrix, sizes, DType::kF32, jit);
  std::map<int64_t, int64_t> width_of_rows;
  for (const TuneCandidate& c : LibraryRuleCandidates("spmm", e, sizes, matrix.nnz(), 4)) {
    if (!c.schedule.splits.count("i") || c.schedule.splits.count("k")) continue;
    width_of_rows[c.schedule.splits.at("i")] = c.schedule.splits.at("j");
    RunOptions options;
    options.time = false;
    EXPECT_TRUE(runner.Run(c.schedule, options).verified) << c.json;
  }
  const VectorRegisters& registers = MachineVectorRegisters();
  const int64_t values = registers.count / 2 * registers.bytes / 4;
  for (int64_t rows : {2, 4, 8}) {
    ASSERT_TRUE(width_of_rows.count(rows)) << rows;
    EXPECT_EQ(width_of_rows[rows] * rows, values) << rows;
  }
}

// Given the matrix, SpMM's block rows are offered where the rows of a block share columns (a
// band) and not where they share almost none (uniformly scattered entries).
TEST(Candidates, SpmmBlockRowsOnlyWhereRowsShareColumns) {
  const CooTensor band = testing::Band(2000, 8);
  const CooTensor scattered = testing::RandomSparse({2000, 200000}, 20000, 45);
  const Expression e = KernelExpression("spmm");
  auto block_rows = [&](const CooTensor& matrix) {
    const auto sizes = ResolveIndexSizes(e, matrix.dims, {{"j", 256}});
    std::set<int64_t> rows;
    for (const TuneCandidate& c :
         LibraryRuleCandidates("spmm", e, sizes, matrix.nnz(), 4, &matrix)) {
      if (c.schedule.splits.count("i") && !c.schedule.splits.count("k"))
        rows.insert(c.schedule.splits.at("i"));
    }
    return rows;
  };
  EXPECT_EQ(block_rows(band), (std::set<int64_t>{2, 4, 8}));
  EXPECT_TRUE(block_rows(scattered).empty());
}

// SpMM's L2-sized column segments: on a pattern as dense as a pruned layer, B's slices of an
// eighth, a quarter and half of L2 (rows of 1 KiB at j 256), each computing what the reference
// does; on a sparse one of as many columns, none.
TEST(Candidates, SpmmL2SegmentsOnlyOnDenseEnoughPatterns) {
  const int64_t columns = 8 * MachineCaches().l2 / 1024;  // B twice the L2 at j 256
  const CooTensor dense = testing::RandomSparse({300, columns}, 300 * columns / 20, 46);
  const CooTensor sparse = testing::RandomSparse({300, columns}, 600, 47);
  const Expression e = KernelExpression("spmm");
  testing::TempDir dir;
  Jit jit(dir.path() + "/jit");
  auto l2_widths = [&](const CooTensor& matrix, bool verify) {
    const auto sizes = ResolveIndexSizes(e, matrix.dims, {{"j", 256}});
    KernelRunner runner(e, matrix, sizes, DType::kF32, jit);
    std::set<int64_t> widths;
    for (const TuneCandidate& c : LibraryRuleCandidates("spmm", e, sizes, matrix.nnz(), 4)) {
      if (!c.schedule.splits.count("k") || c.schedule.splits.count("i")) continue;
      const int64_t width = c.schedule.splits.at("k");
      if (width * 1024 > MachineCaches().l2) continue;  // the last-level cache's segments
      widths.insert(width);
      RunOptions options;
      options.time = false;
      if (verify) EXPECT_TRUE(runner.Run(c.schedule, options).verified) << c.json;
    }
    return widths;
  };
  const int64_t l2 = MachineCaches().l2;
  std::set<int64_t> expected;
  for (int64_t budget : {l2 / 8, l2 / 4, l2 / 2}) {
    int64_t width = 1;
    while (width * 2 * 1024 <= budget) width *= 2;
    if (width >= 64) expected.insert(width);
  }
  EXPECT_EQ(l2_widths(dense, true), expected);
  EXPECT_TRUE(l2_widths(sparse, false).empty());
}

// A schedule that names every thread by their count runs the kernel of one that says 0 (all):
// it is not measured twice. One thread is another kernel.
TEST(Candidates, SchedulesThatRunTheSameKernelHereAreOneCandidate) {
  const Expression spmv = KernelExpression("spmv");
  Schedule all = FixedCsrSchedule(spmv);
  ASSERT_FALSE(all.parallel.empty());
  all.threads = 0;
  Schedule counted = all;
  counted.threads = HardwareThreads();
  Schedule one = all;
  one.threads = 1;
  EXPECT_EQ(KernelJsonHere(all), KernelJsonHere(counted));
  std::vector<TuneCandidate> list;
  AddDistinct(list, {all, "", "heuristic"});
  AddDistinct(list, {counted, "", "model"});
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].source, "heuristic");  // the first proposal, which says 0, stays
  EXPECT_EQ(list[0].schedule.threads, 0);
  AddDistinct(list, {one, "", "model"});
  EXPECT_EQ(list.size(), HardwareThreads() > 1 ? 2u : 1u);
}

// Schedules given by hand, as a source that came earlier.
class GivenSource : public CandidateSource {
 public:
  explicit GivenSource(std::vector<TuneCandidate> given) : given_(std::move(given)) {}
  std::string tag() const override { return "given"; }
  std::optional<std::vector<TuneCandidate>> Propose(const CandidateContext&) override {
    return given_;
  }

 private:
  std::vector<TuneCandidate> given_;
};

// The model's top k are k schedules that no earlier source proposed, also when it ranks one of
// theirs (a rule it learned) among its best.
TEST(Candidates, TheModelsPicksAreSchedulesNoEarlierSourceProposed) {
  // The search graph is built once and kept with the compiled kernels of the tests.
  setenv("SPARSETUNE_CACHE",
         (std::filesystem::path(SPARSETUNE_BINARY).parent_path() / "test-jit-cache").c_str(), 1);
  const Expression spmv = KernelExpression("spmv");
  const CooTensor tensor = testing::Band(3000, 3);
  CandidateContext context;
  context.kernel = context.kernel_key = "spmv";
  context.expression = &spmv;
  context.sizes = {{"i", 3000}, {"k", 3000}};
  context.tensor = &tensor;
  context.fingerprint = "banded";
  const std::string model_dir = std::string(SPARSETUNE_SOURCE_DIR) + "/models/spmv";
  ModelTopKSource alone(model_dir, 6, 64);
  const std::vector<TuneCandidate> best = GatherCandidates({&alone}, context).candidates;
  ASSERT_EQ(best.size(), 6u);

  // An earlier source proposes the model's first and third picks.
  GivenSource earlier({{best[0].schedule, "", "given"}, {best[2].schedule, "", "given"}});
  ModelTopKSource model(model_dir, 6, 64);
  const GatheredCandidates gathered = GatherCandidates({&earlier, &model}, context);
  EXPECT_EQ(gathered.sources_used, (std::vector<std::string>{"given", "model"}));
  ASSERT_EQ(gathered.candidates.size(), 8u);
  EXPECT_EQ(gathered.candidates[2].json, best[1].json);  // the model's next best move up
  EXPECT_EQ(gathered.candidates[3].json, best[3].json);
  EXPECT_GT(model.evaluations(), 0);

  // A rule that says 0 threads where the model's pick counts them proposes the same kernel:
  // the model's place goes to its next pick.
  const auto counted = std::find_if(best.begin(), best.end(), [](const TuneCandidate& c) {
    return !c.schedule.parallel.empty() && c.schedule.threads == HardwareThreads();
  });
  ASSERT_NE(counted, best.end()) << "no pick of the model runs on every thread";
  Schedule all = counted->schedule;
  all.threads = 0;
  GivenSource rule({{all, "", "given"}});
  ModelTopKSource after_rule(model_dir, 6, 64);
  const GatheredCandidates with_rule = GatherCandidates({&rule, &after_rule}, context);
  unsetenv("SPARSETUNE_CACHE");
  ASSERT_EQ(with_rule.candidates.size(), 7u);
  std::set<std::string> kernels;
  for (const auto& c : with_rule.candidates)
    EXPECT_TRUE(kernels.insert(KernelJsonHere(c.schedule)).second) << "twice: " << c.json;
}

}  // namespace
}  // namespace sparsetune
