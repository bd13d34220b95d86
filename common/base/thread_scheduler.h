// ThreadScheduler: a Scheduler whose timers fire on one thread of its own, by the real clock.
// For processes with no event loop to lend (hb-orchestrator's dispatcher); the grader's timers
// run on CurlMultiHttpClient's loop instead. Tests use hb::testing::FakeScheduler.
#pragma once

#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/scheduler.h"

namespace hb {

class ThreadScheduler final : public Scheduler {
 public:
  // Starts the timer thread.
  ThreadScheduler();
  // Cancels the timers not yet fired (their functions are destroyed, never run) and joins the
  // thread, waiting for a function in progress to return.
  ~ThreadScheduler() override;
  ThreadScheduler(const ThreadScheduler&) = delete;
  ThreadScheduler& operator=(const ThreadScheduler&) = delete;

  // Thread-safe; timers due at the same time fire in the order they were scheduled.
  TimerId Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) override;
  // Thread-safe; never waits for a function in progress.
  bool CancelTimer(TimerId id) override;

 private:
  void Loop();

  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  TimerId next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::pair<absl::Time, TimerId>, absl::AnyInvocable<void()>> timers_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace hb
