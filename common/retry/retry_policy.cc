#include "common/retry/retry_policy.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace hb {

absl::string_view FailureKindName(FailureKind kind) {
  switch (kind) {
    case FailureKind::kConnection:
      return "connection";
    case FailureKind::kTimeout:
      return "timeout";
    case FailureKind::kHttp408:
      return "http_408";
    case FailureKind::kHttp409:
      return "http_409";
    case FailureKind::kHttp429:
      return "http_429";
    case FailureKind::kHttp5xx:
      return "http_5xx";
    case FailureKind::kMalformedReply:
      return "malformed_reply";
    case FailureKind::kHttp400:
      return "http_400";
    case FailureKind::kHttp401:
      return "http_401";
    case FailureKind::kHttp403:
      return "http_403";
    case FailureKind::kHttp404:
      return "http_404";
    case FailureKind::kOtherHttp4xx:
      return "http_4xx";
    case FailureKind::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

bool IsRetryable(FailureKind kind) {
  switch (kind) {
    case FailureKind::kConnection:
    case FailureKind::kTimeout:
    case FailureKind::kHttp408:
    case FailureKind::kHttp409:
    case FailureKind::kHttp429:
    case FailureKind::kHttp5xx:
    case FailureKind::kMalformedReply:
      return true;
    case FailureKind::kHttp400:
    case FailureKind::kHttp401:
    case FailureKind::kHttp403:
    case FailureKind::kHttp404:
    case FailureKind::kOtherHttp4xx:
    case FailureKind::kCancelled:
      return false;
  }
  return false;
}

absl::Duration BackoffCeiling(const RetryPolicy& policy, int attempts_made) {
  // Doubling past the cap (or past 2^62 ns) is pointless; stop early to avoid overflow.
  absl::Duration ceiling = policy.base;
  for (int i = 1; i < attempts_made && ceiling < policy.cap; ++i) ceiling *= 2;
  return std::min(ceiling, policy.cap);
}

RetryDecision Decide(const RetryPolicy& policy, int attempts_made, const AttemptOutcome& outcome,
                     absl::Time now, absl::Time deadline, double jitter01) {
  RetryDecision decision;
  if (!IsRetryable(outcome.kind)) {
    decision.reason = GiveUpReason::kNotRetryable;
    decision.detail = absl::StrFormat("%s is not retryable", FailureKindName(outcome.kind));
    return decision;
  }
  if (attempts_made >= policy.max_attempts) {
    decision.reason = GiveUpReason::kAttemptsExhausted;
    decision.detail = absl::StrFormat("retry budget of %d attempts exhausted", policy.max_attempts);
    return decision;
  }
  jitter01 = std::clamp(jitter01, 0.0, 1.0);
  absl::Duration delay = BackoffCeiling(policy, attempts_made) * jitter01;
  if (outcome.retry_after.has_value()) {
    delay = std::max(delay, std::min(*outcome.retry_after, policy.cap));
  }
  delay = std::max(delay, absl::ZeroDuration());
  if (deadline != absl::InfiniteFuture() && now + delay + policy.min_attempt_time > deadline) {
    decision.reason = GiveUpReason::kDeadline;
    decision.detail = absl::StrFormat(
        "the next attempt (after a %s backoff) could not finish before the deadline (%s left)",
        absl::FormatDuration(delay),
        absl::FormatDuration(std::max(deadline - now, absl::ZeroDuration())));
    return decision;
  }
  decision.retry = true;
  decision.delay = delay;
  return decision;
}

}  // namespace hb
