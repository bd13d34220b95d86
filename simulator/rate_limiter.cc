#include "simulator/rate_limiter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace hb::sim {

RateLimiter::RateLimiter(Options options, const Clock* clock) : options_(options), clock_(clock) {}

void RateLimiter::RollLocked(absl::Time now) {
  if (window_end_.has_value() && now >= *window_end_) {
    window_end_.reset();
    requests_used_ = 0;
    tokens_used_ = 0;
  }
}

RateLimitDecision RateLimiter::StateLocked(absl::Time now) {
  RateLimitDecision d;
  d.limit_requests = options_.rpm;
  d.limit_tokens = options_.tpm;
  d.remaining_requests = std::max<int64_t>(0, options_.rpm - requests_used_);
  d.remaining_tokens = std::max<int64_t>(0, options_.tpm - tokens_used_);
  d.reset = window_end_.has_value() ? *window_end_ - now : absl::ZeroDuration();
  return d;
}

RateLimitDecision RateLimiter::Acquire(int64_t tokens) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  RollLocked(now);
  const bool requests_exceeded = options_.rpm > 0 && requests_used_ + 1 > options_.rpm;
  const bool tokens_exceeded = options_.tpm > 0 && tokens_used_ + tokens > options_.tpm;
  if (requests_exceeded || tokens_exceeded) {
    RateLimitDecision d = StateLocked(now);
    d.admitted = false;
    d.requests_exceeded = requests_exceeded;
    d.tokens_exceeded = tokens_exceeded;
    // An empty window can only refuse a request larger than the whole budget.
    d.retry_after = window_end_.has_value() ? d.reset : options_.window;
    return d;
  }
  if (enabled() && !window_end_.has_value()) window_end_ = now + options_.window;
  ++requests_used_;
  tokens_used_ += tokens;
  return StateLocked(now);
}

RateLimitDecision RateLimiter::Peek() {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  RollLocked(now);
  return StateLocked(now);
}

std::string FormatResetDuration(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return "0s";
  return absl::FormatDuration(absl::Ceil(d, absl::Milliseconds(1)));
}

}  // namespace hb::sim
