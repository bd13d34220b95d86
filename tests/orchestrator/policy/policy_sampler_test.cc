// PolicySampler with a fake LLM client, scheduler and clock: in-flight bound, retries on timers
// (backoff, Retry-After), final errors, and the AIMD window on 429s.
#include "orchestrator/policy/policy_sampler.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
#include "tests/testing/fake_scheduler.h"

namespace hb {
namespace {

using ::hb::testing::ChatReply;
using ::hb::testing::ConnectionFailure;
using ::hb::testing::FakeClock;
using ::hb::testing::FakeLlmClient;
using ::hb::testing::FakeScheduler;
using ::hb::testing::HttpFailure;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PolicySamplerTest : public ::testing::Test {
 protected:
  PolicySamplerOptions Options(int max_in_flight, bool adaptive) {
    PolicySamplerOptions options;
    options.max_in_flight = max_in_flight;
    options.adaptive = adaptive;
    options.clock = &clock_;
    options.jitter = [] { return 1.0; };
    return options;
  }
  void Collect(PolicySampleResult result) {
    absl::MutexLock lock(&mu_);
    results_.push_back(std::move(result));
  }
  std::vector<PolicySampleResult> Results() {
    absl::MutexLock lock(&mu_);
    return results_;
  }

  FakeClock clock_;
  FakeScheduler scheduler_{clock_};
  FakeLlmClient llm_;
  absl::Mutex mu_;
  std::vector<PolicySampleResult> results_ ABSL_GUARDED_BY(mu_);
};

TEST_F(PolicySamplerTest, KeepsAtMostMaxInFlightAndSendsTheBodiesVerbatim) {
  PolicySampler sampler(llm_, scheduler_, Options(2, false),
                        [this](PolicySampleResult r) { Collect(std::move(r)); });
  for (int i = 0; i < 5; ++i) sampler.Add({"t" + std::to_string(i), "body" + std::to_string(i)});
  EXPECT_EQ(llm_.pending(), 0u);  // nothing before Start
  sampler.Start();
  EXPECT_EQ(llm_.pending(), 2u);
  ASSERT_TRUE(llm_.CompleteNext(ChatReply("a")));
  EXPECT_EQ(llm_.pending(), 2u);
  while (llm_.CompleteNext(ChatReply("b"))) {
  }
  EXPECT_EQ(sampler.Pending(), 0);
  std::vector<std::string> bodies;
  for (const ChatRequest& r : llm_.requests()) bodies.push_back(r.body);
  EXPECT_THAT(bodies, ElementsAre("body0", "body1", "body2", "body3", "body4"));
  ASSERT_EQ(Results().size(), 5u);
  EXPECT_EQ(Results()[0].prompt_id, "t0");
  EXPECT_EQ(Results()[0].reply->content, "a");
  EXPECT_EQ(Results()[0].attempts, 1);
}

TEST_F(PolicySamplerTest, RetriesOnTimersWithBackoffAndTheRetryAfterOfA429) {
  PolicySampler sampler(llm_, scheduler_, Options(4, false),
                        [this](PolicySampleResult r) { Collect(std::move(r)); });
  sampler.Add({"t", "body"});
  sampler.Start();
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(503)));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Milliseconds(500)));  // base x 1
  EXPECT_EQ(llm_.pending(), 0u);
  scheduler_.AdvanceAndRun(absl::Milliseconds(500));
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(429, absl::Seconds(3))));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Seconds(3)));
  scheduler_.AdvanceAndRun(absl::Seconds(3));
  ASSERT_TRUE(llm_.CompleteNext(ConnectionFailure()));
  scheduler_.AdvanceAndRun(absl::Seconds(2));
  ASSERT_TRUE(llm_.CompleteNext(ChatReply("finally")));
  ASSERT_EQ(Results().size(), 1u);
  EXPECT_EQ(Results()[0].attempts, 4);
  EXPECT_EQ(Results()[0].reply->content, "finally");
  EXPECT_EQ(sampler.Stats().retries, 3);
}

// Stop ends every task at once: the retry waiting on its timer is dropped (the timer cancelled)
// and the call in flight is cancelled, its task done with kCancelled and not retried.
TEST_F(PolicySamplerTest, StopCancelsRetryTimersAndCallsInFlight) {
  PolicySampler sampler(llm_, scheduler_, Options(2, false),
                        [this](PolicySampleResult r) { Collect(std::move(r)); });
  sampler.Add({"t0", "body0"});
  sampler.Add({"t1", "body1"});
  sampler.Start();
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(503)));  // t0 waits for its retry timer
  ASSERT_EQ(scheduler_.PendingDelays().size(), 1u);
  ASSERT_EQ(llm_.pending(), 1u);  // t1
  sampler.Stop();
  EXPECT_EQ(sampler.Pending(), 0);
  EXPECT_EQ(llm_.pending(), 0u);
  EXPECT_THAT(llm_.cancelled(), ::testing::SizeIs(1));
  EXPECT_TRUE(scheduler_.PendingDelays().empty());
  ASSERT_EQ(Results().size(), 1u);
  EXPECT_EQ(Results()[0].prompt_id, "t1");
  EXPECT_EQ(Results()[0].reply.status().code(), absl::StatusCode::kCancelled);
  sampler.WaitIdle();
}

TEST_F(PolicySamplerTest, FinalErrorsAndExhaustedAttemptsComeBackWithTheReason) {
  PolicySamplerOptions options = Options(4, false);
  options.retry.max_attempts = 2;
  PolicySampler sampler(llm_, scheduler_, options,
                        [this](PolicySampleResult r) { Collect(std::move(r)); });
  sampler.Add({"missing-model", "b1"});
  sampler.Add({"flaky", "b2"});
  sampler.Start();
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(404, std::nullopt, "model not found")));
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(500)));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Milliseconds(500)));
  scheduler_.AdvanceAndRun(absl::Milliseconds(500));
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(500)));
  ASSERT_EQ(Results().size(), 2u);
  EXPECT_EQ(Results()[0].reply.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Results()[0].attempts, 1);
  EXPECT_THAT(Results()[0].reply.status().message(), HasSubstr("http_404"));
  EXPECT_EQ(Results()[1].attempts, 2);
  EXPECT_THAT(Results()[1].reply.status().message(), HasSubstr("after 2 attempt(s)"));
  EXPECT_THAT(Results()[1].reply.status().message(), HasSubstr("http_5xx"));
  EXPECT_EQ(sampler.Pending(), 0);
}

TEST_F(PolicySamplerTest, A429HalvesTheAdaptiveWindow) {
  PolicySampler sampler(llm_, scheduler_, Options(8, true),
                        [this](PolicySampleResult r) { Collect(std::move(r)); });
  for (int i = 0; i < 20; ++i) sampler.Add({"t" + std::to_string(i), "b"});
  sampler.Start();
  EXPECT_EQ(llm_.pending(), 8u);
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(429)));
  EXPECT_EQ(sampler.Stats().window, 4);
  EXPECT_EQ(llm_.pending(), 7u);  // over the new window: nothing new starts
}

}  // namespace
}  // namespace hb
