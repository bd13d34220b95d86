// RedisQuotaStore against a real redis-server on a Unix socket in a temporary folder
// (tests/testing/redis_server.h): the shared budget, the script after SCRIPT FLUSH and restarts,
// credentials, and FleetQuota's fallback while Redis is killed or stopped.
#include "common/quota/redis_quota_store.h"

#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/quota/fleet_quota.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/quota_lease.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::FakeClock;
using ::hb::testing::LeaseFor;
using ::hb::testing::RedisServer;
using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class RedisQuotaStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  RedisQuotaStoreOptions Options(const std::string& url = "") const {
    RedisQuotaStoreOptions options;
    options.endpoint = *ParseRedisUrl(url.empty() ? server_->url() : url);
    options.key = "hb:quota:test";
    options.timeout = absl::Milliseconds(200);
    return options;
  }

  std::unique_ptr<RedisQuotaStore> Connect() const {
    absl::StatusOr<std::unique_ptr<RedisQuotaStore>> store = RedisQuotaStore::Connect(Options());
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  std::unique_ptr<RedisServer> server_;
};

TEST_F(RedisQuotaStoreTest, TwoProcessesDrawFromOneBudget) {
  std::unique_ptr<RedisQuotaStore> a = Connect(), b = Connect();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // 60 rpm: 0.95 per second, a bucket of 2 (the least that leaves a lease above the floor).
  // Redis refills on its own clock, so the bounds allow for the real time between the leases
  // (a loaded or sanitizer-built machine can take a good part of a second).
  const absl::Time start = absl::Now();
  absl::StatusOr<LeaseReply> first = a->Lease(LeaseFor(QuotaPriority::kBatch, 20, 60));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->requests, 2);
  EXPECT_EQ(first->limits, (QuotaLimits{60, 0}));
  absl::StatusOr<LeaseReply> second = b->Lease(LeaseFor(QuotaPriority::kBatch, 20, 60));
  const absl::Duration elapsed = absl::Now() - start;
  ASSERT_TRUE(second.ok()) << second.status();
  if (elapsed >= absl::Milliseconds(1000)) GTEST_SKIP() << "the machine stalled " << elapsed;
  EXPECT_EQ(second->requests, 0);
  EXPECT_GE(second->wait, absl::Milliseconds(1053) - elapsed - absl::Milliseconds(5));
  EXPECT_LE(second->wait, absl::Milliseconds(1053));
}

TEST_F(RedisQuotaStoreTest, TheScriptIsTheLocalArithmetic) {
  std::unique_ptr<RedisQuotaStore> redis = Connect();
  ASSERT_NE(redis, nullptr);
  FakeClock clock;
  LocalQuotaStore local(clock, QuotaShape{});
  for (QuotaStore* store : std::vector<QuotaStore*>{redis.get(), &local}) {
    SCOPED_TRACE(store == &local ? "local" : "redis");
    const absl::Time start = absl::Now();
    EXPECT_EQ(store->Lease(LeaseFor(QuotaPriority::kInteractive, 1, 6000))->requests, 1);
    // Batch leaves half of the 95-request bucket. Redis's clock refills 95 a second meanwhile,
    // so the upper bound grows with the real time between the two leases (none on the fake clock).
    const int64_t batch = store->Lease(LeaseFor(QuotaPriority::kBatch, 1000, 6000))->requests;
    const double elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
    EXPECT_GE(batch, 46);
    EXPECT_LE(batch, 47 + static_cast<int64_t>(elapsed_s * 95));
    LeaseRequest teach = LeaseFor(QuotaPriority::kBatch, 0, 0);
    teach.pause = absl::Seconds(30);
    teach.learned = {100, 20000};
    EXPECT_EQ(store->Lease(teach)->limits, (QuotaLimits{100, 20000}));
    absl::StatusOr<LeaseReply> held = store->Lease(LeaseFor(QuotaPriority::kInteractive, 1, 0));
    EXPECT_EQ(held->requests, 0);
    EXPECT_GT(held->wait, absl::Seconds(29));
    EXPECT_LE(held->wait, absl::Seconds(30));
  }
}

TEST_F(RedisQuotaStoreTest, ScriptIsSentAgainAfterScriptFlushAndRestart) {
  std::unique_ptr<RedisQuotaStore> store = Connect();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Lease(LeaseFor(QuotaPriority::kBatch, 1, 60)).ok());
  ASSERT_EQ(*server_->Command({"SCRIPT", "FLUSH"}), "OK");
  absl::StatusOr<LeaseReply> after_flush = store->Lease(LeaseFor(QuotaPriority::kBatch, 1, 60));
  ASSERT_TRUE(after_flush.ok()) << after_flush.status();
  EXPECT_EQ(after_flush->requests, 1);  // the bucket of 2 kept its state: one left
  EXPECT_EQ(store->Lease(LeaseFor(QuotaPriority::kBatch, 1, 60))->requests, 0);

  ASSERT_TRUE(server_->Restart().ok());
  // The old connection is gone: one failure, then a new connection and the script again.
  EXPECT_THAT(store->Lease(LeaseFor(QuotaPriority::kBatch, 1, 60)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("Redis at unix://")));
  absl::StatusOr<LeaseReply> fresh = store->Lease(LeaseFor(QuotaPriority::kBatch, 1, 60));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->requests, 1);  // a new, full budget
}

TEST(RedisQuotaStoreAuthTest, WrongOrMissingPasswordIsAClearErrorThatNeverShowsIt) {
  absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start("right-horse");
  ASSERT_TRUE(server.ok()) << server.status();
  RedisQuotaStoreOptions options;
  options.key = "hb:quota:test";
  options.endpoint = *ParseRedisUrl((*server)->url());
  options.endpoint.password = "wrong-battery";
  EXPECT_THAT(
      RedisQuotaStore::Connect(options),
      StatusIs(absl::StatusCode::kPermissionDenied,
               AllOf(HasSubstr("refused the credentials"), HasSubstr("--quota-redis-password-file"),
                     Not(HasSubstr("wrong-battery")))));
  options.endpoint.password = "";
  EXPECT_THAT(RedisQuotaStore::Connect(options),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("NOAUTH")));
  options.endpoint.password = "right-horse";
  EXPECT_TRUE(RedisQuotaStore::Connect(options).ok());
}

TEST(RedisQuotaStoreUnreachableTest, NoRedisIsUnavailableNamingIt) {
  RedisQuotaStoreOptions options;
  options.endpoint = *ParseRedisUrl("unix://" + hb::testing::MakeTempDir() + "/none.sock");
  EXPECT_THAT(RedisQuotaStore::Connect(options),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cannot reach Redis at unix://")));
}

class FleetQuotaOnRedisTest : public RedisQuotaStoreTest {
 protected:
  std::unique_ptr<FleetQuota> MakeQuota() {
    FleetQuotaOptions options;
    options.configured = {600, 0};
    options.clock = &clock_;
    options.name = "hb:quota:test";
    options.on_degraded = [this](bool d) { degraded_events_.push_back(d); };
    return std::make_unique<FleetQuota>(Connect(), std::move(options));
  }

  FakeClock clock_;
  std::vector<bool> degraded_events_;
};

TEST_F(FleetQuotaOnRedisTest, KilledRedisMeansFallbackAndARestartedOneIsUsedAgain) {
  std::unique_ptr<FleetQuota> quota = MakeQuota();
  ASSERT_TRUE(quota->Acquire(0, QuotaPriority::kBatch).granted);
  EXPECT_EQ(quota->Stats().store_errors, 0);
  server_->Kill();
  clock_.Advance(absl::Seconds(2));  // the lease lapsed
  // Degraded: its own 25% share (150 rpm x 0.95, a bucket of 2.375) instead of failing.
  EXPECT_TRUE(quota->Acquire(0, QuotaPriority::kBatch).granted);
  EXPECT_TRUE(quota->Stats().degraded);
  EXPECT_TRUE(quota->Acquire(0, QuotaPriority::kBatch).granted);
  EXPECT_FALSE(quota->Acquire(0, QuotaPriority::kBatch).granted);
  EXPECT_EQ(quota->Stats().store_errors, 1);  // no new attempt before the reconnect interval

  ASSERT_TRUE(server_->Restart().ok());
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(quota->Acquire(0, QuotaPriority::kBatch).granted);
  EXPECT_FALSE(quota->Stats().degraded);
  EXPECT_THAT(degraded_events_, ElementsAre(true, false));
}

TEST_F(FleetQuotaOnRedisTest, StoppedRedisTimesOutIntoFallbackAndResumes) {
  std::unique_ptr<FleetQuota> quota = MakeQuota();
  ASSERT_TRUE(quota->Acquire(0, QuotaPriority::kBatch).granted);
  server_->Pause();
  clock_.Advance(absl::Seconds(2));
  EXPECT_TRUE(quota->Acquire(0, QuotaPriority::kBatch).granted);  // after the 200 ms timeout
  EXPECT_TRUE(quota->Stats().degraded);
  server_->Resume();
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(quota->Acquire(0, QuotaPriority::kBatch).granted);
  EXPECT_FALSE(quota->Stats().degraded);
  EXPECT_THAT(degraded_events_, ElementsAre(true, false));
}

TEST(QuotaKeyTest, KeyedByEndpointAndAHashOfTheKeyNeverTheKey) {
  const std::string a = QuotaKey("https://api.openai.com/v1", "sk-secret-1", "");
  EXPECT_EQ(a, QuotaKey("https://api.openai.com/v1/", "sk-secret-1", ""));
  EXPECT_NE(a, QuotaKey("https://api.openai.com/v1", "sk-secret-2", ""));
  EXPECT_NE(a, QuotaKey("https://other/v1", "sk-secret-1", ""));
  EXPECT_THAT(a, AllOf(HasSubstr("hb:quota:"), Not(HasSubstr("secret"))));
  EXPECT_EQ(a.size(), 9u + 32u);
  EXPECT_EQ(QuotaKey("https://api.openai.com/v1", "sk-secret-1", "org-a"), "hb:quota:org-a");
}

}  // namespace
}  // namespace hb
