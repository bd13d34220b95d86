#include "common/retry/retry_policy.h"

#include "common/retry/retry_after.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

AttemptOutcome Failure(FailureKind kind) { return AttemptOutcome{kind, std::nullopt}; }

TEST(RetryPolicyTest, FullJitterExponentialDelays) {
  RetryPolicy policy;  // base 500ms, cap 30s, 6 attempts
  const absl::Duration expected_ceilings[] = {absl::Milliseconds(500), absl::Seconds(1),
                                              absl::Seconds(2), absl::Seconds(4), absl::Seconds(8)};
  for (int attempt = 1; attempt <= 5; ++attempt) {
    RetryDecision full =
        Decide(policy, attempt, Failure(FailureKind::kHttp5xx), kNow, absl::InfiniteFuture(), 1.0);
    ASSERT_TRUE(full.retry) << attempt;
    EXPECT_EQ(full.delay, expected_ceilings[attempt - 1]) << attempt;
    RetryDecision half =
        Decide(policy, attempt, Failure(FailureKind::kHttp5xx), kNow, absl::InfiniteFuture(), 0.25);
    EXPECT_EQ(half.delay, expected_ceilings[attempt - 1] / 4) << attempt;
    RetryDecision zero =
        Decide(policy, attempt, Failure(FailureKind::kHttp5xx), kNow, absl::InfiniteFuture(), 0.0);
    EXPECT_TRUE(zero.retry);
    EXPECT_EQ(zero.delay, absl::ZeroDuration());
  }
}

TEST(RetryPolicyTest, CeilingIsCapped) {
  RetryPolicy policy;
  policy.max_attempts = 100;
  policy.base = absl::Seconds(1);
  policy.cap = absl::Seconds(10);
  EXPECT_EQ(BackoffCeiling(policy, 4), absl::Seconds(8));
  EXPECT_EQ(BackoffCeiling(policy, 5), absl::Seconds(10));
  EXPECT_EQ(BackoffCeiling(policy, 90), absl::Seconds(10));
  RetryDecision d =
      Decide(policy, 90, Failure(FailureKind::kTimeout), kNow, absl::InfiniteFuture(), 0.5);
  ASSERT_TRUE(d.retry);
  EXPECT_EQ(d.delay, absl::Seconds(5));
}

TEST(RetryPolicyTest, JitterIsClamped) {
  RetryPolicy policy;
  EXPECT_EQ(
      Decide(policy, 1, Failure(FailureKind::kConnection), kNow, absl::InfiniteFuture(), 7).delay,
      absl::Milliseconds(500));
  EXPECT_EQ(
      Decide(policy, 1, Failure(FailureKind::kConnection), kNow, absl::InfiniteFuture(), -1).delay,
      absl::ZeroDuration());
}

TEST(RetryPolicyTest, RetryAfterIsAMinimumUpToTheCap) {
  RetryPolicy policy;
  AttemptOutcome rate_limited{FailureKind::kHttp429, absl::Seconds(3)};
  // Jittered backoff (0.5 * 500ms) is below Retry-After: Retry-After wins.
  RetryDecision d = Decide(policy, 1, rate_limited, kNow, absl::InfiniteFuture(), 0.5);
  ASSERT_TRUE(d.retry);
  EXPECT_EQ(d.delay, absl::Seconds(3));
  // Backoff above Retry-After: backoff wins (attempt 5 ceiling 8s, jitter 1).
  d = Decide(policy, 5, rate_limited, kNow, absl::InfiniteFuture(), 1.0);
  EXPECT_EQ(d.delay, absl::Seconds(8));
  // A huge Retry-After is honoured only up to the cap.
  AttemptOutcome huge{FailureKind::kHttp429, absl::Hours(2)};
  d = Decide(policy, 1, huge, kNow, absl::InfiniteFuture(), 0.0);
  EXPECT_EQ(d.delay, absl::Seconds(30));
  // Millisecond precision survives (retry-after-ms).
  AttemptOutcome ms{FailureKind::kHttp5xx, absl::Milliseconds(1234)};
  d = Decide(policy, 1, ms, kNow, absl::InfiniteFuture(), 0.0);
  EXPECT_EQ(d.delay, absl::Milliseconds(1234));
}

TEST(RetryPolicyTest, WaitOutRetryAfterRaisesTheBackoffUpToMaxRetryAfter) {
  RetryPolicy policy;
  policy.cap = absl::Seconds(30);
  policy.max_retry_after = absl::Minutes(5);
  const absl::Duration backoff = absl::Seconds(2);
  // No Retry-After: the backoff as it is.
  RetryAfterWait wait = WaitOutRetryAfter(policy, backoff, std::nullopt);
  EXPECT_EQ(wait.delay, backoff);
  EXPECT_FALSE(wait.capped);
  // A shorter Retry-After does not shorten the backoff.
  EXPECT_EQ(WaitOutRetryAfter(policy, backoff, absl::Seconds(1)).delay, backoff);
  // A longer one is waited out in full, beyond Decide's cap of 30 s.
  wait = WaitOutRetryAfter(policy, backoff, absl::Seconds(57));
  EXPECT_EQ(wait.delay, absl::Seconds(57));
  EXPECT_FALSE(wait.capped);
  wait = WaitOutRetryAfter(policy, backoff, absl::Minutes(5));
  EXPECT_EQ(wait.delay, absl::Minutes(5));
  EXPECT_FALSE(wait.capped);
  // A hostile one stops at max_retry_after, and says it was cut.
  wait = WaitOutRetryAfter(policy, backoff, absl::Seconds(99999999999));
  EXPECT_EQ(wait.delay, absl::Minutes(5));
  EXPECT_TRUE(wait.capped);
  // A backoff above max_retry_after is kept (the Retry-After is a floor, not a ceiling).
  EXPECT_EQ(WaitOutRetryAfter(policy, absl::Minutes(6), absl::Hours(1)).delay, absl::Minutes(6));
}

TEST(RetryPolicyTest, RetryableKinds) {
  RetryPolicy policy;
  for (FailureKind kind : {FailureKind::kConnection, FailureKind::kTimeout, FailureKind::kHttp408,
                           FailureKind::kHttp409, FailureKind::kHttp429, FailureKind::kHttp5xx,
                           FailureKind::kMalformedReply}) {
    EXPECT_TRUE(IsRetryable(kind)) << FailureKindName(kind);
    EXPECT_TRUE(Decide(policy, 1, Failure(kind), kNow, absl::InfiniteFuture(), 0.5).retry)
        << FailureKindName(kind);
  }
}

TEST(RetryPolicyTest, NeverRetriesClientErrorsOrCancellation) {
  RetryPolicy policy;
  for (FailureKind kind :
       {FailureKind::kHttp400, FailureKind::kHttp401, FailureKind::kHttp403, FailureKind::kHttp404,
        FailureKind::kOtherHttp4xx, FailureKind::kCancelled}) {
    EXPECT_FALSE(IsRetryable(kind)) << FailureKindName(kind);
    RetryDecision d = Decide(policy, 1, Failure(kind), kNow, absl::InfiniteFuture(), 0.5);
    EXPECT_FALSE(d.retry) << FailureKindName(kind);
    EXPECT_EQ(d.reason, GiveUpReason::kNotRetryable);
    EXPECT_THAT(d.detail, HasSubstr(std::string(FailureKindName(kind))));
  }
}

TEST(RetryPolicyTest, AttemptsAreBounded) {
  RetryPolicy policy;
  policy.max_attempts = 3;
  EXPECT_TRUE(
      Decide(policy, 2, Failure(FailureKind::kHttp5xx), kNow, absl::InfiniteFuture(), 0.5).retry);
  RetryDecision d =
      Decide(policy, 3, Failure(FailureKind::kHttp5xx), kNow, absl::InfiniteFuture(), 0.5);
  EXPECT_FALSE(d.retry);
  EXPECT_EQ(d.reason, GiveUpReason::kAttemptsExhausted);
  EXPECT_THAT(d.detail, HasSubstr("3 attempts"));
  RetryPolicy once;
  once.max_attempts = 1;
  EXPECT_EQ(
      Decide(once, 1, Failure(FailureKind::kTimeout), kNow, absl::InfiniteFuture(), 0.5).reason,
      GiveUpReason::kAttemptsExhausted);
}

TEST(RetryPolicyTest, GivesUpEarlyBeforeTheDeadline) {
  RetryPolicy policy;
  policy.min_attempt_time = absl::Seconds(1);
  // Attempt 3: ceiling 2s, jitter 0.5 -> 1s delay; needs 1s + 1s before the deadline.
  RetryDecision ok =
      Decide(policy, 3, Failure(FailureKind::kHttp5xx), kNow, kNow + absl::Seconds(2), 0.5);
  ASSERT_TRUE(ok.retry);
  EXPECT_EQ(ok.delay, absl::Seconds(1));
  RetryDecision late = Decide(policy, 3, Failure(FailureKind::kHttp5xx), kNow,
                              kNow + absl::Seconds(2) - absl::Milliseconds(1), 0.5);
  EXPECT_FALSE(late.retry);
  EXPECT_EQ(late.reason, GiveUpReason::kDeadline);
  EXPECT_THAT(late.detail, HasSubstr("deadline"));
  // Retry-After pushing past the deadline also gives up.
  AttemptOutcome slow{FailureKind::kHttp429, absl::Seconds(20)};
  EXPECT_EQ(Decide(policy, 1, slow, kNow, kNow + absl::Seconds(10), 0.0).reason,
            GiveUpReason::kDeadline);
}

TEST(RetryPolicyTest, IsPure) {
  RetryPolicy policy;
  AttemptOutcome outcome{FailureKind::kHttp429, absl::Milliseconds(700)};
  RetryDecision a = Decide(policy, 2, outcome, kNow, kNow + absl::Minutes(1), 0.3);
  RetryDecision b = Decide(policy, 2, outcome, kNow, kNow + absl::Minutes(1), 0.3);
  EXPECT_EQ(a.retry, b.retry);
  EXPECT_EQ(a.delay, b.delay);
  EXPECT_EQ(a.delay, absl::Milliseconds(700));  // max(0.3 * 1s, 700ms)
}

}  // namespace
}  // namespace hb
