#include "common/quota/fleet_quota.h"

#include <memory>
#include <vector>

#include "common/quota/local_quota_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/quota_lease.h"

namespace hb {
namespace {

using ::hb::testing::FakeClock;
using ::hb::testing::LeaseFor;

// Forwards to a budget shared by several quotas; fails with kUnavailable while `down`.
class SharedStore final : public QuotaStore {
 public:
  SharedStore(QuotaStore& target, const bool& down) : target_(target), down_(down) {}
  absl::StatusOr<LeaseReply> Lease(const LeaseRequest& request) override {
    if (down_) return absl::UnavailableError("connection refused");
    return target_.Lease(request);
  }

 private:
  QuotaStore& target_;
  const bool& down_;
};

class FleetQuotaTest : public ::testing::Test {
 protected:
  std::unique_ptr<FleetQuota> MakeQuota(QuotaLimits configured) {
    FleetQuotaOptions options;
    options.configured = configured;
    options.clock = &clock_;
    options.name = "test";
    options.on_degraded = [this](bool d) { degraded_events_.push_back(d); };
    return std::make_unique<FleetQuota>(std::make_unique<SharedStore>(budget_, down_),
                                        std::move(options));
  }

  // Acquires as fast as `quota` allows for `span` of fake time, stepping 1 ms; returns grants.
  static int64_t Drain(FakeClock& clock, std::vector<FleetQuota*> quotas, absl::Duration span,
                       int64_t tokens = 0, QuotaPriority priority = QuotaPriority::kBatch) {
    int64_t granted = 0;
    const absl::Time end = clock.Now() + span;
    while (clock.Now() < end) {
      for (FleetQuota* q : quotas) {
        while (q->Acquire(tokens, priority).granted) ++granted;
      }
      clock.Advance(absl::Milliseconds(1));
    }
    return granted;
  }

  FakeClock clock_;
  LocalQuotaStore budget_{clock_, QuotaShape{}};
  bool down_ = false;
  std::vector<bool> degraded_events_;
};

TEST(LocalQuotaStoreTest, GrantsUpToOneSecondOfTheRateThenSaysHowLongToWait) {
  FakeClock clock;
  LocalQuotaStore store(clock, QuotaShape{});
  LeaseRequest request = LeaseFor(QuotaPriority::kBatch, 20, 600);
  // 600 rpm x 0.95 = 9.5 per second; the bucket starts full at 9.5.
  absl::StatusOr<LeaseReply> first = store.Lease(request);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->requests, 9);
  EXPECT_EQ(first->limits, (QuotaLimits{600, 0}));
  absl::StatusOr<LeaseReply> second = store.Lease(request);
  EXPECT_EQ(second->requests, 0);
  // 0.5 left, one more needs 0.5 / 9.5 s.
  EXPECT_EQ(absl::ToInt64Milliseconds(second->wait), 52);
  clock.Advance(absl::Milliseconds(53));
  EXPECT_EQ(store.Lease(request)->requests, 1);
}

TEST(LocalQuotaStoreTest, BatchLeavesHalfTheBucketWhileInteractiveDemandExists) {
  FakeClock clock;
  LocalQuotaStore store(clock, QuotaShape{});
  LeaseRequest interactive = LeaseFor(QuotaPriority::kInteractive, 1, 6000);
  LeaseRequest batch = LeaseFor(QuotaPriority::kBatch, 1000, 6000);
  // Capacity 95; one interactive call leaves 94; batch may go down to 47.5 only.
  EXPECT_EQ(store.Lease(interactive)->requests, 1);
  EXPECT_EQ(store.Lease(batch)->requests, 46);
  EXPECT_EQ(store.Lease(batch)->requests, 0);
  // Interactive callers still find the reserve.
  interactive.requests = 1000;
  EXPECT_EQ(store.Lease(interactive)->requests, 48);
  // A trainer's pause between steps keeps the floor: batch takes the refill above it, and the
  // step's first reward finds half the bucket at once.
  clock.Advance(absl::Minutes(1));
  EXPECT_EQ(store.Lease(batch)->requests, 47);
  EXPECT_EQ(store.Lease(interactive)->requests, 48);
  // Without interactive demand for 10 minutes, batch has the whole bucket again.
  clock.Advance(absl::Minutes(10));
  EXPECT_EQ(store.Lease(batch)->requests, 95);
}

TEST(LocalQuotaStoreTest, PauseHoldsEveryLeaseAndLearnedLimitsAreShared) {
  FakeClock clock;
  LocalQuotaStore store(clock, QuotaShape{});
  EXPECT_EQ(store.Lease(LeaseFor(QuotaPriority::kBatch, 1, 0))->limits, QuotaLimits{});
  LeaseRequest teach = LeaseFor(QuotaPriority::kBatch, 0, 0);
  teach.pause = absl::Seconds(5);
  teach.learned = {60, 9000};
  EXPECT_EQ(store.Lease(teach)->limits, (QuotaLimits{60, 9000}));
  absl::StatusOr<LeaseReply> held = store.Lease(LeaseFor(QuotaPriority::kBatch, 1, 0));
  EXPECT_EQ(held->requests, 0);
  EXPECT_EQ(held->wait, absl::Seconds(5));
  EXPECT_EQ(held->limits, (QuotaLimits{60, 9000}));
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(store.Lease(LeaseFor(QuotaPriority::kBatch, 1, 0))->requests, 1);
}

TEST_F(FleetQuotaTest, TwoProcessesShareOneBudgetInLeases) {
  std::unique_ptr<FleetQuota> a = MakeQuota({600, 0});
  std::unique_ptr<FleetQuota> b = MakeQuota({600, 0});
  const int64_t granted = Drain(clock_, {a.get(), b.get()}, absl::Seconds(60));
  // 60 s at 9.5 per second plus the initial bucket (9.5): never more than the limit.
  EXPECT_LE(granted, 579);
  EXPECT_GE(granted, 570);
}

TEST_F(FleetQuotaTest, LeasesCutStoreRoundTrips) {
  std::unique_ptr<FleetQuota> a = MakeQuota({60000, 0});
  // 950 per second: a lease holds 100 ms of it, capped at 64.
  const int64_t granted = Drain(clock_, {a.get()}, absl::Seconds(10));
  EXPECT_GE(granted, 9500);
  // A saturated budget costs two round trips per lease of 64: the grant, and the refusal that
  // says when the next whole lease is there.
  EXPECT_LE(a->Stats().store_calls * 30, granted);
}

TEST_F(FleetQuotaTest, TokensAreSettledAgainstUsage) {
  std::unique_ptr<FleetQuota> a = MakeQuota({0, 60000});
  // 950 tokens per second; calls estimated at 100 that really cost 300.
  int64_t granted = 0;
  const absl::Time end = clock_.Now() + absl::Seconds(60);
  while (clock_.Now() < end) {
    while (a->Acquire(100, QuotaPriority::kBatch).granted) {
      ++granted;
      a->Settle(100, 300);
    }
    clock_.Advance(absl::Milliseconds(1));
  }
  // 57,000 tokens of refill + 950 in the bucket, at 300 each; the last debts may be unsent.
  EXPECT_LE(granted, 57950 / 300 + 10);
  EXPECT_GE(granted, 57950 / 300 - 10);
}

TEST_F(FleetQuotaTest, PauseStopsTheWholeFleet) {
  std::unique_ptr<FleetQuota> a = MakeQuota({600, 0});
  std::unique_ptr<FleetQuota> b = MakeQuota({600, 0});
  ASSERT_TRUE(a->Acquire(0, QuotaPriority::kBatch).granted);
  ASSERT_TRUE(b->Acquire(0, QuotaPriority::kBatch).granted);
  a->Pause(absl::Seconds(7));
  clock_.Advance(absl::Seconds(2));  // b's lease lapsed after 1 s: it asks the store
  QuotaDecision held = b->Acquire(0, QuotaPriority::kBatch);
  EXPECT_FALSE(held.granted);
  EXPECT_EQ(held.not_before, clock_.Now() + absl::Seconds(5));
  EXPECT_FALSE(a->Acquire(0, QuotaPriority::kBatch).granted);
  clock_.Advance(absl::Seconds(5));
  EXPECT_TRUE(b->Acquire(0, QuotaPriority::kBatch).granted);
}

TEST_F(FleetQuotaTest, UnknownLimitsGrantUntilOneIsLearnedAndShared) {
  std::unique_ptr<FleetQuota> a = MakeQuota({});
  std::unique_ptr<FleetQuota> b = MakeQuota({});
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(a->Acquire(10, QuotaPriority::kBatch).granted);
  EXPECT_EQ(a->Stats().store_calls, 1);
  a->Learn({60, 0});
  EXPECT_TRUE(a->Acquire(10, QuotaPriority::kBatch).granted);
  EXPECT_EQ(a->Stats().limits, (QuotaLimits{60, 0}));
  // b learns the fleet's limit from the store: the bucket's one left (its capacity is 2, the
  // least that leaves a lease above the batch floor), then 0.95 per second.
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(Drain(clock_, {b.get()}, absl::Seconds(10)), 11);
  EXPECT_EQ(b->Stats().limits, (QuotaLimits{60, 0}));
}

TEST_F(FleetQuotaTest, StoreDownFallsBackToItsShareAndRecovers) {
  std::unique_ptr<FleetQuota> a = MakeQuota({6000, 0});
  ASSERT_TRUE(a->Acquire(0, QuotaPriority::kBatch).granted);
  down_ = true;
  clock_.Advance(absl::Seconds(2));
  // 25% of 6,000 rpm x 0.95: 23.75 per second, plus its bucket.
  const int64_t granted = Drain(clock_, {a.get()}, absl::Seconds(10));
  EXPECT_GE(granted, 237);
  EXPECT_LE(granted, 262);
  EXPECT_TRUE(a->Stats().degraded);
  // One store call per reconnect interval, not one per call.
  EXPECT_LE(a->Stats().store_errors, 11);
  down_ = false;
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(a->Acquire(0, QuotaPriority::kBatch).granted);
  EXPECT_FALSE(a->Stats().degraded);
  EXPECT_THAT(degraded_events_, ::testing::ElementsAre(true, false));
}

TEST_F(FleetQuotaTest, StoreDownWithNoKnownLimitGrantsEverything) {
  down_ = true;
  std::unique_ptr<FleetQuota> a = MakeQuota({});
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(a->Acquire(10, QuotaPriority::kBatch).granted);
  EXPECT_TRUE(a->Stats().degraded);
  EXPECT_EQ(a->Stats().store_errors, 1);
}

TEST_F(FleetQuotaTest, InteractiveProcessIsServedAheadOfABatchBackfill) {
  std::unique_ptr<FleetQuota> trainer = MakeQuota({600, 0});
  std::unique_ptr<FleetQuota> backfill = MakeQuota({600, 0});
  // The trainer wants one call every 500 ms; the backfill wants everything.
  int64_t trainer_granted = 0, trainer_asked = 0;
  const absl::Time end = clock_.Now() + absl::Seconds(60);
  absl::Time next_trainer = clock_.Now();
  while (clock_.Now() < end) {
    if (clock_.Now() >= next_trainer) {
      ++trainer_asked;
      if (trainer->Acquire(0, QuotaPriority::kInteractive).granted) {
        ++trainer_granted;
        next_trainer += absl::Milliseconds(500);
      }
    }
    while (backfill->Acquire(0, QuotaPriority::kBatch).granted) {
    }
    clock_.Advance(absl::Milliseconds(1));
  }
  // Every trainer call got its permit when it asked.
  EXPECT_EQ(trainer_granted, 120);
  EXPECT_EQ(trainer_asked, 120);
}

}  // namespace
}  // namespace hb
