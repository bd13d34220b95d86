#include "common/base/rate_limited_log.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"

namespace hb {
namespace {

using ::hb::testing::FakeClock;
using ::testing::Optional;

TEST(RateLimitedLogTest, AtMostNLinesPerIntervalPerKindThenASuppressedCount) {
  FakeClock clock;
  RateLimitedLog log(clock, RateLimitedLogOptions{2, absl::Seconds(10)});
  EXPECT_THAT(log.Admit("INVALID_ARGUMENT"), Optional(std::string("")));
  EXPECT_THAT(log.Admit("INVALID_ARGUMENT"), Optional(std::string("")));
  for (int i = 0; i < 7; ++i) EXPECT_EQ(log.Admit("INVALID_ARGUMENT"), std::nullopt);
  // Another kind has its own budget.
  EXPECT_THAT(log.Admit("UNAUTHENTICATED"), Optional(std::string("")));
  clock.Advance(absl::Seconds(9));
  EXPECT_EQ(log.Admit("INVALID_ARGUMENT"), std::nullopt);
  clock.Advance(absl::Seconds(1));  // a new interval
  EXPECT_THAT(log.Admit("INVALID_ARGUMENT"), Optional(std::string(" (suppressed 8 similar)")));
  EXPECT_THAT(log.Admit("INVALID_ARGUMENT"), Optional(std::string("")));
  EXPECT_EQ(log.Admit("INVALID_ARGUMENT"), std::nullopt);
  EXPECT_EQ(log.suppressed_total("INVALID_ARGUMENT"), 9);
  EXPECT_EQ(log.suppressed_total("UNAUTHENTICATED"), 0);
}

TEST(RateLimitedLogTest, ZeroLinesSuppressesEverything) {
  FakeClock clock;
  RateLimitedLog log(clock, RateLimitedLogOptions{0, absl::Seconds(1)});
  EXPECT_EQ(log.Admit("x"), std::nullopt);
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(log.Admit("x"), std::nullopt);
  EXPECT_EQ(log.suppressed_total("x"), 2);
}

}  // namespace
}  // namespace hb
