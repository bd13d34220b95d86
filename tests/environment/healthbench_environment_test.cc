// HealthBenchEnvironment behind its gRPC service on a real server (127.0.0.1:0), grading with
// a real Grader on a FakeLlmClient through the in-process client: every RPC, scoring fidelity
// with common/grading/scoring on the real records, judge failures, the result cache and
// in-flight de-duplication (upstream calls counted), load control and bad input.
#include "environment/healthbench_environment.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/grading/scoring.h"
#include "common/healthbench/prompts.h"
#include "common/retry/retry_status.h"
#include "environment/env_metrics.h"
#include "environment/grpc/env_server.h"
#include "gmock/gmock.h"
#include "grader_client/in_process_grader_client.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "healthbench/env/v1/env.grpc.pb.h"
#include "prometheus/registry.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb::env {
namespace {

namespace env_v1 = ::healthbench::env::v1;
using ::hb::testing::ChatReply;
using ::hb::testing::FakeClock;
using ::hb::testing::FakeLlmClient;
using ::hb::testing::FakeScheduler;
using ::hb::testing::HttpFailure;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

// Verdicts that depend on the grader prompt (so items differ), decided deterministically.
absl::StatusOr<ChatResult> ParityVerdict(const ChatRequest& request) {
  return ChatReply(request.body.size() % 3 != 0
                       ? R"({"explanation": "present", "criteria_met": true})"
                       : R"({"explanation": "absent", "criteria_met": false})");
}

class EnvTest : public ::testing::Test {
 protected:
  void Start(HealthBenchEnvironmentOptions options, GraderConfig config = GraderConfig{}) {
    auto tmpl = GraderTemplate::Load(testing::ReferenceTemplatePath(), false);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    grader_ = std::make_unique<Grader>(
        llm_, scheduler_, Clock::Real(), [] { return 0.0; }, *tmpl, config);
    client_ = std::make_unique<InProcessGraderClient>(*grader_, Clock::Real());
    auto splits = LoadSplits({{"test", testing::SharedDataFile(testing::kMainHead30)},
                              {"consensus", testing::SharedDataFile(testing::kConsensus104)}});
    ASSERT_TRUE(splits.ok()) << splits.status();
    env_ = std::make_unique<HealthBenchEnvironment>(*std::move(splits), *client_,
                                                    fake_env_clock_ ? env_clock_ : Clock::Real(),
                                                    scheduler_, options, &env_metrics_);
    auto server = EnvGrpcServer::Start(*env_, EnvServerOptions{"127.0.0.1:0"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = env_v1::Environment::NewStub(channel_);
  }
  void TearDown() override {
    server_.reset();
    env_.reset();
    client_.reset();
  }

  const Example& TestExample(size_t index) const {
    static const Dataset* const dataset = [] {
      auto loaded = LoadDataset(testing::SharedDataFile(testing::kMainHead30), {});
      EXPECT_TRUE(loaded.ok()) << loaded.status();
      return new Dataset(*std::move(loaded));
    }();
    return dataset->examples[index];
  }

  grpc::Status Submit(const std::string& task_id, const std::string& reply,
                      env_v1::SubmitResponse* response) {
    env_v1::SubmitRequest request;
    request.mutable_task()->set_task_id(task_id);
    request.set_reply(reply);
    request.set_request_id("r1");
    grpc::ClientContext context;
    return stub_->Submit(&context, request, response);
  }

  // Submits directly to the environment; the returned notification fires with the result.
  std::shared_ptr<absl::StatusOr<SubmitResult>> SubmitAsync(const std::string& task_id,
                                                            const std::string& reply,
                                                            absl::Notification* done) {
    auto result = std::make_shared<absl::StatusOr<SubmitResult>>();
    env_->Submit(TaskRef::ById(task_id), reply, absl::InfiniteFuture(),
                 [result, done](absl::StatusOr<SubmitResult> r) {
                   *result = std::move(r);
                   done->Notify();
                 });
    return result;
  }

  FakeClock scheduler_clock_;
  FakeScheduler scheduler_{scheduler_clock_};
  // The environment's clock is env_clock_ when fake_env_clock_ is set before Start.
  bool fake_env_clock_ = false;
  FakeClock env_clock_;
  prometheus::Registry registry_;
  EnvMetrics env_metrics_{registry_};
  FakeLlmClient llm_;
  std::unique_ptr<Grader> grader_;
  std::unique_ptr<InProcessGraderClient> client_;
  std::unique_ptr<HealthBenchEnvironment> env_;
  std::unique_ptr<EnvGrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<env_v1::Environment::Stub> stub_;
};

TEST_F(EnvTest, ListSplitsGivesNamesAndCountsInOrder) {
  Start({});
  env_v1::ListSplitsResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ListSplits(&context, {}, &response).ok());
  ASSERT_EQ(response.splits_size(), 2);
  EXPECT_EQ(response.splits(0).name(), "test");
  EXPECT_EQ(response.splits(0).task_count(), 30);
  EXPECT_EQ(response.splits(1).name(), "consensus");
  EXPECT_EQ(response.splits(1).task_count(), 104);
}

TEST_F(EnvTest, ListTasksGivesIdsAndTagsInFileOrder) {
  Start({});
  env_v1::ListTasksRequest request;
  request.set_split("test");
  request.set_start(28);
  request.set_stop(100);
  env_v1::ListTasksResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ListTasks(&context, request, &response).ok());
  ASSERT_EQ(response.tasks_size(), 2);
  EXPECT_EQ(response.tasks(0).task_id(), TestExample(28).prompt_id);
  EXPECT_EQ(response.tasks(0).index(), 28);
  EXPECT_EQ(response.tasks(0).split(), "test");
  EXPECT_EQ(response.tasks(1).tags_size(), static_cast<int>(TestExample(29).example_tags.size()));
}

TEST_F(EnvTest, GetTaskByIdAndByIndexGivesTheConversation) {
  Start({});
  const Example& example = TestExample(3);
  for (int by_index = 0; by_index < 2; ++by_index) {
    env_v1::GetTaskRequest request;
    if (by_index) {
      request.mutable_task()->set_split("test");
      request.mutable_task()->set_index(3);
    } else {
      request.mutable_task()->set_task_id(example.prompt_id);
    }
    env_v1::GetTaskResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->GetTask(&context, request, &response).ok());
    EXPECT_EQ(response.task().task_id(), example.prompt_id);
    ASSERT_EQ(response.messages_size(), static_cast<int>(example.prompt.size()));
    EXPECT_EQ(response.messages(0).content(), example.prompt[0].content);
    EXPECT_EQ(response.prompt_text(), TaskPromptText(example.prompt));
  }
}

TEST_F(EnvTest, BadReferencesHaveExactErrors) {
  Start({});
  env_v1::GetTaskRequest request;
  env_v1::GetTaskResponse response;
  {
    request.mutable_task()->set_task_id("nope");
    grpc::ClientContext context;
    grpc::Status status = stub_->GetTask(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(status.error_message(), "unknown task id 'nope'");
  }
  {
    request.mutable_task()->Clear();
    request.mutable_task()->set_split("train");
    grpc::ClientContext context;
    grpc::Status status = stub_->GetTask(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(status.error_message(), "unknown split 'train'");
  }
  {
    request.mutable_task()->set_split("consensus");
    request.mutable_task()->set_index(104);
    grpc::ClientContext context;
    grpc::Status status = stub_->GetTask(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::OUT_OF_RANGE);
    EXPECT_EQ(status.error_message(), "index 104 is outside split 'consensus' (104 tasks)");
  }
  {
    env_v1::ListTasksRequest list;
    list.set_split("nope");
    env_v1::ListTasksResponse tasks;
    grpc::ClientContext context;
    grpc::Status status = stub_->ListTasks(&context, list, &tasks);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(status.error_message(), "unknown split 'nope'");
  }
  env_v1::SubmitResponse submitted;
  grpc::Status status = Submit("nope", "reply", &submitted);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(llm_.requests().empty());
}

TEST_F(EnvTest, RewardsMatchTheReferenceScoringOfTheSameVerdictsOnEveryTask) {
  Start({});
  llm_.SetResponder(ParityVerdict);
  for (size_t t = 0; t < 30; ++t) {
    const Example& example = TestExample(t);
    env_v1::SubmitResponse response;
    grpc::Status status = Submit(example.prompt_id, "Please see a doctor.", &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.items_size(), static_cast<int>(example.rubrics.size()));
    std::vector<bool> met;
    double points_met = 0;
    for (int i = 0; i < response.items_size(); ++i) {
      EXPECT_EQ(response.items(i).criterion(), example.rubrics[i].criterion);
      met.push_back(response.items(i).met());
      if (met.back()) points_met += example.rubrics[i].points;
    }
    auto scores = ScoreTask(example.prompt_id, example.example_tags, example.rubrics, met);
    ASSERT_TRUE(scores.ok()) << scores.status();
    EXPECT_EQ(response.reward(), *CalculateScore(example.rubrics, met));
    EXPECT_EQ(response.reward_clipped(), std::clamp(response.reward(), 0.0, 1.0));
    EXPECT_EQ(response.points_met(), points_met);
    EXPECT_EQ(static_cast<size_t>(response.tag_scores_size()), scores->size() - 1);
    for (const auto& [name, value] : *scores) {
      if (name != "overall_score") {
        EXPECT_EQ(response.tag_scores().at(name), value) << name;
      }
    }
    EXPECT_EQ(response.usage().prompt_tokens(), 100 * response.items_size());
    EXPECT_EQ(response.request_id(), "r1");
    EXPECT_FALSE(response.from_cache());
  }
}

// simple-evals PR #108's length adjustment: every reply carries the adjusted score among the tag
// scores (non-ASCII counted as Python's len()); --reward length_adjusted makes it the reward.
TEST_F(EnvTest, LengthAdjustedScoreInEveryReplyAndAsTheRewardWhenChosen) {
  HealthBenchEnvironmentOptions options;
  options.length_adjustment = kProfessionalLengthAdjustment;
  Start(options);
  llm_.SetResponder(ParityVerdict);
  const Example& example = TestExample(2);
  const std::string reply =
      "Voir un m\xC3\xA9"
      "decin \xF0\x9F\xA9\xBA";  // 17 characters
  env_v1::SubmitResponse raw;
  ASSERT_TRUE(Submit(example.prompt_id, reply, &raw).ok());
  const double adjusted = raw.reward() - 0.0147 * ((17.0 - 2000.0) / 500.0);
  EXPECT_EQ(raw.tag_scores().at("overall_score_length_adjusted"), adjusted);
  EXPECT_EQ(raw.reward_clipped(), std::clamp(raw.reward(), 0.0, 1.0));
}

TEST_F(EnvTest, RewardLengthAdjustedIsTheAdjustedScore) {
  HealthBenchEnvironmentOptions options;
  options.length_adjustment = kProfessionalLengthAdjustment;
  options.reward_length_adjusted = true;
  Start(options);
  llm_.SetResponder(ParityVerdict);
  const Example& example = TestExample(2);
  env_v1::SubmitResponse chosen;
  ASSERT_TRUE(Submit(example.prompt_id, std::string(3000, 'x'), &chosen).ok());
  const double adjusted = chosen.tag_scores().at("overall_score_length_adjusted");
  EXPECT_EQ(chosen.reward(), adjusted);
  EXPECT_EQ(chosen.reward_clipped(), std::clamp(adjusted, 0.0, 1.0));
  // The result cache keys on the scoring too.
  HealthBenchEnvironmentOptions other = options;
  other.reward_length_adjusted = false;
  EXPECT_NE(ScoringFingerprint("g", options), ScoringFingerprint("g", other));
  EXPECT_EQ(ScoringFingerprint("g", HealthBenchEnvironmentOptions{}), "g");
}

TEST_F(EnvTest, TheGradedTranscriptIsThePromptPlusTheReplyWithNoSystemPrompt) {
  Start({});
  llm_.SetResponder(ParityVerdict);
  const Example& example = TestExample(0);
  env_v1::SubmitResponse response;
  ASSERT_TRUE(Submit(example.prompt_id, "REPLY-TEXT", &response).ok());
  const std::string expected =
      RenderConversation(GradedConversation(example.prompt, std::nullopt, "REPLY-TEXT"));
  ASSERT_FALSE(llm_.requests().empty());
  for (const ChatRequest& request : llm_.requests()) {
    EXPECT_TRUE(absl::StrContains(request.body, "assistant: REPLY-TEXT"));
  }
  EXPECT_FALSE(expected.empty());
}

TEST_F(EnvTest, AnEmptyReplyIsGraded) {
  Start({});
  llm_.SetResponder(ParityVerdict);
  const Example& example = TestExample(1);
  env_v1::SubmitResponse response;
  ASSERT_TRUE(Submit(example.prompt_id, "", &response).ok());
  EXPECT_EQ(llm_.requests().size(), example.rubrics.size());
  EXPECT_EQ(response.items_size(), static_cast<int>(example.rubrics.size()));
}

TEST_F(EnvTest, AnOversizedReplyIsRejectedWithTheLimit) {
  HealthBenchEnvironmentOptions options;
  options.max_reply_bytes = 100;
  Start(options);
  env_v1::SubmitResponse response;
  grpc::Status status = Submit(TestExample(0).prompt_id, std::string(101, 'x'), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "reply is 101 bytes; the limit is 100 bytes (--max-reply-bytes)");
  EXPECT_TRUE(llm_.requests().empty());
}

// Every route and RPC reaches Submit; invalid UTF-8 never reaches the judge's JSON request.
// (Over gRPC, proto3 refuses such a string field before Submit: see the malformed-request
// interceptor.)
TEST_F(EnvTest, AReplyThatIsNotUtf8IsRefusedNamingTheOffsetWithoutAJudgeCall) {
  Start({});
  llm_.SetResponder(ParityVerdict);
  absl::Status status;
  env_->Submit(TaskRef::ById(TestExample(0).prompt_id), "caf\xC3\xA9 \xFF\xFE",
               absl::InfiniteFuture(),
               [&](absl::StatusOr<SubmitResult> result) { status = result.status(); });
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               "reply is not valid UTF-8: byte 0xFF at offset 6; send the text "
                               "UTF-8 encoded"));
  EXPECT_TRUE(llm_.requests().empty());
}

TEST_F(EnvTest, AJudgeFailureIsAnErrorNeverAReward) {
  GraderConfig config;
  config.retry.max_attempts = 1;
  Start({}, config);
  llm_.SetResponder([](const ChatRequest&) -> absl::StatusOr<ChatResult> {
    return HttpFailure(503, std::nullopt, "upstream down");
  });
  env_v1::SubmitResponse response;
  grpc::Status status = Submit(TestExample(0).prompt_id, "reply", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("http_5xx"));
  EXPECT_EQ(response.items_size(), 0);
  // Nothing was cached: the next try grades again.
  const size_t calls = llm_.requests().size();
  EXPECT_EQ(Submit(TestExample(0).prompt_id, "reply", &response).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_GT(llm_.requests().size(), calls);
  // The operator hears of each failed grading, rate-limited: 5 lines per 10 s, then counted.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Submit(TestExample(0).prompt_id, absl::StrCat("reply ", i), &response).error_code(),
              grpc::StatusCode::UNAVAILABLE);
  }
  EXPECT_EQ(env_->failure_log().suppressed_total("UNAVAILABLE"), 2);
}

TEST_F(EnvTest, AResubmittedReplyIsAnsweredFromTheCache) {
  Start({});
  llm_.SetResponder(ParityVerdict);
  const Example& example = TestExample(2);
  env_v1::SubmitResponse first;
  env_v1::SubmitResponse second;
  ASSERT_TRUE(Submit(example.prompt_id, "same reply", &first).ok());
  ASSERT_TRUE(Submit(example.prompt_id, "same reply", &second).ok());
  EXPECT_EQ(llm_.requests().size(), example.rubrics.size());
  EXPECT_FALSE(first.from_cache());
  EXPECT_TRUE(second.from_cache());
  EXPECT_EQ(second.reward(), first.reward());
  EXPECT_EQ(second.usage().prompt_tokens(), 0);
  // A different reply is graded anew.
  ASSERT_TRUE(Submit(example.prompt_id, "other reply", &second).ok());
  EXPECT_EQ(llm_.requests().size(), 2 * example.rubrics.size());
}

// With one judge call in flight at a time the items of a submission wait for each other: that
// wait is what hb-env adds over the slowest judge call (hb_env_added_latency_seconds).
TEST_F(EnvTest, AddedLatencyIsTheTimeOverTheSlowestJudgeCall) {
  fake_env_clock_ = true;
  HealthBenchEnvironmentOptions options;
  options.max_upstream_in_flight = 1;
  options.adaptive = false;
  Start(options);
  const Example& example = TestExample(2);
  const size_t items = example.rubrics.size();
  ASSERT_GE(items, 2u);
  absl::Notification done;
  auto result = SubmitAsync(example.prompt_id, "a reply", &done);
  for (size_t i = 0; i < items; ++i) {
    ASSERT_TRUE(llm_.WaitForPending(1, absl::Seconds(10)));
    // The first call is the slowest (3 s), every other takes 1 s.
    env_clock_.Advance(absl::Seconds(i == 0 ? 3 : 1));
    ASSERT_TRUE(llm_.CompleteNext(ChatReply(R"({"explanation": "x", "criteria_met": true})")));
  }
  done.WaitForNotification();
  ASSERT_TRUE(result->ok()) << result->status();
  const prometheus::ClientMetric::Histogram* added = nullptr;
  const std::vector<prometheus::MetricFamily> families = registry_.Collect();
  for (const prometheus::MetricFamily& family : families) {
    if (family.name == "hb_env_added_latency_seconds") added = &family.metric[0].histogram;
  }
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->sample_count, 1u);
  // 3 s + (items - 1) x 1 s in all, over the slowest call's 3 s.
  EXPECT_DOUBLE_EQ(added->sample_sum, static_cast<double>(items - 1));
}

TEST_F(EnvTest, CacheEntriesZeroTurnsTheCacheOff) {
  HealthBenchEnvironmentOptions options;
  options.cache_entries = 0;
  Start(options);
  llm_.SetResponder(ParityVerdict);
  const Example& example = TestExample(2);
  env_v1::SubmitResponse response;
  ASSERT_TRUE(Submit(example.prompt_id, "same reply", &response).ok());
  ASSERT_TRUE(Submit(example.prompt_id, "same reply", &response).ok());
  EXPECT_FALSE(response.from_cache());
  EXPECT_EQ(llm_.requests().size(), 2 * example.rubrics.size());
}

TEST_F(EnvTest, IdenticalSubmissionsInFlightShareOneGrading) {
  Start({});
  const Example& example = TestExample(4);
  absl::Notification done1, done2;
  auto r1 = SubmitAsync(example.prompt_id, "twin", &done1);
  auto r2 = SubmitAsync(example.prompt_id, "twin", &done2);
  EXPECT_EQ(llm_.pending(), example.rubrics.size());
  while (llm_.CompleteNext(ChatReply(R"({"explanation": "x", "criteria_met": true})"))) {
  }
  done1.WaitForNotification();
  done2.WaitForNotification();
  ASSERT_TRUE(r1->ok()) << r1->status();
  ASSERT_TRUE(r2->ok()) << r2->status();
  EXPECT_EQ((*r1)->reward, (*r2)->reward);
  EXPECT_EQ(llm_.requests().size(), example.rubrics.size());
}

TEST_F(EnvTest, JudgeCallsInFlightAreBoundedGlobally) {
  HealthBenchEnvironmentOptions options;
  options.max_upstream_in_flight = 3;
  Start(options);
  absl::Notification done1, done2;
  auto r1 = SubmitAsync(TestExample(0).prompt_id, "a", &done1);
  auto r2 = SubmitAsync(TestExample(1).prompt_id, "b", &done2);
  EXPECT_EQ(llm_.pending(), 3u);
  EXPECT_EQ(env_->upstream_in_flight(), 3);
  while (llm_.CompleteNext(ChatReply(R"({"explanation": "x", "criteria_met": false})"))) {
    EXPECT_LE(llm_.pending(), 3u);
  }
  done1.WaitForNotification();
  done2.WaitForNotification();
  EXPECT_TRUE(r1->ok());
  EXPECT_TRUE(r2->ok());
  EXPECT_EQ(llm_.requests().size(), TestExample(0).rubrics.size() + TestExample(1).rubrics.size());
}

TEST_F(EnvTest, ShutdownFailsGradingsWithItemsQueuedAndInFlightAsCancelled) {
  HealthBenchEnvironmentOptions options;
  options.max_upstream_in_flight = 1;
  Start(options);
  ASSERT_GT(TestExample(0).rubrics.size(), 1u);
  absl::Notification done;
  auto result = SubmitAsync(TestExample(0).prompt_id, "a", &done);
  // One judge call out, the grading's other items queued behind the window.
  EXPECT_EQ(llm_.pending(), 1u);
  EXPECT_EQ(env_->upstream_in_flight(), 1);
  server_.reset();
  env_.reset();  // drops the queued items, cancels the call in flight, waits for it
  ASSERT_TRUE(done.HasBeenNotified());
  EXPECT_THAT(*result, StatusIs(absl::StatusCode::kCancelled,
                                HasSubstr("the environment is shutting down")));
  EXPECT_EQ(llm_.requests().size(), 1u);  // the queued items never reached the judge
}

TEST_F(EnvTest, ABacklogOverMaxPendingIsRefusedWithARetryDelay) {
  HealthBenchEnvironmentOptions options;
  options.max_pending = 1;
  options.backlog_retry_delay = absl::Milliseconds(1500);
  Start(options);
  absl::Notification done1, done2;
  auto r1 = SubmitAsync(TestExample(0).prompt_id, "a", &done1);
  auto r2 = SubmitAsync(TestExample(1).prompt_id, "b", &done2);
  ASSERT_TRUE(done2.HasBeenNotified());
  EXPECT_THAT(*r2, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--max-pending")));
  EXPECT_EQ(RetryDelay(r2->status()), absl::Milliseconds(1500));
  EXPECT_TRUE(IsServerBusy(r2->status()));  // hb-env's own capacity, not the judge's 429
  while (llm_.CompleteNext(ChatReply(R"({"explanation": "x", "criteria_met": false})"))) {
  }
  done1.WaitForNotification();
  EXPECT_TRUE(r1->ok());
}

TEST_F(EnvTest, SubmitBatchReturnsOneResultPerReply) {
  Start({});
  llm_.SetResponder(ParityVerdict);
  env_v1::SubmitBatchRequest request;
  auto* good = request.add_submissions();
  good->mutable_task()->set_split("consensus");
  good->mutable_task()->set_index(0);
  good->set_reply("fine");
  good->set_request_id("g");
  auto* bad = request.add_submissions();
  bad->mutable_task()->set_task_id("nope");
  env_v1::SubmitBatchResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->SubmitBatch(&context, request, &response).ok());
  ASSERT_EQ(response.results_size(), 2);
  ASSERT_TRUE(response.results(0).has_response());
  EXPECT_EQ(response.results(0).response().request_id(), "g");
  ASSERT_TRUE(response.results(1).has_error());
  EXPECT_EQ(response.results(1).error().code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_EQ(response.results(1).error().message(), "unknown task id 'nope'");
}

TEST_F(EnvTest, HealthIsServingOverallAndPerService) {
  Start({});
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const char* service : {"", "healthbench.env.v1.Environment"}) {
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(health->Check(&context, request, &response).ok()) << service;
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(EnvTest, APortAlreadyBoundIsRefused) {
  Start({});
  auto second =
      EnvGrpcServer::Start(*env_, EnvServerOptions{absl::StrCat("127.0.0.1:", server_->port())});
  EXPECT_THAT(second, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("could not listen")));
}

TEST(LoadSplitsTest, ASplitNameGivenTwiceIsAnError) {
  const std::string main = testing::SharedDataFile(testing::kMainHead30);
  EXPECT_THAT(LoadSplits({{"test", main}, {"test", main}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("split 'test' given twice")));
}

}  // namespace
}  // namespace hb::env
