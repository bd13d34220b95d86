#include "tests/testing/fake_scheduler.h"

namespace hb::testing {

Scheduler::TimerId FakeScheduler::Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) {
  absl::MutexLock lock(&mu_);
  TimerId id = ++next_id_;
  timers_.emplace(std::make_pair(clock_.Now() + delay, id), Timer{delay, std::move(fn)});
  requested_.push_back(delay);
  return id;
}

bool FakeScheduler::CancelTimer(TimerId id) {
  absl::AnyInvocable<void()> dropped;
  absl::MutexLock lock(&mu_);
  for (auto it = timers_.begin(); it != timers_.end(); ++it) {
    if (it->first.second == id) {
      dropped = std::move(it->second.fn);
      timers_.erase(it);
      return true;
    }
  }
  return false;
}

std::vector<absl::Duration> FakeScheduler::PendingDelays() const {
  absl::MutexLock lock(&mu_);
  std::vector<absl::Duration> out;
  for (const auto& [key, timer] : timers_) out.push_back(timer.delay);
  return out;
}

std::vector<absl::Duration> FakeScheduler::RequestedDelays() const {
  absl::MutexLock lock(&mu_);
  return requested_;
}

int FakeScheduler::RunDue() {
  int fired = 0;
  while (true) {
    absl::AnyInvocable<void()> fn;
    {
      absl::MutexLock lock(&mu_);
      if (timers_.empty() || timers_.begin()->first.first > clock_.Now()) return fired;
      fn = std::move(timers_.begin()->second.fn);
      timers_.erase(timers_.begin());
    }
    fn();
    ++fired;
  }
}

int FakeScheduler::AdvanceAndRun(absl::Duration d) {
  clock_.Advance(d);
  return RunDue();
}

}  // namespace hb::testing
