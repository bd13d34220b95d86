#include "common/flow/adaptive_limiter.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "common/retry/retry_status.h"

namespace hb {
namespace {

// Dispatch times kept at most (a bound for runs that never receive rate-limit headers).
constexpr size_t kMaxDispatchTimes = 1 << 17;
// Weight of a new sample in the smoothed round trip and the tokens-per-call estimate.
constexpr double kRttGain = 0.125;
constexpr double kTokenGain = 0.2;

}  // namespace

AdaptiveLimiter::AdaptiveLimiter(AdaptiveLimiterOptions options)
    : options_(options), clock_(*options.clock) {
  const int max_window = std::max(1, options_.max_window);
  window_ = std::clamp(options_.initial_window, 1, max_window);
  ssthresh_ = max_window;
}

int AdaptiveLimiter::Window() const {
  const int max_window = std::max(1, options_.max_window);
  int window = std::clamp(static_cast<int>(window_), 1, max_window);
  return std::max(1, std::min(window, PaceWindowCap(clock_.Now())));
}

absl::Time AdaptiveLimiter::NextDispatchTime() const {
  const absl::Time now = clock_.Now();
  absl::Time next = hold_until_;
  absl::Time exhausted_until = absl::InfinitePast();
  std::optional<absl::Duration> spacing = PaceSpacing(now, &exhausted_until);
  next = std::max(next, exhausted_until);
  if (spacing.has_value() && last_dispatch_ != absl::InfinitePast()) {
    next = std::max(next, last_dispatch_ + *spacing);
  }
  return next;
}

void AdaptiveLimiter::SetDemand(int64_t calls) { demand_ = std::max<int64_t>(0, calls); }

DispatchTicket AdaptiveLimiter::OnDispatch() {
  DispatchTicket ticket{next_seq_++, clock_.Now()};
  last_dispatch_ = ticket.sent;
  dispatch_times_.push_back(ticket.sent);
  if (dispatch_times_.size() > kMaxDispatchTimes) dispatch_times_.pop_front();
  ++in_flight_;
  return ticket;
}

void AdaptiveLimiter::OnReply(const DispatchTicket& ticket, const ReplySignal& signal) {
  const absl::Time now = clock_.Now();
  const int64_t in_flight = in_flight_;
  in_flight_ = std::max<int64_t>(0, in_flight_ - 1);
  if (signal.ok && !signal.rate_limited && signal.attempts <= 1) {
    const absl::Duration rtt = std::max(now - ticket.sent, absl::ZeroDuration());
    srtt_ = srtt_ == absl::ZeroDuration() ? rtt : srtt_ * (1 - kRttGain) + rtt * kRttGain;
  }
  if (signal.ok && tokens_per_call_ == 0 && signal.tokens > 0) {
    tokens_per_call_ = static_cast<double>(signal.tokens) / std::max(1, signal.attempts);
  }
  if (options_.pacing && signal.rate_limit.has_value()) Observe(*signal.rate_limit, now);
  if (signal.retry_after.has_value())
    hold_until_ = std::max(hold_until_, now + *signal.retry_after);
  if (signal.rate_limited) {
    Decrease(ticket.seq);
  } else if (signal.ok) {
    Increase(in_flight);
  }
}

void AdaptiveLimiter::Increase(int64_t in_flight) {
  if (2 * in_flight < static_cast<int64_t>(window_)) return;  // the window is not what limits
  const double max_window = std::max(1, options_.max_window);
  if (window_ < ssthresh_) {
    window_ = std::min(window_ + 1, max_window);
    return;
  }
  if (++successes_ >= static_cast<int64_t>(window_)) {
    window_ = std::min(window_ + 1, max_window);
    successes_ = 0;
  }
}

void AdaptiveLimiter::Decrease(uint64_t seq) {
  if (seq <= decrease_seq_) return;  // sent before the last decrease: same congestion event
  window_ = std::max(1.0, std::floor(window_ * options_.decrease_factor));
  ssthresh_ = window_;
  decrease_seq_ = next_seq_ - 1;
  successes_ = 0;
  ++decreases_;
}

void AdaptiveLimiter::Observe(const RelayedRateLimit& rl, absl::Time now) {
  const absl::Time observed = now - absl::Milliseconds(std::max<int64_t>(0, rl.age_ms));
  auto fresher = [&](const Budget& b) {
    return !b.known || observed >= b.observed || now >= b.resets + options_.reset_margin;
  };
  const Budget previous_requests = requests_;
  const Budget previous_tokens = tokens_;
  bool updated_requests = false;
  if (rl.has_requests && fresher(requests_)) {
    requests_ = {true, observed, rl.remaining_requests,
                 observed + absl::Milliseconds(rl.reset_requests_ms)};
    updated_requests = true;
  }
  if (rl.has_tokens && fresher(tokens_)) {
    tokens_ = {true, observed, rl.remaining_tokens,
               observed + absl::Milliseconds(rl.reset_tokens_ms)};
    // Tokens charged per call, from how both budgets moved between two reports of one window.
    if (updated_requests && previous_requests.known && previous_tokens.known &&
        now < previous_requests.resets && now < previous_tokens.resets) {
      const int64_t calls = previous_requests.remaining - rl.remaining_requests;
      const int64_t tokens = previous_tokens.remaining - rl.remaining_tokens;
      if (calls > 0 && tokens >= 0) {
        const double sample = static_cast<double>(tokens) / static_cast<double>(calls);
        tokens_per_call_ = tokens_per_call_ == 0
                               ? sample
                               : tokens_per_call_ * (1 - kTokenGain) + sample * kTokenGain;
      }
    }
  }
  // Dispatch times older than every report in use are no longer needed.
  absl::Time oldest = absl::InfiniteFuture();
  if (requests_.known) oldest = std::min(oldest, requests_.observed);
  if (tokens_.known) oldest = std::min(oldest, tokens_.observed);
  while (!dispatch_times_.empty() && dispatch_times_.front() < oldest) {
    dispatch_times_.pop_front();
  }
}

int64_t AdaptiveLimiter::DispatchedSince(absl::Time t) const {
  // A call dispatched at the very instant of a report is not in it.
  auto it = std::lower_bound(dispatch_times_.begin(), dispatch_times_.end(), t);
  return static_cast<int64_t>(dispatch_times_.end() - it);
}

std::optional<absl::Duration> AdaptiveLimiter::Spacing(const Budget& budget, double cost,
                                                       absl::Time now) const {
  if (!budget.known || now >= budget.resets + options_.reset_margin || cost <= 0) {
    return std::nullopt;  // unknown, or reset since the report
  }
  const double left = static_cast<double>(budget.remaining) -
                      cost * static_cast<double>(DispatchedSince(budget.observed));
  if (left < cost) return absl::InfiniteDuration();  // exhausted until the reset
  if (left / cost >= static_cast<double>(demand_)) return std::nullopt;  // room for all
  const double to_reset_ns =
      absl::ToDoubleNanoseconds(std::max(budget.resets - now, absl::ZeroDuration()));
  return absl::Nanoseconds(std::llround(to_reset_ns * cost / left));
}

std::optional<absl::Duration> AdaptiveLimiter::PaceSpacing(absl::Time now,
                                                           absl::Time* exhausted_until) const {
  if (!options_.pacing) return std::nullopt;
  std::optional<absl::Duration> spacing;
  auto apply = [&](const Budget& budget, double cost) {
    std::optional<absl::Duration> s = Spacing(budget, cost, now);
    if (!s.has_value()) return;
    if (*s == absl::InfiniteDuration()) {
      *exhausted_until = std::max(*exhausted_until, budget.resets + options_.reset_margin);
      return;
    }
    spacing = spacing.has_value() ? std::max(*spacing, *s) : *s;
  };
  apply(requests_, 1.0);
  apply(tokens_, tokens_per_call_);
  return spacing;
}

int AdaptiveLimiter::PaceWindowCap(absl::Time now) const {
  absl::Time exhausted_until = absl::InfinitePast();
  std::optional<absl::Duration> spacing = PaceSpacing(now, &exhausted_until);
  if (!spacing.has_value() || srtt_ == absl::ZeroDuration() || *spacing <= absl::ZeroDuration()) {
    return std::numeric_limits<int>::max();
  }
  const double calls = options_.pace_window_slack * absl::FDivDuration(srtt_, *spacing);
  if (calls > 1e9) return std::numeric_limits<int>::max();
  return static_cast<int>(std::ceil(calls)) + 2;
}

LimiterSnapshot AdaptiveLimiter::Snapshot() const {
  const absl::Time now = clock_.Now();
  LimiterSnapshot s;
  s.window = Window();
  s.aimd_window = window_;
  s.slow_start_threshold = ssthresh_;
  absl::Time exhausted_until = absl::InfinitePast();
  std::optional<absl::Duration> spacing = PaceSpacing(now, &exhausted_until);
  if (spacing.has_value() && *spacing > absl::ZeroDuration()) {
    s.paced_rate = 1.0 / absl::ToDoubleSeconds(*spacing);
  }
  s.hold_until = std::max(hold_until_, exhausted_until);
  if (s.hold_until <= now) s.hold_until = absl::InfinitePast();
  s.decreases = decreases_;
  s.in_flight = in_flight_;
  s.smoothed_rtt = srtt_;
  return s;
}

}  // namespace hb
