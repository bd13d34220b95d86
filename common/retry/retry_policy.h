// The retry policy for upstream calls: a pure function from (policy, attempts made, what went
// wrong, now, deadline, a jitter draw) to "retry after this delay" or "give up, because".
//
// Backoff is exponential with full jitter: delay = jitter01 * min(cap, base * 2^(attempt-1)).
// A server's Retry-After is honoured as a minimum (but never beyond the cap). No clock, no
// randomness and no sleeping live here: callers pass `now` and `jitter01` in, so tests assert
// exact delays.
#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hb {

// How an attempt failed.
enum class FailureKind {
  kConnection,      // refused, reset, DNS, TLS handshake: nothing usable came back
  kTimeout,         // the attempt's own timeout expired
  kHttp408,         // Request Timeout
  kHttp409,         // Conflict
  kHttp429,         // Too Many Requests (rate limit or quota)
  kHttp5xx,         // any 5xx
  kMalformedReply,  // 200 but the reply is unusable (not JSON, null content, no verdict)
  kHttp400,         // Bad Request (e.g. context overflow): the same request fails again
  kHttp401,         // Unauthorized (bad key)
  kHttp403,         // Forbidden
  kHttp404,         // Not Found (wrong URL or model)
  kOtherHttp4xx,    // any other 4xx
  kCancelled,       // the caller cancelled
};

// A short stable name ("connection", "timeout", "http_429", "malformed_reply", ...), used in
// messages and as a metrics label.
absl::string_view FailureKindName(FailureKind kind);

// True for the kinds worth another attempt: connection, timeout, 408, 409, 429, 5xx and
// malformed replies. 400/401/403/404, other 4xx and cancellation are final.
bool IsRetryable(FailureKind kind);

// What went wrong in one attempt.
struct AttemptOutcome {
  FailureKind kind = FailureKind::kConnection;
  // The server's Retry-After (or retry-after-ms), when it sent one.
  std::optional<absl::Duration> retry_after;
};

// Bounds and shape of the retries.
struct RetryPolicy {
  // Attempts in total, the first one included (1 means never retry).
  int max_attempts = 6;
  // First backoff ceiling; doubles per attempt.
  absl::Duration base = absl::Milliseconds(500);
  // Largest ceiling, and the largest Retry-After honoured by Decide (the Grader waits out a
  // 429's Retry-After up to max_retry_after, within the caller's deadline).
  absl::Duration cap = absl::Seconds(30);
  // The longest Retry-After (or retry delay) ever waited out: a fixed-window limiter may say
  // "come back in 57 s", but a broken or hostile upstream's "99999999999" must not park a call
  // or a run forever. Longer values are capped here (and logged by the caller).
  absl::Duration max_retry_after = absl::Minutes(5);
  // Do not start an attempt with less than this left before the caller's deadline.
  absl::Duration min_attempt_time = absl::Seconds(1);
};

// Why Decide gave up.
enum class GiveUpReason {
  kNone,               // not given up: retry
  kNotRetryable,       // the failure kind is final
  kAttemptsExhausted,  // max_attempts reached
  kDeadline,           // the next attempt could not finish before the deadline
};

// Decide's answer: either retry after `delay`, or give up for `reason` (`detail` is a short
// human-readable explanation, suitable for an error message).
struct RetryDecision {
  bool retry = false;
  absl::Duration delay = absl::ZeroDuration();
  GiveUpReason reason = GiveUpReason::kNone;
  std::string detail;
};

// Decides what to do after attempt number `attempts_made` (1-based: 1 after the first attempt)
// failed with `outcome`. `jitter01` is a uniform draw from [0, 1] (clamped). `deadline` is the
// caller's deadline (absl::InfiniteFuture() for none). Pure: same inputs, same answer.
RetryDecision Decide(const RetryPolicy& policy, int attempts_made, const AttemptOutcome& outcome,
                     absl::Time now, absl::Time deadline, double jitter01);

// The jitter-free backoff ceiling before attempt `attempts_made + 1`: min(cap, base *
// 2^(attempts_made-1)). Exposed for tests and documentation.
absl::Duration BackoffCeiling(const RetryPolicy& policy, int attempts_made);

}  // namespace hb
