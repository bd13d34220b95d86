#include "common/retry/retry_after.h"

#include <algorithm>

namespace hb {

RetryAfterWait WaitOutRetryAfter(const RetryPolicy& policy, absl::Duration backoff,
                                 std::optional<absl::Duration> retry_after) {
  RetryAfterWait wait;
  wait.delay = backoff;
  if (!retry_after.has_value()) return wait;
  wait.capped = *retry_after > policy.max_retry_after;
  wait.delay = std::max(backoff, std::min(*retry_after, policy.max_retry_after));
  return wait;
}

}  // namespace hb
