// StopSignals: SIGTERM/SIGINT become callbacks and a waitable flag instead of process death.
#include "common/base/process.h"

#include <signal.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

struct Seen {
  absl::Mutex mu;
  std::vector<std::pair<int, int>> calls ABSL_GUARDED_BY(mu);  // (signal, count)

  void Add(int signal, int count) {
    absl::MutexLock lock(&mu);
    calls.emplace_back(signal, count);
  }
  void AwaitCalls(size_t n) {
    std::pair<Seen*, size_t> arg(this, n);
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](std::pair<Seen*, size_t>* a) {
          a->first->mu.AssertHeld();
          return a->first->calls.size() >= a->second;
        },
        &arg));
  }
};

TEST(StopSignalsTest, EverySignalReachesTheCallbackAndTheFirstWakesWait) {
  Seen seen;
  {
    StopSignals signals([&seen](int signal, int count) { seen.Add(signal, count); });
    EXPECT_FALSE(signals.received());
    ASSERT_EQ(kill(getpid(), SIGTERM), 0);  // blocked here: only the watcher takes it
    EXPECT_EQ(signals.Wait(), SIGTERM);
    EXPECT_TRUE(signals.received());
    seen.AwaitCalls(1);
    ASSERT_EQ(kill(getpid(), SIGINT), 0);
    seen.AwaitCalls(2);
    EXPECT_EQ(signals.Wait(), SIGTERM);  // still the first one
  }
  absl::MutexLock lock(&seen.mu);
  EXPECT_EQ(seen.calls, (std::vector<std::pair<int, int>>{{SIGTERM, 1}, {SIGINT, 2}}));
}

TEST(StopSignalsTest, RestoresTheSignalMask) {
  sigset_t before, after;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  { StopSignals signals; }
  pthread_sigmask(SIG_SETMASK, nullptr, &after);
  EXPECT_EQ(sigismember(&before, SIGTERM), sigismember(&after, SIGTERM));
  EXPECT_EQ(sigismember(&before, SIGINT), sigismember(&after, SIGINT));
}

}  // namespace
}  // namespace hb
