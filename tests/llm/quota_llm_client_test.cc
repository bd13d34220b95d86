#include "llm/quota_llm_client.h"

#include <memory>
#include <optional>
#include <vector>

#include "common/quota/local_quota_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
#include "tests/testing/fake_scheduler.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::FakeClock;
using ::hb::testing::FakeLlmClient;
using ::hb::testing::FakeScheduler;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class QuotaLlmClientTest : public ::testing::Test {
 protected:
  explicit QuotaLlmClientTest(QuotaLimits configured = {60, 0}) {
    FleetQuotaOptions options;
    options.configured = configured;
    options.clock = &clock_;
    quota_ = std::make_unique<FleetQuota>(std::make_unique<LocalQuotaStore>(clock_, QuotaShape{}),
                                          std::move(options));
    QuotaLlmClientOptions client_options;
    client_options.max_output_tokens = 100;
    client_options.clock = &clock_;
    client_ = std::make_unique<QuotaLlmClient>(fake_, *quota_, scheduler_, client_options);
  }

  // Starts a call whose outcome lands in results_[index].
  LlmClient::CallId Call(absl::Time deadline = absl::InfiniteFuture()) {
    ChatRequest request;
    request.body = std::string(400, 'x');
    request.deadline = deadline;
    const size_t index = results_.size();
    results_.emplace_back(std::nullopt);
    return client_->Complete(std::move(request), [this, index](absl::StatusOr<ChatResult> r) {
      results_[index] = std::move(r);
    });
  }

  static ChatResult Reply(int64_t limit_requests) {
    ChatResult result;
    result.content = "{}";
    result.usage.prompt_tokens = 100;
    result.usage.completion_tokens = 20;
    result.rate_limit.limit_requests = limit_requests;
    return result;
  }

  FakeClock clock_;
  FakeScheduler scheduler_{clock_};
  FakeLlmClient fake_;
  std::unique_ptr<FleetQuota> quota_;
  std::unique_ptr<QuotaLlmClient> client_;
  std::vector<std::optional<absl::StatusOr<ChatResult>>> results_;
};

TEST(EstimateTokensTest, BodyBytesOverFourPlusMaxOutput) {
  ChatRequest request;
  request.body = std::string(4000, 'x');
  EXPECT_EQ(EstimateTokens(request, 512), 1512);
  request.body_parts = {std::make_shared<const std::string>(800, 'a'),
                        std::make_shared<const std::string>(400, 'b')};
  EXPECT_EQ(EstimateTokens(request, 0), 300);
}

TEST_F(QuotaLlmClientTest, CallsBeyondTheBudgetWaitOnATimerThenStart) {
  // 60 rpm: a bucket of 2, then 0.95 per second.
  Call();
  Call();
  Call();
  EXPECT_EQ(fake_.pending(), 2u);
  ASSERT_EQ(scheduler_.PendingDelays().size(), 1u);
  EXPECT_EQ(absl::ToInt64Milliseconds(scheduler_.PendingDelays()[0]), 1052);
  scheduler_.AdvanceAndRun(absl::Milliseconds(1053));
  EXPECT_EQ(fake_.pending(), 3u);
  ASSERT_TRUE(fake_.CompleteNext(Reply(60)));
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_TRUE(results_[0]->ok());
}

TEST_F(QuotaLlmClientTest, A429RetryAfterPausesTheBudget) {
  Call();
  AttemptOutcome outcome;
  outcome.kind = FailureKind::kHttp429;
  outcome.retry_after = absl::Seconds(5);
  ASSERT_TRUE(fake_.CompleteNext(
      WithAttemptOutcome(absl::ResourceExhaustedError("429 Too Many Requests"), outcome)));
  clock_.Advance(absl::Seconds(2));  // the bucket has refilled; the pause still holds
  Call();
  EXPECT_EQ(fake_.pending(), 0u);
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Seconds(3)));
  scheduler_.AdvanceAndRun(absl::Seconds(3));
  EXPECT_EQ(fake_.pending(), 1u);
}

TEST_F(QuotaLlmClientTest, CancelWhileWaitingEndsTheCallWithoutAnUpstreamRequest) {
  Call();
  Call();
  const LlmClient::CallId waiting = Call();
  client_->Cancel(waiting);
  ASSERT_TRUE(results_[2].has_value());
  EXPECT_THAT(*results_[2], StatusIs(absl::StatusCode::kCancelled, HasSubstr("fleet quota")));
  EXPECT_EQ(AttemptOutcomeOf(results_[2]->status()).kind, FailureKind::kCancelled);
  EXPECT_TRUE(scheduler_.PendingDelays().empty());
  EXPECT_EQ(fake_.requests().size(), 2u);
}

TEST_F(QuotaLlmClientTest, NoPermitBeforeTheDeadlineFailsAtOnce) {
  Call();
  Call();
  Call(clock_.Now() + absl::Milliseconds(500));
  ASSERT_TRUE(results_[2].has_value());
  EXPECT_THAT(*results_[2], StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("quota")));
  EXPECT_TRUE(scheduler_.PendingDelays().empty());
}

class QuotaLlmClientLearningTest : public QuotaLlmClientTest {
 protected:
  QuotaLlmClientLearningTest() : QuotaLlmClientTest(QuotaLimits{}) {}
};

TEST_F(QuotaLlmClientLearningTest, LimitHeadersAreLearnedAndThenEnforced) {
  Call();
  ASSERT_TRUE(fake_.CompleteNext(Reply(60)));
  EXPECT_EQ(quota_->Stats().limits, QuotaLimits{});
  // The next call carries the learned limit to the store: 60 rpm from now on.
  Call();
  Call();
  Call();
  EXPECT_EQ(quota_->Stats().limits, (QuotaLimits{60, 0}));
  EXPECT_EQ(fake_.pending(), 2u);
  EXPECT_EQ(scheduler_.PendingDelays().size(), 1u);
}

}  // namespace
}  // namespace hb
