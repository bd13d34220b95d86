// The rate limiter of hb-llm-sim: a fixed-window requests/tokens-per-minute budget, reported
// in x-ratelimit-* headers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/clock.h"

namespace hb::sim {

// The state reported in x-ratelimit-* headers, and whether the request was admitted.
struct RateLimitDecision {
  bool admitted = true;
  bool requests_exceeded = false;  // set when refused for requests-per-minute
  bool tokens_exceeded = false;    // set when refused for tokens-per-minute
  int64_t limit_requests = 0;      // 0 = unlimited (no header emitted)
  int64_t remaining_requests = 0;
  int64_t limit_tokens = 0;  // 0 = unlimited (no header emitted)
  int64_t remaining_tokens = 0;
  absl::Duration reset = absl::ZeroDuration();        // until the current window ends
  absl::Duration retry_after = absl::ZeroDuration();  // when refused: until it may pass
};

// Fixed-window limiter: a window of `window` (60 s) opens at the first request that arrives
// when no window is open; requests and tokens are counted until it ends, then both counters
// restart. A request is admitted iff requests_used + 1 <= rpm (when rpm > 0) and tokens_used +
// tokens <= tpm (when tpm > 0); a refused request consumes nothing and gets retry_after = the
// time until the window ends (a request larger than tpm can never pass: retry_after = window).
// Thread-safe.
class RateLimiter {
 public:
  struct Options {
    int64_t rpm = 0;  // 0 = unlimited
    int64_t tpm = 0;  // 0 = unlimited
    absl::Duration window = absl::Seconds(60);
  };
  // `clock` is not owned and must outlive the limiter.
  RateLimiter(Options options, const Clock* clock);

  bool enabled() const { return options_.rpm > 0 || options_.tpm > 0; }
  // Admits (and charges one request and `tokens`) or refuses.
  RateLimitDecision Acquire(int64_t tokens);
  // The current state without charging anything (admitted = true).
  RateLimitDecision Peek();

 private:
  RateLimitDecision StateLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RollLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const Clock* const clock_;
  absl::Mutex mu_;
  std::optional<absl::Time> window_end_ ABSL_GUARDED_BY(mu_);
  int64_t requests_used_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t tokens_used_ ABSL_GUARDED_BY(mu_) = 0;
};

// OpenAI-style duration for x-ratelimit-reset-*: Go-like via absl::FormatDuration, rounded to
// milliseconds ("0s", "250ms", "1.2s", "59.999s", "1m").
std::string FormatResetDuration(absl::Duration d);

}  // namespace hb::sim
