// InlineScheduler: a Scheduler that runs each timer at once, on the caller's thread, and records
// its delay; given a FakeClock, it first moves the clock by the delay, as if the time had passed.
// For code whose retries block its caller anyway (BatchApi): the test asserts the delays that
// were asked for, and nothing sleeps. Not thread-safe (FakeScheduler is, and fires on demand).
//
//   FakeClock clock;
//   InlineScheduler scheduler(clock);
//   ... the code under test retries ...
//   EXPECT_THAT(scheduler.delays(), ElementsAre(absl::Seconds(1), absl::Seconds(7)));
#pragma once

#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "common/base/scheduler.h"
#include "tests/testing/fake_clock.h"

namespace hb::testing {

class InlineScheduler final : public Scheduler {
 public:
  InlineScheduler() = default;
  explicit InlineScheduler(FakeClock& clock) : clock_(&clock) {}

  // Advances the clock (if any) by `delay`, records it, then runs `fn` before returning.
  TimerId Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) override {
    if (clock_ != nullptr) clock_->Advance(delay);
    delays_.push_back(delay);
    fn();
    return static_cast<TimerId>(delays_.size());
  }
  // Nothing is ever pending.
  bool CancelTimer(TimerId) override { return false; }

  // Every delay asked for, in order.
  const std::vector<absl::Duration>& delays() const { return delays_; }

 private:
  FakeClock* const clock_ = nullptr;
  std::vector<absl::Duration> delays_;
};

}  // namespace hb::testing
