// Scheduler: timers for delayed work (retry backoff) on an event loop. Never a sleeping
// thread: the production implementation is CurlMultiHttpClient's loop; tests use
// hb::testing::FakeScheduler, driven by a FakeClock.
#pragma once

#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"

namespace hb {

class Scheduler {
 public:
  // 0 is never a valid id.
  using TimerId = uint64_t;

  virtual ~Scheduler() = default;

  // Runs `fn` once, no earlier than `delay` from now, on the scheduler's thread. Never runs
  // `fn` inline, so a caller may hold its own lock while scheduling. `fn` must not block.
  // Thread-safe.
  virtual TimerId Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) = 0;

  // Cancels a timer that has not fired: returns true when `fn` will now never run (it is
  // destroyed), false when it already ran, is running, or `id` is unknown. Thread-safe.
  virtual bool CancelTimer(TimerId id) = 0;
};

}  // namespace hb
