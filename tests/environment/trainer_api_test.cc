// TrainerApi over a FakeEnvironment: each trainer route submits the right replies, answers with
// the environment's results, grades an OpenRLHF batch concurrently, and never turns a reply
// that could not be graded into a reward.
#include "environment/trainer_api.h"

#include <sstream>
#include <string>
#include <utility>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "tests/testing/fake_environment.h"
#include "tests/testing/status_matchers.h"

namespace hb::env {
namespace {

using ::hb::testing::FakeEnvironment;
using ::hb::testing::IsOkAndHolds;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;

// Calls `call` with a Done and waits for the answer.
template <typename Call>
absl::StatusOr<std::string> Answer(Call call) {
  absl::Notification finished;
  absl::StatusOr<std::string> answer;
  call([&](absl::StatusOr<std::string> result) {
    answer = std::move(result);
    finished.Notify();
  });
  finished.WaitForNotification();
  return answer;
}

class TrainerApiTest : public ::testing::Test {
 protected:
  TrainerApiTest() {
    env_.AddTask("dev", {"p0", {"theme:a"}, "user: zero"});
    env_.AddTask("dev", {"p1", {}, "user: one"});
    env_.AddTask("dev", {"p2", {}, "user: two"});
  }
  // The environment's own result for (task, reply).
  SubmitResult Expected(const std::string& task_id, const std::string& reply) {
    return *env_.SubmitAndWait(task_id, reply);
  }
  // Results of `task_id` fail with `status`; others are graded as usual.
  void FailTask(const std::string& task_id, absl::Status status) {
    env_.SetResultFn([task_id, status](const std::string& id,
                                       const std::string& reply) -> absl::StatusOr<SubmitResult> {
      if (id == task_id) return status;
      SubmitResult result;
      result.task_id = id;
      result.reward = static_cast<double>(reply.size() % 3) - 1;
      result.reward_clipped = result.reward < 0 ? 0 : result.reward;
      result.points_met = result.reward * 2;
      result.points_possible = 2;
      return result;
    });
  }

  FakeEnvironment env_;
  TrainerApi api_{env_, TrainerProtocolOptions{}};
};

TEST_F(TrainerApiTest, OpenRlhfGradesEverySampleConcurrentlyAndAnswersInOrder) {
  env_.HoldSubmissions(true);
  absl::Notification finished;
  absl::StatusOr<std::string> answer;
  api_.OpenRlhfGetReward(
      R"({"query": ["Q0 a<|im_end|>", "Q1 bb</s>", "Q2 "], "prompts": ["Q0 ", "Q1 ", "Q2 "],
          "labels": ["p0", "p1", "p2"]})",
      absl::InfiniteFuture(), [&](absl::StatusOr<std::string> result) {
        answer = std::move(result);
        finished.Notify();
      });
  // All three are submitted before any is answered.
  EXPECT_TRUE(env_.WaitForSubmissions(3)) << env_.submissions() << " submitted";
  EXPECT_FALSE(finished.HasBeenNotified());
  env_.HoldSubmissions(false);
  finished.WaitForNotification();
  EXPECT_THAT(env_.replies(), ElementsAre("a", "bb", ""));
  EXPECT_THAT(answer, IsOkAndHolds(FormatOpenRlhfAnswer(
                          {Expected("p0", "a"), Expected("p1", "bb"), Expected("p2", "")})));
}

TEST_F(TrainerApiTest, OpenRlhfEmptyBatchAndBadRequestsAnswerAtOnce) {
  EXPECT_THAT(Answer([&](TrainerApi::Done done) {
                api_.OpenRlhfGetReward(R"({"query": [], "prompts": [], "labels": []})",
                                       absl::InfiniteFuture(), std::move(done));
              }),
              IsOkAndHolds(FormatOpenRlhfAnswer({})));
  EXPECT_THAT(Answer([&](TrainerApi::Done done) {
                api_.OpenRlhfGetReward(R"({"query": ["x"]})", absl::InfiniteFuture(),
                                       std::move(done));
              }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'prompts' must be an array of strings"));
  EXPECT_EQ(env_.submissions(), 0);
}

TEST_F(TrainerApiTest, OpenRlhfFailsTheBatchNamingTheSampleThatCouldNotBeGraded) {
  FailTask("p1", absl::FailedPreconditionError("judge reply unparseable"));
  EXPECT_THAT(Answer([&](TrainerApi::Done done) {
                api_.OpenRlhfGetReward(
                    R"({"query": ["a", "b", "c"], "prompts": ["", "", ""],
                        "labels": ["p0", "p1", "p2"]})",
                    absl::InfiniteFuture(), std::move(done));
              }),
              StatusIs(absl::StatusCode::kUnavailable,
                       "labels[1] (task \"p1\") could not be graded: FAILED_PRECONDITION: judge "
                       "reply unparseable"));
  EXPECT_EQ(env_.submissions(), 3);
  EXPECT_THAT(Answer([&](TrainerApi::Done done) {
                api_.OpenRlhfGetReward(
                    R"({"query": ["a", "b"], "prompts": ["", ""], "labels": ["p0", "nope"]})",
                    absl::InfiniteFuture(), std::move(done));
              }),
              StatusIs(absl::StatusCode::kNotFound,
                       ::testing::StartsWith("labels[1] (task \"nope\"): NOT_FOUND: ")));
}

TEST_F(TrainerApiTest, SlimeAnswersTheRewardOrAFiveHundredStatus) {
  EXPECT_THAT(Answer([&](TrainerApi::Done done) {
                api_.SlimeReward(R"({"prompt": "user: one", "response": "ab", "label": "p1"})",
                                 absl::InfiniteFuture(), std::move(done));
              }),
              IsOkAndHolds(FormatSlimeAnswer(Expected("p1", "ab"))));
  FailTask("p0", absl::DeadlineExceededError("judge timed out"));
  EXPECT_THAT(Answer([&](TrainerApi::Done done) {
                api_.SlimeReward(R"({"prompt": "x", "response": "ab", "label": "p0"})",
                                 absl::InfiniteFuture(), std::move(done));
              }),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       "label (task \"p0\") could not be graded: DEADLINE_EXCEEDED: judge timed "
                       "out"));
}

TEST_F(TrainerApiTest, BacklogFullKeepsItsCodeForRetryAfter) {
  env_.RejectUpFront(absl::ResourceExhaustedError("backlog full"));
  EXPECT_THAT(Answer([&](TrainerApi::Done done) {
                api_.SlimeReward(R"({"response": "ab", "label": "p1"})", absl::InfiniteFuture(),
                                 std::move(done));
              }),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "label (task \"p1\"): RESOURCE_EXHAUSTED: backlog full"));
}

TEST_F(TrainerApiTest, NemoGymJudgeFailureIsTheMarkerNotAReward) {
  constexpr char kBody[] =
      R"({"prompt_id":"p0","response":{"output":[{"type":"message","role":"assistant",)"
      R"("content":[{"type":"output_text","text":"abc"}]}]},"_ng_task_index":2})";
  auto request = ParseNemoGymVerify(kBody, TrainerProtocolOptions{});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_THAT(Answer([&](TrainerApi::Done done) {
                api_.NemoGymVerify(kBody, absl::InfiniteFuture(), std::move(done));
              }),
              IsOkAndHolds(FormatNemoGymVerifyAnswer(*request, Expected("p0", "abc"))));
  FailTask("p0", absl::UnavailableError("judge down"));
  EXPECT_THAT(
      Answer([&](TrainerApi::Done done) {
        api_.NemoGymVerify(kBody, absl::InfiniteFuture(), std::move(done));
      }),
      IsOkAndHolds(FormatNemoGymJudgeFailure(*request, absl::UnavailableError("judge down"))));
  EXPECT_THAT(Answer([&](TrainerApi::Done done) {
                api_.NemoGymVerify(R"({"prompt_id":"nope","response":{"output":[]}})",
                                   absl::InfiniteFuture(), std::move(done));
              }),
              StatusIs(absl::StatusCode::kNotFound,
                       ::testing::StartsWith("prompt_id (task \"nope\"): NOT_FOUND: ")));
  EXPECT_EQ(TrainerApi::NemoGymSeedSession(), "{}");
}

TEST_F(TrainerApiTest, MetricsCountAnsweredRewardsAndUnscorableSamplesByRoute) {
  prometheus::Registry registry;
  EnvMetrics metrics(registry);
  TrainerApi api(env_, TrainerProtocolOptions{}, &metrics);
  constexpr char kBatch[] = R"({"query": ["a", "b"], "prompts": ["", ""], "labels": ["p0", "p1"]})";
  EXPECT_TRUE(Answer([&](TrainerApi::Done done) {
                api.OpenRlhfGetReward(kBatch, absl::InfiniteFuture(), std::move(done));
              }).ok());
  FailTask("p1", absl::UnavailableError("judge down"));
  // The batch fails: p0's reward is not answered, so it does not count; p1 counts as unscorable.
  EXPECT_FALSE(Answer([&](TrainerApi::Done done) {
                 api.OpenRlhfGetReward(kBatch, absl::InfiniteFuture(), std::move(done));
               }).ok());
  EXPECT_FALSE(Answer([&](TrainerApi::Done done) {
                 api.SlimeReward(R"({"response": "ab", "label": "p1"})", absl::InfiniteFuture(),
                                 std::move(done));
               }).ok());
  EXPECT_TRUE(Answer([&](TrainerApi::Done done) {
                api.SlimeReward(R"({"response": "ab", "label": "p0"})", absl::InfiniteFuture(),
                                std::move(done));
              }).ok());
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, registry.Collect());
  EXPECT_THAT(text.str(),
              ::testing::HasSubstr("hb_env_trainer_reward_count{route=\"get_reward\"} 2"));
  EXPECT_THAT(text.str(), ::testing::HasSubstr("hb_env_trainer_reward_count{route=\"reward\"} 1"));
  EXPECT_THAT(text.str(),
              ::testing::HasSubstr("hb_env_trainer_judge_failures_total{route=\"get_reward\"} 1"));
  EXPECT_THAT(text.str(),
              ::testing::HasSubstr("hb_env_trainer_judge_failures_total{route=\"reward\"} 1"));
}

}  // namespace
}  // namespace hb::env
