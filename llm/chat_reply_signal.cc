#include "llm/chat_reply_signal.h"

namespace hb {

std::optional<RelayedRateLimit> RelayedRateLimitOf(const RateLimitInfo& rl, absl::Duration age) {
  RelayedRateLimit out;
  out.has_requests =
      rl.limit_requests.has_value() || rl.remaining_requests.has_value() || rl.reset_requests;
  out.has_tokens =
      rl.limit_tokens.has_value() || rl.remaining_tokens.has_value() || rl.reset_tokens;
  if (!out.has_requests && !out.has_tokens) return std::nullopt;
  out.remaining_requests = rl.remaining_requests.value_or(0);
  out.reset_requests_ms =
      absl::ToInt64Milliseconds(rl.reset_requests.value_or(absl::ZeroDuration()));
  out.remaining_tokens = rl.remaining_tokens.value_or(0);
  out.reset_tokens_ms = absl::ToInt64Milliseconds(rl.reset_tokens.value_or(absl::ZeroDuration()));
  out.age_ms = absl::ToInt64Milliseconds(age);
  return out;
}

ReplySignal ReplySignalOf(const absl::StatusOr<ChatResult>& result) {
  ReplySignal signal;
  signal.ok = result.ok();
  if (!result.ok()) {
    const AttemptOutcome outcome = AttemptOutcomeOf(result.status());
    signal.rate_limited = outcome.kind == FailureKind::kHttp429;
    signal.retry_after = outcome.retry_after;
    return signal;
  }
  signal.rate_limit = RelayedRateLimitOf(result->rate_limit);
  signal.tokens = result->usage.prompt_tokens + result->usage.completion_tokens;
  return signal;
}

}  // namespace hb
