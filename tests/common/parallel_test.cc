// ParallelFor: every index exactly once, in contiguous chunks, small work on the caller's thread.
#include "common/base/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

TEST(ParallelForTest, EveryIndexIsVisitedExactlyOnceInContiguousChunks) {
  for (const size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{100001}}) {
    std::vector<std::atomic<int>> visits(count);
    absl::Mutex mu;
    std::vector<std::pair<size_t, size_t>> chunks;
    ParallelFor(count, 10, [&](size_t begin, size_t end) {
      {
        absl::MutexLock lock(&mu);
        chunks.emplace_back(begin, end);
      }
      for (size_t i = begin; i < end; ++i) visits[i].fetch_add(1);
    });
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(visits[i].load(), 1) << i << " of " << count;
    std::sort(chunks.begin(), chunks.end());
    size_t next = 0;
    for (const auto& [begin, end] : chunks) {
      EXPECT_EQ(begin, next);
      EXPECT_LT(begin, end);
      next = end;
    }
    EXPECT_EQ(next, count);
  }
}

TEST(ParallelForTest, WorkSmallerThanTwoChunksRunsInlineOnTheCallersThread) {
  std::vector<std::thread::id> threads;
  ParallelFor(15, 10, [&](size_t, size_t) { threads.push_back(std::this_thread::get_id()); });
  EXPECT_THAT(threads, ::testing::ElementsAre(std::this_thread::get_id()));
}

TEST(ParallelForTest, LargeWorkUsesTheMachinesCores) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core";
  absl::Mutex mu;
  std::vector<std::thread::id> threads;
  ParallelFor(1000, 10, [&](size_t, size_t) {
    absl::MutexLock lock(&mu);
    threads.push_back(std::this_thread::get_id());
  });
  EXPECT_GE(threads.size(), 2u);
  EXPECT_LE(threads.size(), 8u);
  EXPECT_EQ(std::count(threads.begin(), threads.end(), std::this_thread::get_id()), 1);
}

}  // namespace
}  // namespace hb
