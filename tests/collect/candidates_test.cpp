// The schedules collect samples per matrix.
#include <gtest/gtest.h>

#include <set>

#include "collect/candidates.hpp"
#include "ir/kernels.hpp"

namespace sparsetune {
namespace {

TEST(Candidates, FixedCsrFirstThenDistinctDeterministicSamples) {
  const Expression spmm = KernelExpression("spmm");
  const std::map<std::string, int64_t> sizes = {{"i", 500}, {"k", 400}, {"j", 64}};
  CandidateOptions options;
  options.samples = 40;
  const auto a = SampleCandidates("spmm", spmm, sizes, "fingerprint-a", options);
  ASSERT_EQ(a.size(), 41u);
  EXPECT_EQ(a[0].source, "fixed_csr");
  std::set<std::string> hashes;
  for (const auto& c : a) {
    EXPECT_TRUE(hashes.insert(c.hash).second) << "duplicate " << c.json;
    EXPECT_FALSE(c.json.empty());
  }
  const auto again = SampleCandidates("spmm", spmm, sizes, "fingerprint-a", options);
  for (size_t n = 0; n < a.size(); ++n) EXPECT_EQ(a[n].hash, again[n].hash);
  // Another matrix draws other schedules.
  const auto other = SampleCandidates("spmm", spmm, sizes, "fingerprint-b", options);
  int shared = 0;
  for (const auto& c : other) shared += hashes.count(c.hash);
  EXPECT_LT(shared, 20);
}

}  // namespace
}  // namespace sparsetune
