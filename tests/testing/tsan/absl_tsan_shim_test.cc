// The synchronisation patterns our code relies on hand data between threads without a report
// under TSan (they fail with exit code 66 if absl_tsan_shim.cc does not make Debian's Abseil
// visible), and a real race is still reported. In other builds they are plain threading tests.
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

constexpr int kThreads = 4;

// Runs `body(i)` on kThreads threads and joins them.
template <typename Body>
void RunThreads(Body body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(body, i);
  for (std::thread& t : threads) t.join();
}

TEST(AbslTsanShimTest, MutexGuardsPlainData) {
  absl::Mutex mu;
  int counter = 0;
  RunThreads([&](int) {
    for (int j = 0; j < 1000; ++j) {
      absl::MutexLock lock(&mu);
      ++counter;
    }
  });
  EXPECT_EQ(counter, kThreads * 1000);
}

TEST(AbslTsanShimTest, ReaderLocksSeeWritersData) {
  absl::Mutex mu;
  int value = 0;
  std::atomic<int> seen{0};
  mu.Lock();  // the readers below wait for this writer
  std::vector<std::thread> readers;
  for (int i = 0; i < kThreads; ++i) {
    readers.emplace_back([&] {
      absl::ReaderMutexLock lock(&mu);
      if (value == 42) ++seen;
    });
  }
  value = 42;
  mu.Unlock();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(seen.load(), kThreads);
}

TEST(AbslTsanShimTest, TryLockGuardsPlainData) {
  absl::Mutex mu;
  int counter = 0;
  RunThreads([&](int) {
    for (int j = 0; j < 100; ++j) {
      while (!mu.TryLock()) {
      }
      ++counter;
      mu.Unlock();
    }
  });
  EXPECT_EQ(counter, kThreads * 100);
}

TEST(AbslTsanShimTest, CondVarHandsOverData) {
  absl::Mutex mu;
  absl::CondVar cv;
  bool ready = false;
  int payload = 0;
  std::thread producer([&] {
    absl::MutexLock lock(&mu);
    payload = 7;
    ready = true;
    cv.Signal();
  });
  {
    absl::MutexLock lock(&mu);
    while (!ready) cv.WaitWithTimeout(&mu, absl::Seconds(60));
    EXPECT_EQ(payload, 7);
  }
  producer.join();
}

TEST(AbslTsanShimTest, AwaitAndLockWhenSeeTheCondition) {
  absl::Mutex mu;
  int stage = 0;
  std::thread worker([&] {
    mu.LockWhen(absl::Condition(
        +[](int* s) { return *s == 1; }, &stage));
    stage = 2;
    mu.Unlock();
  });
  {
    absl::MutexLock lock(&mu);
    stage = 1;
    mu.Await(absl::Condition(
        +[](int* s) { return *s == 2; }, &stage));
    EXPECT_EQ(stage, 2);
  }
  worker.join();
}

TEST(AbslTsanShimTest, NotificationPublishesData) {
  absl::Notification notified;
  int payload = 0;
  std::thread writer([&] {
    payload = 42;
    notified.Notify();
  });
  // The inline HasBeenNotified() reads the flag without the mutex: a spin on it must see
  // the writer's data as WaitForNotification() does.
  while (!notified.HasBeenNotified()) std::this_thread::yield();
  EXPECT_EQ(payload, 42);
  notified.WaitForNotification();
  EXPECT_TRUE(notified.WaitForNotificationWithTimeout(absl::Seconds(1)));
  writer.join();
}

TEST(AbslTsanShimTest, BlockingCounterPublishesEveryDecrement) {
  absl::BlockingCounter done(kThreads);
  int slots[kThreads] = {};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      slots[i] = i + 1;
      done.DecrementCount();
    });
  }
  done.Wait();
  int sum = 0;
  for (int slot : slots) sum += slot;
  EXPECT_EQ(sum, kThreads * (kThreads + 1) / 2);
  for (std::thread& t : threads) t.join();
}

#if defined(__SANITIZE_THREAD__)
// Two threads write one int, one under a lock and one without: the shim must not hide it.
void RaceOnPurpose() {
  absl::Mutex mu;
  int counter = 0;
  std::thread other([&] {
    absl::MutexLock lock(&mu);
    ++counter;
  });
  ++counter;
  other.join();
  std::exit(counter == 2 ? 0 : 1);
}

TEST(AbslTsanShimDeathTest, RealRaceIsStillReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(RaceOnPurpose(), ::testing::ExitedWithCode(66),
              "WARNING: ThreadSanitizer: data race");
}
#endif

}  // namespace
}  // namespace hb
