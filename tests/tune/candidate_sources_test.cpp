// Where candidates come from: the sampler's determinism, and one gathering for every source.
#include <gtest/gtest.h>

#include <set>

#include "db/database.hpp"
#include "ir/kernels.hpp"
#include "tune/candidate_sources.hpp"

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
    if (&c != &a[0]) EXPECT_EQ(c.source, "sampled");
  }
  const auto again = FixedCsrThenSamples("fingerprint-a", 40);
  for (size_t n = 0; n < a.size(); ++n) EXPECT_EQ(a[n].json, again[n].json);
  // Another matrix draws other schedules.
  const auto other = FixedCsrThenSamples("fingerprint-b", 40);
  int shared = 0;
  for (const auto& c : other) shared += hashes.count(ScheduleHash(c.json));
  EXPECT_LT(shared, 20);
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

}  // namespace
}  // namespace sparsetune
