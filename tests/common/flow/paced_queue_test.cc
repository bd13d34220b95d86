// PacedQueue on a FakeClock and FakeScheduler: admission order and lanes, the in-flight window,
// a Retry-After hold released by the pacing timer, inline finishes without recursion, group
// cancellation, and Close with items queued and calls in flight.
#include "common/flow/paced_queue.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_scheduler.h"

namespace hb {
namespace {

using ::hb::testing::FakeClock;
using ::hb::testing::FakeScheduler;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

ReplySignal Ok() {
  ReplySignal signal;
  signal.ok = true;
  return signal;
}

// A 429 carrying the upstream's Retry-After.
ReplySignal RefusedFor(absl::Duration retry_after) {
  ReplySignal signal;
  signal.rate_limited = true;
  signal.retry_after = retry_after;
  return signal;
}

// Records which items were admitted (their tickets, to finish them) and which were dropped.
class PacedQueueTest : public ::testing::Test {
 protected:
  PacedQueueOptions Options(int max_in_flight, bool adaptive) {
    PacedQueueOptions options;
    options.max_in_flight = max_in_flight;
    options.adaptive = adaptive;
    options.clock = &clock_;
    return options;
  }
  PacedQueue::Work Item(std::string name) {
    return [this, name](absl::StatusOr<DispatchTicket> ticket) {
      absl::MutexLock lock(&mu_);
      if (ticket.ok()) {
        admitted_.push_back(name);
        tickets_.push_back(*ticket);
      } else {
        dropped_.push_back(name + ": " + std::string(ticket.status().message()));
        EXPECT_EQ(ticket.status().code(), absl::StatusCode::kCancelled);
      }
    };
  }
  std::vector<std::string> admitted() {
    absl::MutexLock lock(&mu_);
    return admitted_;
  }
  std::vector<std::string> dropped() {
    absl::MutexLock lock(&mu_);
    return dropped_;
  }
  // Finishes the oldest admitted call still in flight.
  void FinishOldest(PacedQueue& queue, const ReplySignal& signal) {
    DispatchTicket ticket;
    {
      absl::MutexLock lock(&mu_);
      ASSERT_LT(finished_, tickets_.size());
      ticket = tickets_[finished_++];
    }
    queue.Finish(ticket, signal);
  }

  FakeClock clock_;
  FakeScheduler scheduler_{clock_};
  absl::Mutex mu_;
  std::vector<std::string> admitted_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> dropped_ ABSL_GUARDED_BY(mu_);
  std::vector<DispatchTicket> tickets_ ABSL_GUARDED_BY(mu_);
  size_t finished_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST_F(PacedQueueTest, AdmitsInOrderWithinTheWindowAndOneMorePerFinish) {
  PacedQueue queue(scheduler_, Options(2, false));
  for (const char* name : {"a", "b", "c", "d"}) queue.Push(Item(name));
  EXPECT_THAT(admitted(), ElementsAre("a", "b"));
  EXPECT_EQ(queue.Stats().queued, 2);
  EXPECT_EQ(queue.Stats().in_flight, 2);
  EXPECT_EQ(queue.Stats().window, 2);
  FinishOldest(queue, Ok());
  EXPECT_THAT(admitted(), ElementsAre("a", "b", "c"));
  // A failure ends the call like a success when the queue does not adapt.
  FinishOldest(queue, ReplySignal{});
  EXPECT_THAT(admitted(), ElementsAre("a", "b", "c", "d"));
  EXPECT_EQ(queue.Stats().queued, 0);
  EXPECT_THAT(scheduler_.RequestedDelays(), IsEmpty());
}

TEST_F(PacedQueueTest, FrontLaneItemsGoFirstInTheOrderTheyWerePushed) {
  PacedQueueOptions options = Options(1, false);
  options.start_paused = true;
  PacedQueue queue(scheduler_, options);
  queue.Push(Item("row1"));
  queue.Push(Item("row2"));
  queue.Push(Item("retry1"), PacedQueue::Lane::kFront);
  std::vector<PacedQueue::Work> later;
  later.push_back(Item("retry2"));
  later.push_back(Item("retry3"));
  queue.PushAll(std::move(later), PacedQueue::Lane::kFront);
  EXPECT_THAT(admitted(), IsEmpty());  // paused
  queue.Start();
  EXPECT_THAT(admitted(), ElementsAre("retry1"));
  for (int i = 0; i < 4; ++i) FinishOldest(queue, Ok());
  EXPECT_THAT(admitted(), ElementsAre("retry1", "retry2", "retry3", "row1", "row2"));
}

TEST_F(PacedQueueTest, ARetryAfterHoldsDispatchUntilThePacingTimerFires) {
  PacedQueue queue(scheduler_, Options(4, true));
  queue.Push(Item("a"));
  queue.Push(Item("b"));
  FinishOldest(queue,
               RefusedFor(absl::Seconds(30)));  // "a" came back with a 429 and Retry-After: 30 s
  queue.Push(Item("c"));
  queue.Push(Item("d"));
  EXPECT_THAT(admitted(), ElementsAre("a", "b"));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Seconds(30)));
  // A reply meanwhile does not lift the hold, and keeps the one timer.
  FinishOldest(queue, Ok());
  EXPECT_THAT(admitted(), ElementsAre("a", "b"));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Seconds(30)));
  EXPECT_EQ(scheduler_.AdvanceAndRun(absl::Seconds(29)), 0);
  EXPECT_EQ(scheduler_.AdvanceAndRun(absl::Seconds(1)), 1);
  // The 429 halved the window of 4: two calls go out.
  EXPECT_EQ(queue.Stats().window, 2);
  EXPECT_THAT(admitted(), ElementsAre("a", "b", "c", "d"));
  EXPECT_THAT(scheduler_.PendingDelays(), IsEmpty());
}

TEST_F(PacedQueueTest, AFinishFromInsideAnItemAdmitsTheNextWithoutRecursing) {
  // A client that answers inline: each admitted item finishes its own call at once.
  PacedQueue* queue_ptr = nullptr;
  int depth = 0;
  int max_depth = 0;
  std::vector<int> order;
  PacedQueue queue(scheduler_, Options(1, true));
  queue_ptr = &queue;
  for (int i = 0; i < 100; ++i) {
    queue.Push([&, i](absl::StatusOr<DispatchTicket> ticket) {
      ASSERT_TRUE(ticket.ok());
      ++depth;
      max_depth = std::max(max_depth, depth);
      order.push_back(i);
      queue_ptr->Finish(*ticket, Ok());
      --depth;
    });
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(max_depth, 1);
  EXPECT_EQ(queue.Stats().in_flight, 0);
}

TEST_F(PacedQueueTest, CancelDropsTheQueuedItemsOfOneGroupOnly) {
  PacedQueue queue(scheduler_, Options(1, false));
  queue.Push(Item("a0"), PacedQueue::Lane::kBack, 1);
  queue.Push(Item("a1"), PacedQueue::Lane::kBack, 1);
  queue.Push(Item("b0"), PacedQueue::Lane::kBack, 2);
  queue.Push(Item("a2"), PacedQueue::Lane::kBack, 1);
  EXPECT_EQ(queue.Cancel(1, "grading failed"), 2);  // a0 is in flight already
  EXPECT_THAT(dropped(), ElementsAre("a1: grading failed", "a2: grading failed"));
  EXPECT_EQ(queue.Cancel(7, "nothing"), 0);
  FinishOldest(queue, Ok());
  EXPECT_THAT(admitted(), ElementsAre("a0", "b0"));
}

TEST_F(PacedQueueTest, CloseDropsQueuedItemsLetsCallsInFlightFinishAndRefusesNewOnes) {
  PacedQueue queue(scheduler_, Options(2, true));
  for (const char* name : {"a", "b", "c", "d"}) queue.Push(Item(name));
  queue.Close("shutting down");
  EXPECT_THAT(dropped(), ElementsAre("c: shutting down", "d: shutting down"));
  queue.Push(Item("late"));
  EXPECT_THAT(dropped(), ElementsAre("c: shutting down", "d: shutting down",
                                     "late: the dispatch queue is closed"));
  FinishOldest(queue, Ok());
  FinishOldest(queue, Ok());
  EXPECT_THAT(admitted(), ElementsAre("a", "b"));
  EXPECT_EQ(queue.Stats().in_flight, 0);
}

TEST_F(PacedQueueTest, CloseCancelsThePacingTimer) {
  PacedQueue queue(scheduler_, Options(4, true));
  queue.Push(Item("a"));
  FinishOldest(queue, RefusedFor(absl::Seconds(5)));
  queue.Push(Item("b"));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Seconds(5)));
  queue.Close("stop");
  EXPECT_THAT(scheduler_.PendingDelays(), IsEmpty());
  EXPECT_THAT(dropped(), ElementsAre("b: stop"));
}

TEST_F(PacedQueueTest, ThreadsPushingAndFinishingAtOnceNeverExceedTheWindow) {
  PacedQueue queue(scheduler_, Options(3, false));
  absl::Mutex mu;
  int in_flight = 0;
  int max_in_flight = 0;
  int done = 0;
  std::vector<DispatchTicket> out;
  auto work = [&](absl::StatusOr<DispatchTicket> ticket) {
    ASSERT_TRUE(ticket.ok());
    absl::MutexLock lock(&mu);
    max_in_flight = std::max(max_in_flight, ++in_flight);
    out.push_back(*ticket);
  };
  std::vector<std::thread> pushers;
  for (int t = 0; t < 4; ++t) {
    pushers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) queue.Push(work);
    });
  }
  // Finish calls as they come until all 200 are done.
  std::thread finisher([&] {
    while (true) {
      DispatchTicket ticket;
      {
        absl::MutexLock lock(&mu);
        auto ready = [&] { return !out.empty() || done == 200; };
        mu.Await(absl::Condition(&ready));
        if (done == 200) return;
        ticket = out.back();
        out.pop_back();
        --in_flight;
        ++done;
      }
      queue.Finish(ticket, Ok());
    }
  });
  for (std::thread& t : pushers) t.join();
  finisher.join();
  EXPECT_LE(max_in_flight, 3);
  EXPECT_EQ(queue.Stats().queued, 0);
  EXPECT_EQ(queue.Stats().in_flight, 0);
}

}  // namespace
}  // namespace hb
