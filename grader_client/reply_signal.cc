#include "grader_client/reply_signal.h"

#include <algorithm>

#include "common/retry/retry_status.h"

namespace hb {

RelayedRateLimit RateLimitFromProto(const healthbench::grader::v1::UpstreamRateLimit& rl) {
  RelayedRateLimit out;
  out.has_requests = rl.has_requests();
  out.remaining_requests = rl.remaining_requests();
  out.reset_requests_ms = rl.reset_requests_ms();
  out.has_tokens = rl.has_tokens();
  out.remaining_tokens = rl.remaining_tokens();
  out.reset_tokens_ms = rl.reset_tokens_ms();
  out.age_ms = rl.age_ms();
  return out;
}

ReplySignal ReplySignalOf(
    const absl::StatusOr<healthbench::grader::v1::GradeItemResponse>& result) {
  ReplySignal signal;
  signal.ok = result.ok();
  if (!result.ok()) {
    // A server refusing past its own capacity (ConcurrencyLimit, hb-env's backlog) says nothing
    // about the upstream's limits: halving the job's window for it would halve the job's pace.
    signal.rate_limited = result.status().code() == absl::StatusCode::kResourceExhausted &&
                          !IsServerBusy(result.status());
    signal.retry_after = RetryDelay(result.status());
    return signal;
  }
  signal.rate_limited = result->rate_limited_attempts() > 0;
  if (result->has_rate_limit()) signal.rate_limit = RateLimitFromProto(result->rate_limit());
  signal.attempts = std::max(1, result->attempts());
  signal.tokens = result->from_cache()
                      ? 0
                      : result->usage().prompt_tokens() + result->usage().completion_tokens();
  return signal;
}

}  // namespace hb
