// Clock: the one seam through which code reads the time. Production code uses
// `Clock::Real()`; tests use `FakeClock` (tests/testing/fake_clock.h), which only moves when
// told to. No code outside RealClock calls absl::Now() directly.
#pragma once

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hb {

class Clock {
 public:
  virtual ~Clock() = default;
  // The current time. Thread-safe.
  virtual absl::Time Now() const = 0;
  // The process-wide real clock; never null, never destroyed.
  static Clock& Real();
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

inline Clock& Clock::Real() {
  static RealClock* const clock = new RealClock();
  return *clock;
}

}  // namespace hb
