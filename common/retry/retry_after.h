// The one Retry-After-aware wait: how long to wait before the next attempt when the upstream said
// when to come back. The Grader (a 429's Retry-After) and the run's dispatcher (a grader's retry
// delay) both decide with it, on top of the backoff of retry_policy.h.
#pragma once

#include <optional>

#include "absl/time/time.h"
#include "common/retry/retry_policy.h"

namespace hb {

struct RetryAfterWait {
  absl::Duration delay = absl::ZeroDuration();
  // The Retry-After was longer than max_retry_after and was cut to it (the caller logs it).
  bool capped = false;
};

// `backoff`, raised to `retry_after` so that it is waited out in full (a retry before it would
// only be refused again), but never beyond policy.max_retry_after (a broken or hostile
// upstream's "99999999999" must not park a call or a run forever). Unlike Decide's own
// Retry-After floor, which stops at policy.cap, this waits out a rate limit. Pure.
RetryAfterWait WaitOutRetryAfter(const RetryPolicy& policy, absl::Duration backoff,
                                 std::optional<absl::Duration> retry_after);

}  // namespace hb
