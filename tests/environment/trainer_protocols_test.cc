// The trainer request and answer shapes (OpenRLHF, slime, NeMo-Gym) without transport: every
// field a trainer sends becomes the right (task id, reply), every answer is the exact JSON the
// trainer reads, and every malformed request is refused with its exact message.
#include "environment/trainer_protocols.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb::env {
namespace {

using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Field;

const TrainerProtocolOptions kDefaults;

auto Sample(const std::string& task_id, const std::string& reply) {
  return AllOf(Field(&TrainerSample::task_id, task_id), Field(&TrainerSample::reply, reply));
}

SubmitResult Result(const std::string& task_id, double reward, double points_met,
                    double points_possible) {
  SubmitResult result;
  result.task_id = task_id;
  result.reward = reward;
  result.reward_clipped = reward < 0 ? 0 : (reward > 1 ? 1 : reward);
  result.points_met = points_met;
  result.points_possible = points_possible;
  return result;
}

TEST(StripSuffixesTest, RemovesTrailingEndOfTurnTokensRepeatedly) {
  const std::vector<std::string>& tokens = kDefaults.strip_suffixes;
  EXPECT_EQ(StripSuffixes("Call 911.<|im_end|><|endoftext|>", tokens), "Call 911.");
  EXPECT_EQ(StripSuffixes("a</s></s>", tokens), "a");
  EXPECT_EQ(StripSuffixes("a<|eot_id|>", tokens), "a");
  EXPECT_EQ(StripSuffixes("a<|end|>", tokens), "a");
  // Only at the end, and white space after a token is reply text.
  EXPECT_EQ(StripSuffixes("<|im_end|>a", tokens), "<|im_end|>a");
  EXPECT_EQ(StripSuffixes("a<|im_end|>\n", tokens), "a<|im_end|>\n");
  EXPECT_EQ(StripSuffixes("<|im_end|>", tokens), "");
  EXPECT_EQ(StripSuffixes("a<stop>", {"", "<stop>"}), "a");
  EXPECT_EQ(StripSuffixes("a</s>", {}), "a</s>");
}

TEST(IsJudgeFailureTest, OnlyTheStatusesOfAnUngradableReply) {
  EXPECT_TRUE(IsJudgeFailure(absl::UnavailableError("judge")));
  EXPECT_TRUE(IsJudgeFailure(absl::DeadlineExceededError("judge")));
  EXPECT_TRUE(IsJudgeFailure(absl::FailedPreconditionError("judge")));
  EXPECT_FALSE(IsJudgeFailure(absl::NotFoundError("task")));
  EXPECT_FALSE(IsJudgeFailure(absl::ResourceExhaustedError("busy")));
  EXPECT_FALSE(IsJudgeFailure(absl::InvalidArgumentError("reply")));
  EXPECT_FALSE(IsJudgeFailure(absl::OkStatus()));
}

TEST(OpenRlhfTest, ReplyIsTheQueryAfterItsPromptWithoutEndTokens) {
  auto samples = ParseOpenRlhfRequest(
      R"({"query": ["<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nCall 911.<|im_end|>",
                    "P2 answer two</s>"],
          "prompts": ["<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "P2 "],
          "labels": ["task-a", "task-b"]})",
      kDefaults);
  ASSERT_TRUE(samples.ok()) << samples.status();
  EXPECT_THAT(*samples, ElementsAre(Sample("task-a", "Call 911."), Sample("task-b", "answer two")));
}

TEST(OpenRlhfTest, EmptyBatchIsValid) {
  // OpenRLHF posts empty lists to every URL of --reward.remote_url but the first.
  auto samples = ParseOpenRlhfRequest(R"({"query": [], "prompts": [], "labels": []})", kDefaults);
  ASSERT_TRUE(samples.ok()) << samples.status();
  EXPECT_TRUE(samples->empty());
  EXPECT_EQ(FormatOpenRlhfAnswer({}),
            R"({"rewards":[],"scores":[],"extra_logs":{"points_met":[],"points_possible":[]}})");
}

TEST(OpenRlhfTest, RefusesMalformedRequestsNamingTheFieldAndTask) {
  EXPECT_THAT(ParseOpenRlhfRequest("{", kDefaults),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: malformed JSON at offset 1: Missing a name for object "
                       "member."));
  EXPECT_THAT(ParseOpenRlhfRequest("[]", kDefaults),
              StatusIs(absl::StatusCode::kInvalidArgument, "request body must be a JSON object"));
  EXPECT_THAT(
      ParseOpenRlhfRequest(R"({"query": ["a", 1], "prompts": [], "labels": []})", kDefaults),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "request body: field 'query' must be an array of strings"));
  EXPECT_THAT(ParseOpenRlhfRequest(R"({"query": ["a"], "prompts": ["a"]})", kDefaults),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'labels' must be an array of task ids"));
  EXPECT_THAT(
      ParseOpenRlhfRequest(R"({"query": ["a", "b"], "prompts": ["a", "b"], "labels": ["x"]})",
                           kDefaults),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "request body: 'query', 'prompts' and 'labels' must have the same length (got 2, "
               "2, 1)"));
  EXPECT_THAT(
      ParseOpenRlhfRequest(R"({"query": ["ab"], "prompts": ["a"], "labels": [""]})", kDefaults),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "request body: labels[0] must be a task id (a non-empty string, the "
               "HealthBench prompt_id; OpenRLHF's --data.label_key names its dataset "
               "column)"));
  EXPECT_THAT(
      ParseOpenRlhfRequest(
          R"({"query": ["ok reply", "user: Hx reply"], "prompts": ["ok ", "user: Hi "],
              "labels": ["t0", "t1"]})",
          kDefaults),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "query[1] (task \"t1\") does not start with prompts[1]: they differ at byte 7 (a "
               "prompt truncated by the trainer, or not reproduced by its tokenizer), so the "
               "reply cannot be told from the prompt"));
  // A query shorter than its prompt differs where it ends.
  EXPECT_THAT(
      ParseOpenRlhfRequest(R"({"query": ["ab"], "prompts": ["abc"], "labels": ["t"]})", kDefaults),
      StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("they differ at byte 2")));
}

TEST(OpenRlhfTest, AnswerHasUnclippedRewardsClippedScoresAndPoints) {
  EXPECT_EQ(FormatOpenRlhfAnswer(
                {Result("a", 0.5, 5, 10), Result("b", -0.25, -2, 8), Result("c", 1, 3, 3)}),
            R"({"rewards":[0.5,-0.25,1.0],"scores":[0.5,0.0,1.0],)"
            R"("extra_logs":{"points_met":[5.0,-2.0,3.0],"points_possible":[10.0,8.0,3.0]}})");
}

TEST(SlimeTest, LabelIsTheTaskAndResponseTheReply) {
  auto sample = ParseSlimeRequest(
      R"({"prompt": [{"role": "user", "content": "Hi"}], "response": "Rest.<|im_end|>",
          "label": "task-a"})",
      kDefaults);
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_THAT(*sample, Sample("task-a", "Rest."));
  EXPECT_THAT(ParseSlimeRequest(R"({"prompt": "p", "response": "r", "label": null})", kDefaults),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'label' must be a task id (a non-empty string, the "
                       "HealthBench prompt_id)"));
  EXPECT_THAT(ParseSlimeRequest(R"({"prompt": "p", "label": "t"})", kDefaults),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'response' must be a string (the generated reply)"));
  EXPECT_EQ(FormatSlimeAnswer(Result("task-a", -0.5, -1, 2)),
            R"({"reward":-0.5,"reward_clipped":0.0,"points_met":-1.0,"points_possible":2.0,)"
            R"("task_id":"task-a"})");
}

constexpr char kVerifyBody[] =
    R"({"responses_create_params":{"input":[{"role":"user","content":"Hi","type":"message"}]},)"
    R"("response":{"id":"resp_1","object":"response","output":[)"
    R"({"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"think"}]},)"
    R"({"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[)"
    R"({"type":"output_text","text":"Call ","annotations":[]},)"
    R"({"type":"refusal","refusal":"no"},)"
    R"({"type":"output_text","text":"911.<|im_end|>","annotations":[]}]},)"
    R"({"type":"function_call","name":"f","arguments":"{}","call_id":"c"},)"
    R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":" Now."}]}]},)"
    R"("prompt_id":"task-a","_ng_task_index":3,"_ng_rollout_index":1,"reward":7})";

TEST(NemoGymTest, ReplyIsTheJoinedOutputTextOfTheMessageItems) {
  auto request = ParseNemoGymVerify(kVerifyBody, kDefaults);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_THAT(request->sample, Sample("task-a", "Call 911.<|im_end|> Now."));
  EXPECT_EQ(request->body, kVerifyBody);
  auto by_task_id = ParseNemoGymVerify(
      R"({"task_id": "t", "response": {"output": [{"type": "message", "content": "x</s>"}]}})",
      kDefaults);
  ASSERT_TRUE(by_task_id.ok()) << by_task_id.status();
  EXPECT_THAT(by_task_id->sample, Sample("t", "x"));
}

TEST(NemoGymTest, RefusesARowWithoutTaskIdOrResponse) {
  EXPECT_THAT(ParseNemoGymVerify(R"({"response": {"output": []}})", kDefaults),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: a NeMo-Gym row needs 'prompt_id' or 'task_id' (the "
                       "HealthBench prompt_id of the task)"));
  EXPECT_THAT(ParseNemoGymVerify(R"({"prompt_id": "t"})", kDefaults),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'response' must be an object (the Responses API "
                       "response to verify)"));
  EXPECT_THAT(ParseNemoGymVerify(R"({"prompt_id": "t", "response": {"output": 3}})", kDefaults),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'response.output' must be an array (a Responses API "
                       "object's output items)"));
}

TEST(NemoGymTest, AnswerEchoesTheRequestWithTheReward) {
  auto request = ParseNemoGymVerify(
      R"({"prompt_id":"t","response":{"output":[]},"reward":9,"extra":{"k":[1,2]}})", kDefaults);
  ASSERT_TRUE(request.ok()) << request.status();
  SubmitResult result = Result("t", 0.75, 3, 4);
  result.tag_scores = {{"theme:emergency_referrals", 0.75}, {"axis:accuracy", 1}};
  EXPECT_EQ(FormatNemoGymVerifyAnswer(*request, result),
            R"({"prompt_id":"t","response":{"output":[]},"extra":{"k":[1,2]},)"
            R"("reward":0.75,"reward_clipped":0.75,"points_met":3.0,"points_possible":4.0,)"
            R"("reward_components":{"axis:accuracy":1.0,"theme:emergency_referrals":0.75}})");
  EXPECT_EQ(
      FormatNemoGymJudgeFailure(*request, absl::UnavailableError("judge: HTTP 500")),
      R"({"prompt_id":"t","response":{"output":[]},"extra":{"k":[1,2]},"reward":0.0,)"
      R"("_ng_failure_class":"judge_failed","_ng_failure_judge_error":"UNAVAILABLE: judge: HTTP 500"})");
}

TEST(NemoGymTest, AggregateMetricsLeaveFailuresOutAndAverageThemes) {
  auto metrics = NemoGymAggregateMetrics(
      R"({"verify_responses": [
        {"_ng_task_index": 0, "reward": 0.5, "reward_clipped": 0.5, "points_met": 3,
         "points_possible": 6, "reward_components": {"theme:a": 0.5, "axis:x": 1}},
        {"_ng_task_index": 0, "reward": -0.5, "reward_clipped": 0.0, "points_met": -3,
         "points_possible": 6, "reward_components": {"theme:a": -0.5}},
        {"_ng_task_index": 1, "reward": 1.0, "reward_clipped": 1.0, "points_met": 4,
         "points_possible": 4},
        {"_ng_task_index": 1, "reward": 0.0, "_ng_failure_class": "judge_failed"}]})");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(*metrics,
            R"({"group_level_metrics":[)"
            R"({"_ng_task_index":0,"num_rollouts":2,"mean/points_met":0.0,)"
            R"("mean/points_possible":6.0,"mean/reward":0.0,"mean/reward_clipped":0.25,)"
            R"("mean/theme:a":0.0},)"
            R"({"_ng_task_index":1,"num_rollouts":1,"mean/points_met":4.0,)"
            R"("mean/points_possible":4.0,"mean/reward":1.0,"mean/reward_clipped":1.0}],)"
            R"("agent_metrics":{"num_rollouts":3,)"
            R"("mean/points_met":1.3333333333333333,"min/points_met":-3.0,"max/points_met":4.0,)"
            R"("mean/points_possible":5.333333333333333,"min/points_possible":4.0,)"
            R"("max/points_possible":6.0,)"
            R"("mean/reward":0.3333333333333333,"min/reward":-0.5,"max/reward":1.0,)"
            R"("mean/reward_clipped":0.5,"min/reward_clipped":0.0,"max/reward_clipped":1.0,)"
            R"("mean/theme:a":0.0,"min/theme:a":-0.5,"max/theme:a":0.5},)"
            R"("key_metrics":{"mean/points_met":1.3333333333333333,)"
            R"("mean/points_possible":5.333333333333333,"mean/reward":0.3333333333333333,)"
            R"("mean/reward_clipped":0.5,"mean/theme:a":0.0}})");
  EXPECT_EQ(*NemoGymAggregateMetrics(R"({"verify_responses": []})"),
            R"({"group_level_metrics":[],"agent_metrics":{"num_rollouts":0},"key_metrics":{}})");
  EXPECT_THAT(NemoGymAggregateMetrics(R"({"verify_responses": [{"reward": "x"}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'verify_responses[0].reward' must be a number"));
}

}  // namespace
}  // namespace hb::env
