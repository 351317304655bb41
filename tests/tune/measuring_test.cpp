// Two timings of identical code tell whether a contest's times can be trusted: tune and collect
// measure FixedCSR twice and compare.
#include <gtest/gtest.h>

#include "tune/measuring.hpp"

namespace sparsetune {
namespace {

RunResult Timed(double median_ms) {
  RunResult r;
  r.time.median_ms = median_ms;
  return r;
}

TEST(Twins, AgreeWithinTheLimitAndDisagreeBeyondIt) {
  EXPECT_EQ(TwinDisagreement(Timed(1.0), Timed(1.05), 0.10, 0.002), "");
  EXPECT_EQ(TwinDisagreement(Timed(1.05), Timed(1.0), 0.10, 0.002), "");
  const std::string apart = TwinDisagreement(Timed(1.0), Timed(1.2), 0.10, 0.002);
  EXPECT_NE(apart.find("1 and 1.2 ms"), std::string::npos) << apart;
  EXPECT_NE(TwinDisagreement(Timed(1.3), Timed(1.0), 0.10, 0.002), "");
}

TEST(Twins, DifferencesWithinTheTimersGrainAreNoise) {
  // 15% apart, but by 1.5 us.
  EXPECT_EQ(TwinDisagreement(Timed(0.010), Timed(0.0115), 0.10, 0.002), "");
  EXPECT_NE(TwinDisagreement(Timed(0.010), Timed(0.0130), 0.10, 0.002), "");
}

TEST(Twins, ATwinThatDidNotRunSaysNothing) {
  RunResult failed = Timed(5.0);
  failed.status = RunStatus::kTimedOut;
  EXPECT_EQ(TwinDisagreement(Timed(1.0), failed, 0.10, 0.002), "");
}

}  // namespace
}  // namespace sparsetune
