// PollUntil: for tests that watch another PROCESS change the world (a file appears, a journal
// holds N rows, a log gains a line). It checks `condition` every `every` until it holds or
// `timeout` passes; the timeout is a guard against a hung test, never a synchronisation point.
// In-process code synchronises on its own events (absl::Notification, FakeClock), not this;
// the exception is a value no event announces (a server's in-flight gauge).
//
//   ASSERT_TRUE(PollUntil([&] { return FileContains(out + "/watch.jsonl", "graded"); }));
#pragma once

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hb::testing {

// True as soon as `condition()` is true; false when it is still false after `timeout`.
inline bool PollUntil(const std::function<bool()>& condition,
                      absl::Duration timeout = absl::Seconds(60),
                      absl::Duration every = absl::Milliseconds(5)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (condition()) return true;
    if (absl::Now() > deadline) return false;
    absl::SleepFor(every);  // observing another process's progress, not synchronising
  }
}

}  // namespace hb::testing
