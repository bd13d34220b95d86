#include "common/rpc/concurrency_limit.h"

#include <utility>

#include "common/retry/retry_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Optional;

TEST(ConcurrencyLimitTest, RefusesPastTheLimitWithARetryDelayAndFreesOnRelease) {
  ConcurrencyLimit limit(3, absl::Seconds(2), "RPCs in progress (--max-concurrent-rpcs)");
  absl::StatusOr<ConcurrencyLimit::Permit> two = limit.TryAcquire(2);
  ASSERT_TRUE(two.ok());
  absl::StatusOr<ConcurrencyLimit::Permit> one = limit.TryAcquire(1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(limit.in_progress(), 3);
  absl::StatusOr<ConcurrencyLimit::Permit> refused = limit.TryAcquire(1);
  EXPECT_THAT(refused.status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("3 RPCs in progress (--max-concurrent-rpcs) and 1 more asked; "
                                 "the limit is 3; retry after 2s")));
  EXPECT_THAT(RetryDelay(refused.status()), Optional(absl::Seconds(2)));
  // The server's own capacity, not an upstream's rate limit.
  EXPECT_TRUE(IsServerBusy(refused.status()));
  {
    ConcurrencyLimit::Permit moved = *std::move(two);
    two->Release();  // moved-from: releases nothing
    EXPECT_EQ(limit.in_progress(), 3);
  }
  EXPECT_EQ(limit.in_progress(), 1);
  EXPECT_TRUE(limit.TryAcquire(2).ok());  // released at once: the temporary dies
  EXPECT_EQ(limit.in_progress(), 1);
}

TEST(ConcurrencyLimitTest, ZeroAdmitsEverything) {
  ConcurrencyLimit limit(0, absl::Seconds(1), "x");
  absl::StatusOr<ConcurrencyLimit::Permit> many = limit.TryAcquire(1 << 20);
  EXPECT_TRUE(many.ok());
}

}  // namespace
}  // namespace hb
