// ReplySignalOf a chat reply: what the policy sampler's queue learns from one call.
#include "llm/chat_reply_signal.h"

#include "gtest/gtest.h"

namespace hb {
namespace {

TEST(ChatReplySignalTest, AReplyCarriesItsTokensAndRateLimitHeaders) {
  ChatResult reply;
  reply.usage.prompt_tokens = 1200;
  reply.usage.cached_tokens = 1000;
  reply.usage.completion_tokens = 80;
  reply.rate_limit.remaining_requests = 7;
  reply.rate_limit.reset_requests = absl::Milliseconds(2500);
  const ReplySignal signal = ReplySignalOf(reply);
  EXPECT_TRUE(signal.ok);
  EXPECT_FALSE(signal.rate_limited);
  EXPECT_EQ(signal.attempts, 1);
  EXPECT_EQ(signal.tokens, 1280);  // prompt (cached included) + completion, as the grader's
  ASSERT_TRUE(signal.rate_limit.has_value());
  EXPECT_TRUE(signal.rate_limit->has_requests);
  EXPECT_EQ(signal.rate_limit->remaining_requests, 7);
  EXPECT_EQ(signal.rate_limit->reset_requests_ms, 2500);
  EXPECT_FALSE(signal.rate_limit->has_tokens);
  EXPECT_EQ(signal.rate_limit->age_ms, 0);
}

TEST(ChatReplySignalTest, AReplyWithoutHeadersReportsNoBudget) {
  EXPECT_FALSE(ReplySignalOf(ChatResult{}).rate_limit.has_value());
}

TEST(ChatReplySignalTest, A429IsRateLimitedAndHoldsForItsRetryAfter) {
  const absl::Status refused =
      WithAttemptOutcome(absl::ResourceExhaustedError("http 429"),
                         AttemptOutcome{FailureKind::kHttp429, absl::Seconds(3)});
  const ReplySignal signal = ReplySignalOf(absl::StatusOr<ChatResult>(refused));
  EXPECT_FALSE(signal.ok);
  EXPECT_TRUE(signal.rate_limited);
  EXPECT_EQ(signal.retry_after, absl::Seconds(3));
  EXPECT_EQ(signal.tokens, 0);
}

TEST(ChatReplySignalTest, AnyRetryAfterHoldsDispatchButOnlyA429IsRateLimited) {
  const absl::Status busy = WithAttemptOutcome(
      absl::UnavailableError("http 503"), AttemptOutcome{FailureKind::kHttp5xx, absl::Seconds(9)});
  const ReplySignal signal = ReplySignalOf(absl::StatusOr<ChatResult>(busy));
  EXPECT_FALSE(signal.rate_limited);
  EXPECT_EQ(signal.retry_after, absl::Seconds(9));
  EXPECT_FALSE(ReplySignalOf(absl::StatusOr<ChatResult>(absl::UnavailableError("reset")))
                   .retry_after.has_value());
}

}  // namespace
}  // namespace hb
