// DispatchWatcher: what tests wait on instead of polling a Dispatcher. It records the stats
// Dispatcher::Run reports through DispatcherOptions::on_idle each time it has nothing left to
// do until the next reply, commit, timer or stop, and lets the test block until such a report
// satisfies a condition.
//
//   DispatchWatcher watcher;
//   watcher.Attach(options);
//   std::thread runner([&] { stats = dispatcher.Run(rows); });
//   watcher.AwaitIdle([](const DispatchStats& s) { return s.waiting_retry == 1; });
//   const int64_t seen = watcher.reports();
//   scheduler.AdvanceAndRun(absl::Seconds(30));  // fires the retry timer
//   watcher.AwaitIdle(..., seen);                // a report made after the timer fired
#pragma once

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "orchestrator/run/dispatcher.h"

namespace hb::testing {

class DispatchWatcher {
 public:
  // Sets `options.on_idle` to record into this watcher, which must outlive the Run.
  void Attach(DispatcherOptions& options) {
    options.on_idle = [this](const DispatchStats& stats) {
      absl::MutexLock lock(&mu_);
      latest_ = stats;
      ++reports_;
    };
  }

  // Idle reports received so far. Thread-safe.
  int64_t reports() const {
    absl::MutexLock lock(&mu_);
    return reports_;
  }

  // Blocks until the latest idle report is one made after the first `after` reports and
  // `done` holds for it; returns that report. A dispatcher that never gets there fails the
  // test after a generous guard (a hang, not a timing assertion).
  DispatchStats AwaitIdle(const std::function<bool(const DispatchStats&)>& done,
                          int64_t after = 0) {
    absl::MutexLock lock(&mu_);
    auto ready = [&] { return reports_ > after && done(latest_); };
    const bool reached = mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(60));
    EXPECT_TRUE(reached) << "the dispatcher never went idle in the expected state";
    return latest_;
  }

 private:
  mutable absl::Mutex mu_;
  DispatchStats latest_ ABSL_GUARDED_BY(mu_);
  int64_t reports_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace hb::testing
