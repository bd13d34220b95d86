// FakeScheduler: a Scheduler on a FakeClock whose timers fire only when the test says so, on
// the test's thread. Thread-safe.
//
//   FakeClock clock;
//   FakeScheduler scheduler(clock);
//   EXPECT_THAT(scheduler.PendingDelays(), ElementsAre(absl::Seconds(45)));
//   scheduler.AdvanceAndRun(absl::Seconds(45));  // advances the clock, fires what is due
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/scheduler.h"
#include "tests/testing/fake_clock.h"

namespace hb::testing {

// A Scheduler on a FakeClock: timers fire only when the test calls RunDue/AdvanceAndRun.
class FakeScheduler final : public Scheduler {
 public:
  explicit FakeScheduler(FakeClock& clock) : clock_(clock) {}

  TimerId Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) override;
  bool CancelTimer(TimerId id) override;

  // Delays of the timers not yet fired, in due order, as requested by Schedule.
  std::vector<absl::Duration> PendingDelays() const;
  // Every delay ever requested, in order.
  std::vector<absl::Duration> RequestedDelays() const;
  // Fires every timer due at the clock's current time; returns how many fired.
  int RunDue();
  // Advances the clock by `d`, then RunDue.
  int AdvanceAndRun(absl::Duration d);

 private:
  struct Timer {
    absl::Duration delay;
    absl::AnyInvocable<void()> fn;
  };
  FakeClock& clock_;
  mutable absl::Mutex mu_;
  TimerId next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::pair<absl::Time, TimerId>, Timer> timers_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> requested_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb::testing
