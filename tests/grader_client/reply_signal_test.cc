// ReplySignalOf a GradeItem outcome: what run's dispatcher and hb-env's queue learn from it.
#include "grader_client/reply_signal.h"

#include "common/retry/retry_status.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

using healthbench::grader::v1::GradeItemResponse;

GradeItemResponse Graded(bool from_cache) {
  GradeItemResponse response;
  response.set_attempts(2);
  response.set_rate_limited_attempts(1);
  response.set_from_cache(from_cache);
  response.mutable_usage()->set_prompt_tokens(1000);
  response.mutable_usage()->set_cached_prompt_tokens(600);
  response.mutable_usage()->set_completion_tokens(50);
  auto* rl = response.mutable_rate_limit();
  rl->set_has_requests(true);
  rl->set_remaining_requests(40);
  rl->set_reset_requests_ms(1500);
  rl->set_age_ms(20);
  return response;
}

TEST(ReplySignalTest, AGradedReplyTeachesItsTokensAttemptsAndBudget) {
  const ReplySignal signal = ReplySignalOf(Graded(/*from_cache=*/false));
  EXPECT_TRUE(signal.ok);
  EXPECT_TRUE(signal.rate_limited);
  EXPECT_EQ(signal.attempts, 2);
  EXPECT_EQ(signal.tokens, 1050);
  ASSERT_TRUE(signal.rate_limit.has_value());
  EXPECT_EQ(signal.rate_limit->remaining_requests, 40);
  EXPECT_EQ(signal.rate_limit->reset_requests_ms, 1500);
  EXPECT_EQ(signal.rate_limit->age_ms, 20);
}

TEST(ReplySignalTest, AVerdictCacheHitTeachesNoTokens) {
  // The usage is what the hit saved, not what it spent.
  EXPECT_EQ(ReplySignalOf(Graded(/*from_cache=*/true)).tokens, 0);
}

TEST(ReplySignalTest, AnErrorWithARetryDelayHoldsDispatch) {
  absl::Status exhausted = absl::ResourceExhaustedError("http_429");
  SetRetryDelay(exhausted, absl::Seconds(45));
  ReplySignal signal = ReplySignalOf(exhausted);
  EXPECT_FALSE(signal.ok);
  EXPECT_TRUE(signal.rate_limited);
  EXPECT_EQ(signal.retry_after, absl::Seconds(45));
  absl::Status unavailable = absl::UnavailableError("grader restarting");
  SetRetryDelay(unavailable, absl::Seconds(2));
  signal = ReplySignalOf(unavailable);
  EXPECT_FALSE(signal.rate_limited);
  EXPECT_EQ(signal.retry_after, absl::Seconds(2));
}

TEST(ReplySignalTest, AServerBusyRefusalIsRetriedButIsNotARateLimit) {
  // What a grader replica past --max-concurrent-rpcs answers (common/rpc/concurrency_limit.h).
  absl::Status busy = absl::ResourceExhaustedError("server busy: 1024 RPCs in progress");
  SetRetryDelay(busy, absl::Seconds(1));
  MarkServerBusy(busy);
  const ReplySignal signal = ReplySignalOf(busy);
  EXPECT_FALSE(signal.ok);
  EXPECT_FALSE(signal.rate_limited);  // the window keeps its size
  EXPECT_EQ(signal.retry_after, absl::Seconds(1));
}

TEST(ReplySignalTest, AnUnmarkedResourceExhaustedIsARateLimitEvenWithoutADelay) {
  const ReplySignal signal = ReplySignalOf(absl::ResourceExhaustedError("http_429"));
  EXPECT_TRUE(signal.rate_limited);
  EXPECT_EQ(signal.retry_after, std::nullopt);
}

}  // namespace
}  // namespace hb
