// AdaptiveLimiter on a FakeClock: exact window sequences for slow start, additive increase and
// once-per-round-trip decrease, and exact pacing from relayed rate-limit headers.
#include "common/flow/adaptive_limiter.h"

#include <deque>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"

namespace hb {
namespace {

using ::hb::testing::FakeClock;
using ::testing::ElementsAre;

class AdaptiveLimiterTest : public ::testing::Test {
 protected:
  AdaptiveLimiter& limiter() {
    if (limiter_ == nullptr) {
      options_.clock = &clock_;
      limiter_ = std::make_unique<AdaptiveLimiter>(options_);
    }
    return *limiter_;
  }
  // Dispatches until the window is full.
  void Fill() {
    while (static_cast<int>(tickets_.size()) < limiter().Window()) {
      tickets_.push_back(limiter().OnDispatch());
    }
  }
  DispatchTicket Dispatch() {
    tickets_.push_back(limiter().OnDispatch());
    return tickets_.back();
  }
  // Answers the oldest call.
  void Reply(const ReplySignal& signal) {
    ASSERT_FALSE(tickets_.empty());
    DispatchTicket ticket = tickets_.front();
    tickets_.pop_front();
    limiter().OnReply(ticket, signal);
  }
  static ReplySignal Ok() {
    ReplySignal s;
    s.ok = true;
    return s;
  }
  static ReplySignal RateLimitedOk() {
    ReplySignal s = Ok();
    s.rate_limited = true;
    s.attempts = 2;
    return s;
  }
  static ReplySignal WithRequests(int64_t remaining, int64_t reset_ms, int64_t age_ms = 0) {
    ReplySignal s = Ok();
    RelayedRateLimit rl;
    rl.has_requests = true;
    rl.remaining_requests = remaining;
    rl.reset_requests_ms = reset_ms;
    rl.age_ms = age_ms;
    s.rate_limit = rl;
    return s;
  }

  FakeClock clock_;
  AdaptiveLimiterOptions options_;
  std::unique_ptr<AdaptiveLimiter> limiter_;
  std::deque<DispatchTicket> tickets_;
};

TEST_F(AdaptiveLimiterTest, SlowStartGrowsByOnePerSuccessUpToTheMaximum) {
  options_.initial_window = 4;
  options_.max_window = 10;
  EXPECT_EQ(limiter().Window(), 4);
  std::vector<int> windows;
  for (int i = 0; i < 8; ++i) {
    Fill();
    Reply(Ok());
    windows.push_back(limiter().Window());
  }
  EXPECT_THAT(windows, ElementsAre(5, 6, 7, 8, 9, 10, 10, 10));
  EXPECT_EQ(limiter().Snapshot().decreases, 0);
}

TEST_F(AdaptiveLimiterTest, InitialWindowIsClampedToTheMaximum) {
  options_.initial_window = 100;
  options_.max_window = 7;
  EXPECT_EQ(limiter().Window(), 7);
}

TEST_F(AdaptiveLimiterTest, RepliesThatFindTheWindowMostlyEmptyDoNotGrowIt) {
  options_.initial_window = 8;
  Dispatch();
  Dispatch();
  Dispatch();
  Reply(Ok());  // 3 in flight: 2*3 < 8
  Reply(Ok());
  Reply(Ok());
  EXPECT_EQ(limiter().Window(), 8);
  EXPECT_EQ(limiter().Snapshot().in_flight, 0);
}

TEST_F(AdaptiveLimiterTest, DecreasesOncePerRoundTripThenIncreasesAdditively) {
  options_.initial_window = 8;
  options_.max_window = 64;
  Fill();  // seq 1..8
  std::vector<int> windows;
  Reply(RateLimitedOk());  // seq 1: 8 -> 4
  windows.push_back(limiter().Window());
  Reply(RateLimitedOk());  // seq 2 was sent before the decrease: same event
  windows.push_back(limiter().Window());
  // seq 3..8 succeed with 6, 5, 4, 3, 2, 1 in flight. Congestion avoidance at 4 (= the
  // threshold): 4 counted successes -> 5; the last two find fewer than 5/2 in flight and do
  // not count.
  for (int i = 0; i < 6; ++i) {
    Reply(Ok());
    windows.push_back(limiter().Window());
  }
  Fill();                  // seq 9..13
  Reply(RateLimitedOk());  // sent after the decrease: a new event, 5 -> 2
  windows.push_back(limiter().Window());
  EXPECT_THAT(windows, ElementsAre(4, 4, 4, 4, 4, 5, 5, 5, 2));
  LimiterSnapshot s = limiter().Snapshot();
  EXPECT_EQ(s.decreases, 2);
  EXPECT_EQ(s.slow_start_threshold, 2);
}

TEST_F(AdaptiveLimiterTest, WindowNeverGoesBelowOne) {
  options_.initial_window = 2;
  for (int i = 0; i < 4; ++i) {
    Dispatch();
    Reply(RateLimitedOk());
  }
  EXPECT_EQ(limiter().Window(), 1);
  EXPECT_EQ(limiter().Snapshot().decreases, 4);
}

TEST_F(AdaptiveLimiterTest, RetryAfterHoldsDispatchAndDecreases) {
  options_.initial_window = 8;
  Fill();
  ReplySignal exhausted;
  exhausted.rate_limited = true;
  exhausted.retry_after = absl::Seconds(3);
  const absl::Time now = clock_.Now();
  Reply(exhausted);
  EXPECT_EQ(limiter().NextDispatchTime(), now + absl::Seconds(3));
  EXPECT_EQ(limiter().Window(), 4);
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(limiter().Snapshot().hold_until, absl::InfinitePast());
}

TEST_F(AdaptiveLimiterTest, CancelledRepliesOnlyEndTheCall) {
  options_.initial_window = 4;
  Fill();
  ReplySignal cancelled;  // neither ok nor rate limited
  Reply(cancelled);
  EXPECT_EQ(limiter().Window(), 4);
  EXPECT_EQ(limiter().Snapshot().in_flight, 3);
}

TEST_F(AdaptiveLimiterTest, PacesSoTheRemainingRequestsLastUntilTheReset) {
  options_.initial_window = 32;
  const absl::Time t0 = clock_.Now();
  Dispatch();
  EXPECT_EQ(limiter().NextDispatchTime(), absl::InfinitePast());  // nothing known yet
  clock_.Advance(absl::Milliseconds(200));
  // 91 requests left, the window resets in 9 s (measured when the attempt started, which is
  // now: age 0).
  Reply(WithRequests(91, 9000));
  EXPECT_EQ(limiter().Snapshot().smoothed_rtt, absl::Milliseconds(200));
  Dispatch();  // 90 left for 9 s: one per 100 ms
  const absl::Time b = t0 + absl::Milliseconds(200);
  EXPECT_EQ(limiter().NextDispatchTime(), b + absl::Milliseconds(100));
  EXPECT_DOUBLE_EQ(limiter().Snapshot().paced_rate, 10.0);
  // Little's law: 10/s x 200 ms = 2 in flight; the cap is ceil(2 x 2) + 2.
  EXPECT_EQ(limiter().Window(), 6);
  clock_.Advance(absl::Milliseconds(100));
  Dispatch();  // 89 left for 8.9 s
  EXPECT_EQ(limiter().NextDispatchTime(), b + absl::Milliseconds(200));
}

TEST_F(AdaptiveLimiterTest, ReportAgeAndLaterDispatchesAreDiscounted) {
  options_.initial_window = 32;
  const absl::Time t0 = clock_.Now();
  Dispatch();  // A at t0
  clock_.Advance(absl::Milliseconds(100));
  Dispatch();  // B at t0+100ms
  clock_.Advance(absl::Milliseconds(100));
  Dispatch();  // C at t0+200ms
  clock_.Advance(absl::Milliseconds(300));
  // A's attempt started 450 ms ago (t0+50ms): B and C came after the report was taken, so of
  // 12 left 10 remain, for the 550 ms until the reset at t0+1.05s: one per 55 ms after C.
  Reply(WithRequests(12, 1000, /*age_ms=*/450));
  EXPECT_EQ(limiter().NextDispatchTime(), t0 + absl::Milliseconds(200) + absl::Milliseconds(55));
}

TEST_F(AdaptiveLimiterTest, ABudgetWithRoomForTheWholeDemandIsNotPaced) {
  options_.initial_window = 8;
  Dispatch();
  clock_.Advance(absl::Milliseconds(100));
  Reply(WithRequests(50, 5000));
  limiter().SetDemand(51);
  EXPECT_DOUBLE_EQ(limiter().Snapshot().paced_rate, 10.0);  // 50 per 5 s
  limiter().SetDemand(50);                                  // the rest of the job fits: go
  EXPECT_EQ(limiter().Snapshot().paced_rate, 0);
  EXPECT_EQ(limiter().NextDispatchTime(), absl::InfinitePast());
  limiter().SetDemand(0);
  Dispatch();
  Dispatch();  // 48 left
  limiter().SetDemand(49);
  EXPECT_NEAR(limiter().Snapshot().paced_rate, 48 / 5.0, 1e-6);
}

TEST_F(AdaptiveLimiterTest, AnExhaustedBudgetHoldsUntilTheResetPlusTheMargin) {
  options_.initial_window = 8;
  options_.reset_margin = absl::Milliseconds(100);
  Dispatch();
  clock_.Advance(absl::Milliseconds(100));
  Reply(WithRequests(1, 5000));
  const absl::Time reset = clock_.Now() + absl::Seconds(5);
  Dispatch();  // the last request of the window
  EXPECT_EQ(limiter().NextDispatchTime(), reset + absl::Milliseconds(100));
  EXPECT_EQ(limiter().Snapshot().hold_until, reset + absl::Milliseconds(100));
  clock_.Set(reset + absl::Milliseconds(100));
  // The budget has reset: nothing is known about the new window until a report arrives.
  EXPECT_EQ(limiter().NextDispatchTime(), absl::InfinitePast());
  EXPECT_EQ(limiter().Snapshot().paced_rate, 0);
}

TEST_F(AdaptiveLimiterTest, AnOlderReportDoesNotReplaceAFresherOne) {
  options_.initial_window = 8;
  Dispatch();
  Dispatch();
  clock_.Advance(absl::Seconds(1));
  Reply(WithRequests(50, 5000));                 // taken now
  Reply(WithRequests(0, 5000, /*age_ms=*/500));  // taken earlier: ignored
  EXPECT_EQ(limiter().Snapshot().hold_until, absl::InfinitePast());
  EXPECT_DOUBLE_EQ(limiter().Snapshot().paced_rate, 10.0);  // 50 per 5 s
}

TEST_F(AdaptiveLimiterTest, TokenBudgetPacesWithTheTokensChargedPerCall) {
  options_.initial_window = 8;
  Dispatch();
  Dispatch();
  auto report = [](int64_t requests, int64_t requests_reset_ms, int64_t tokens,
                   int64_t tokens_reset_ms) {
    ReplySignal s = Ok();
    RelayedRateLimit rl;
    rl.has_requests = true;
    rl.remaining_requests = requests;
    rl.reset_requests_ms = requests_reset_ms;
    rl.has_tokens = true;
    rl.remaining_tokens = tokens;
    rl.reset_tokens_ms = tokens_reset_ms;
    s.rate_limit = rl;
    return s;
  };
  clock_.Advance(absl::Seconds(1));
  Reply(report(100, 5500, 9000, 3000));
  // Requests alone: 100 per 5.5 s; tokens unknown per call yet.
  EXPECT_DOUBLE_EQ(limiter().Snapshot().paced_rate, 100 / 5.5);
  clock_.Advance(absl::Seconds(1));
  // 10 calls cost 3000 tokens: 300 per call. Requests: 90 per 4.5 s = one per 50 ms; tokens:
  // 6000 / 300 = 20 calls per 2 s = one per 100 ms, the binding one.
  Reply(report(90, 4500, 6000, 2000));
  EXPECT_DOUBLE_EQ(limiter().Snapshot().paced_rate, 10.0);
}

TEST_F(AdaptiveLimiterTest, PacingOffIgnoresHeaders) {
  options_.initial_window = 8;
  options_.pacing = false;
  Dispatch();
  Reply(WithRequests(0, 5000));
  EXPECT_EQ(limiter().NextDispatchTime(), absl::InfinitePast());
  EXPECT_EQ(limiter().Window(), 8);
}

}  // namespace
}  // namespace hb
