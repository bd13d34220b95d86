#include "common/base/thread_scheduler.h"

#include "common/base/clock.h"

namespace hb {

ThreadScheduler::ThreadScheduler() : thread_([this] { Loop(); }) {}

ThreadScheduler::~ThreadScheduler() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  thread_.join();
  timers_.clear();  // destroyed here, outside any callback
}

Scheduler::TimerId ThreadScheduler::Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) {
  absl::MutexLock lock(&mu_);
  const TimerId id = ++next_id_;
  timers_.emplace(std::make_pair(Clock::Real().Now() + delay, id), std::move(fn));
  cv_.SignalAll();
  return id;
}

bool ThreadScheduler::CancelTimer(TimerId id) {
  absl::AnyInvocable<void()> dropped;  // destroyed after the lock is released
  absl::MutexLock lock(&mu_);
  for (auto it = timers_.begin(); it != timers_.end(); ++it) {
    if (it->first.second != id) continue;
    dropped = std::move(it->second);
    timers_.erase(it);
    return true;
  }
  return false;
}

void ThreadScheduler::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (timers_.empty()) {
      cv_.Wait(&mu_);
      continue;
    }
    const absl::Time due = timers_.begin()->first.first;
    if (due > Clock::Real().Now()) {
      cv_.WaitWithDeadline(&mu_, due);  // an event loop's wait, woken early by Schedule
      continue;
    }
    absl::AnyInvocable<void()> fn = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    mu_.Unlock();
    fn();
    fn = nullptr;
    mu_.Lock();
  }
}

}  // namespace hb
