// SampleToFile on a FakeLlmClient: the probe (the first task's request, sent once) goes out with
// the others, within --max-in-flight, and a probe the endpoint refuses is the job's error.
#include "orchestrator/sample/sample_command.h"

#include <cstdio>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
#include "tests/testing/fake_scheduler.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::ChatReply;
using ::hb::testing::FakeClock;
using ::hb::testing::FakeLlmClient;
using ::hb::testing::FakeScheduler;
using ::hb::testing::HttpFailure;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

class SampleToFileTest : public ::testing::Test {
 protected:
  SampleOptions Options(int max_in_flight) {
    SampleOptions options;
    options.dataset = hb::testing::SharedDataFile(hb::testing::kMainHead30);
    options.examples = 5;
    options.out = hb::testing::MakeTempDir() + "/responses.jsonl";
    options.policy_base_url = "http://policy/v1";
    options.request.model = "m";
    options.max_in_flight = max_in_flight;
    options.progress_interval = absl::Hours(1);
    return options;
  }
  // Runs SampleToFile on its own thread (the fake answers calls from the test's thread).
  void Start(const SampleOptions& options) {
    thread_ =
        std::thread([this, options] { result_ = SampleToFile(options, llm_, scheduler_, log_); });
  }
  absl::StatusOr<SampleSummary> Finish() {
    thread_.join();
    return result_;
  }
  void TearDown() override {
    if (thread_.joinable()) thread_.join();
    std::fclose(log_);
  }

  FakeClock clock_;
  FakeScheduler scheduler_{clock_};
  FakeLlmClient llm_;
  std::FILE* log_ = std::tmpfile();
  std::thread thread_;
  absl::StatusOr<SampleSummary> result_ = absl::UnknownError("not run");
};

// Before any answer, --max-in-flight requests are out: the probe does not hold the others back
// for a round trip, and it counts against the same bound.
TEST_F(SampleToFileTest, TheProbeGoesOutWithTheOthersWithinMaxInFlight) {
  Start(Options(3));
  ASSERT_TRUE(llm_.WaitForPending(3, absl::Seconds(30)));
  EXPECT_EQ(llm_.pending(), 3u);
  for (int answered = 0; answered < 5; ++answered) {
    ASSERT_TRUE(llm_.WaitForPending(1, absl::Seconds(30)));
    ASSERT_TRUE(llm_.CompleteNext(ChatReply("a reply")));
  }
  HB_ASSERT_OK_AND_ASSIGN(SampleSummary summary, Finish());
  EXPECT_EQ(summary.replies, 5);
  EXPECT_EQ(summary.failed, 0);
  EXPECT_EQ(llm_.requests().size(), 5u);
}

// With one slot the probe is alone: the sampler waits for its answer.
TEST_F(SampleToFileTest, WithOneSlotTheProbeGoesFirstAndAlone) {
  Start(Options(1));
  for (int answered = 0; answered < 5; ++answered) {
    ASSERT_TRUE(llm_.WaitForPending(1, absl::Seconds(30)));
    EXPECT_EQ(llm_.pending(), 1u);
    ASSERT_TRUE(llm_.CompleteNext(ChatReply("a reply")));
  }
  HB_ASSERT_OK_AND_ASSIGN(SampleSummary summary, Finish());
  EXPECT_EQ(summary.replies, 5);
}

// A refused key on the probe (the oldest call) stops the job with the reason and the fix, once
// the calls already out have ended (here refused as well, like any call to that endpoint).
TEST_F(SampleToFileTest, ARefusedProbeIsTheErrorAndStopsTheSampler) {
  Start(Options(3));
  ASSERT_TRUE(llm_.WaitForPending(3, absl::Seconds(30)));
  llm_.SetResponder([](const ChatRequest&) -> absl::StatusOr<ChatResult> {
    return HttpFailure(401, std::nullopt, "bad key");
  });
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(llm_.CompleteNext(HttpFailure(401, std::nullopt, "bad key")));
  }
  EXPECT_THAT(Finish(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                 HasSubstr("probe request to http://policy/v1 failed")));
  EXPECT_THAT(result_.status().message(), HasSubstr("POLICY_API_KEY"));
}

}  // namespace
}  // namespace hb
