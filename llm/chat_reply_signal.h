// What one chat-completions call tells the flow control (common/flow/adaptive_limiter.h): the
// LLM-client counterpart of grader_client/reply_signal.h's ReplySignalOf, read the same way, so
// the policy sampler's PacedQueue learns from a policy reply what the graders' queues learn
// from a GradeItem reply. Pure functions; thread-safe.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/flow/adaptive_limiter.h"
#include "llm/llm_client.h"

namespace hb {

// The x-ratelimit-* budgets of a reply, `age` after they were read; nullopt when the endpoint
// sent none. A budget counts as reported when any of its three headers came.
std::optional<RelayedRateLimit> RelayedRateLimitOf(const RateLimitInfo& rl,
                                                   absl::Duration age = absl::ZeroDuration());

// ok; rate-limited (an HTTP 429: kResourceExhausted); the Retry-After of any error that carries
// one (AttemptOutcome); the reply's rate-limit headers; one attempt; and the tokens it spent
// (prompt + completion).
ReplySignal ReplySignalOf(const absl::StatusOr<ChatResult>& result);

}  // namespace hb
