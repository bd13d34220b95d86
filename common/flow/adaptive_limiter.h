// AdaptiveLimiter: how many calls a loop keeps in flight to a rate-limited upstream, and how fast
// it starts them, adapted to the upstream's limits. Proto-free: the callers (run's dispatcher,
// which sees every row of a job across all grader replicas; hb-env; the policy sampler) turn
// their replies into a ReplySignal (grader_client/reply_signal.h for GradeItem replies).
//
// Two mechanisms, combined:
//   * AIMD on the in-flight window. It starts at `initial_window` (default: the maximum), grows by
//   one per success
//     while below the slow-start threshold (doubling per round trip) and by one per window of
//     successes above it, but only from replies that find at least half the AIMD window in
//     flight (a window that pacing or a lack of rows keeps mostly empty is no evidence that a
//     larger one would be used). A rate-limit signal (a reply with
//     rate_limited_attempts > 0, or a RESOURCE_EXHAUSTED error that is not a server's own
//     "busy" refusal, IsServerBusy in common/retry/retry_status.h) multiplies it by
//     `decrease_factor`, at most once per round trip: only replies to calls dispatched after
//     the previous decrease can trigger another. A busy refusal is not a rate-limit signal: a
//     grader replica past --max-concurrent-rpcs says nothing about the upstream's limits.
//   * Pacing from the x-ratelimit-* headers the graders relay (RelayedRateLimit). From the
//     freshest report the limiter estimates the budget left now (the reported remaining minus
//     the calls dispatched since the report was taken) and when it resets, and spaces
//     dispatches so that the budget lasts until the reset: one call per (time to reset) /
//     (remaining), for requests and, with a per-call token estimate, for tokens. An exhausted
//     budget holds dispatch until the reset (plus `reset_margin`). By Little's law the window
//     a paced rate needs is rate x round-trip time; the effective window is capped at
//     `pace_window_slack` times that (plus 2), so a window grown while unpaced cannot burst
//     when the budget resets. An error carrying a Retry-After (RetryInfo: the upstream's 429
//     relayed, or a busy server's retry delay) holds dispatch for that long.
// The effective window stays within [1, max_window].
//
// Not thread-safe: callers use it under their own lock. Time comes from the injected
// clock only.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/base/clock.h"

namespace hb {

struct AdaptiveLimiterOptions {
  // Upper bound of the window (--max-in-flight), >= 1.
  int max_window = 512;
  // Starting window; clamped to [1, max_window]. By default the job starts at max_window and
  // only a rate-limit signal shrinks it: with no limit in sight a slow start costs about
  // log2(window) round trips (7 s at 2,000 in flight and 1 s latency) for nothing.
  int initial_window = std::numeric_limits<int>::max();
  // Window multiplier on a rate-limit signal, in (0, 1).
  double decrease_factor = 0.5;
  // Pace dispatch from the rate-limit headers.
  bool pacing = true;
  // Dispatch resumes this long after the estimated reset of an exhausted budget (the estimate
  // is only as precise as the headers and the network).
  absl::Duration reset_margin = absl::Milliseconds(100);
  // The effective window is at most ceil(pace_window_slack x paced rate x round-trip) + 2.
  double pace_window_slack = 2.0;
  // Not owned; must outlive the limiter.
  Clock* clock = &Clock::Real();
};

// What OnDispatch hands out and OnReply takes back.
struct DispatchTicket {
  // 1, 2, ... in dispatch order.
  uint64_t seq = 0;
  absl::Time sent;
};

// The upstream's x-ratelimit-* budgets as relayed with a reply (the grader's UpstreamRateLimit,
// grader_client/reply_signal.h converts it).
struct RelayedRateLimit {
  bool has_requests = false;
  int64_t remaining_requests = 0;
  // Time from the report until the requests budget resets.
  int64_t reset_requests_ms = 0;
  bool has_tokens = false;
  int64_t remaining_tokens = 0;
  int64_t reset_tokens_ms = 0;
  // How old the report was when the reply left the grader.
  int64_t age_ms = 0;
};

// What a reply says about the upstream's limits.
struct ReplySignal {
  // A verdict came back.
  bool ok = false;
  // The upstream refused at least one attempt with 429 (rate_limited_attempts > 0, or a
  // RESOURCE_EXHAUSTED error not marked server-busy). Shrinks the window.
  bool rate_limited = false;
  // The retry delay an error carried (the upstream's Retry-After, or a busy server's).
  std::optional<absl::Duration> retry_after;
  // The headers relayed by the grader (ok replies), when present.
  std::optional<RelayedRateLimit> rate_limit;
  // Upstream attempts and the tokens they reported (prompt + completion).
  int attempts = 1;
  int64_t tokens = 0;
};

// A view of the limiter's state, for the progress line and tests.
struct LimiterSnapshot {
  // Calls allowed in flight now.
  int window = 0;
  // The AIMD window (before the pacing cap) and the slow-start threshold.
  double aimd_window = 0;
  double slow_start_threshold = 0;
  // Calls per second the pacing allows now; 0 when not pacing.
  double paced_rate = 0;
  // Dispatch is held (exhausted budget or a Retry-After) until this time; InfinitePast if not.
  absl::Time hold_until = absl::InfinitePast();
  int64_t decreases = 0;
  int64_t in_flight = 0;
  // Smoothed round trip of clean replies (first attempt, no 429); zero before the first.
  absl::Duration smoothed_rtt;
};

class AdaptiveLimiter {
 public:
  explicit AdaptiveLimiter(AdaptiveLimiterOptions options);

  // Calls allowed in flight now, in [1, max_window].
  int Window() const;
  // The earliest time the next call may start (InfinitePast when pacing imposes nothing).
  absl::Time NextDispatchTime() const;
  // Calls the job still wants to start (rows not yet sent and retries waiting). A budget with
  // room for all of them is not paced: spreading the last rows of a job over the rest of the
  // window would only make it slower. Unknown (no such shortcut) until first set.
  void SetDemand(int64_t calls);
  // Records a call started now.
  DispatchTicket OnDispatch();
  // Records the reply to the call of `ticket`; call exactly once per OnDispatch, whatever the
  // outcome (a reply neither ok nor rate-limited, e.g. a cancellation, only ends the call).
  void OnReply(const DispatchTicket& ticket, const ReplySignal& signal);

  LimiterSnapshot Snapshot() const;

 private:
  // One resource's budget (requests or tokens) as last reported.
  struct Budget {
    bool known = false;
    // When the report was taken (the start of the upstream attempt) and the reported values.
    absl::Time observed;
    int64_t remaining = 0;
    absl::Time resets;
  };

  // `in_flight` counts the replying call.
  void Increase(int64_t in_flight);
  void Decrease(uint64_t seq);
  void Observe(const RelayedRateLimit& rl, absl::Time now);
  // Calls dispatched after `t`.
  int64_t DispatchedSince(absl::Time t) const;
  // The spacing between dispatches that makes `budget` last, for calls costing `cost` each;
  // nullopt when the budget is unknown or already reset.
  std::optional<absl::Duration> Spacing(const Budget& budget, double cost, absl::Time now) const;
  // The pacing spacing over both budgets (nullopt: none), and the hold time of an exhausted
  // budget (InfinitePast: none).
  std::optional<absl::Duration> PaceSpacing(absl::Time now, absl::Time* exhausted_until) const;
  int PaceWindowCap(absl::Time now) const;

  const AdaptiveLimiterOptions options_;
  Clock& clock_;
  double window_;
  double ssthresh_;
  // Successes counted toward the next additive increase.
  int64_t successes_ = 0;
  // Calls dispatched and not yet replied to.
  int64_t in_flight_ = 0;
  int64_t demand_ = std::numeric_limits<int64_t>::max();
  uint64_t next_seq_ = 1;
  // Replies to calls with seq <= this do not trigger another decrease.
  uint64_t decrease_seq_ = 0;
  int64_t decreases_ = 0;
  absl::Time last_dispatch_ = absl::InfinitePast();
  absl::Time hold_until_ = absl::InfinitePast();
  absl::Duration srtt_ = absl::ZeroDuration();
  Budget requests_;
  Budget tokens_;
  // Tokens charged per call (EWMA), from header deltas or else usage.
  double tokens_per_call_ = 0;
  // Dispatch times not older than the freshest report (for DispatchedSince).
  std::deque<absl::Time> dispatch_times_;
};

}  // namespace hb
