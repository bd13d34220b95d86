// InProcessGraderClient on a Grader driven by a FakeLlmClient: the same responses and statuses
// as the gRPC path (GraderServiceImpl behind GrpcGraderClient) on every rubric item of the real
// records, errors passed through unchanged, CancelAll reaching the upstream call.
#include "grader_client/in_process_grader_client.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/prompts.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grader_client/grpc_grader_client.h"
#include "grader_service/grader_service_impl.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
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
using healthbench::grader::v1::GradeItemRequest;
using healthbench::grader::v1::GradeItemResponse;
using ::testing::HasSubstr;

absl::StatusOr<GradeItemResponse> CallAndWait(GraderClient& client,
                                              const GradeItemRequest& request) {
  auto done = std::make_shared<absl::Notification>();
  auto result = std::make_shared<absl::StatusOr<GradeItemResponse>>();
  client.GradeItem(request, absl::Seconds(60), [done, result](absl::StatusOr<GradeItemResponse> r) {
    *result = std::move(r);
    done->Notify();
  });
  done->WaitForNotification();
  return *result;
}

GradeItemRequest RequestFor(const Example& example, size_t item, const std::string& reply) {
  GradeItemRequest request;
  for (const Message& turn : example.prompt) {
    auto* message = request.add_conversation();
    message->set_role(turn.role);
    message->set_content(turn.content);
  }
  request.set_reply(reply);
  const RubricItem& rubric = example.rubrics[item];
  request.mutable_rubric_item()->set_criterion(rubric.criterion);
  request.mutable_rubric_item()->set_points(rubric.points);
  request.mutable_rubric_item()->set_points_text(rubric.points_text);
  for (const std::string& tag : rubric.tags) request.mutable_rubric_item()->add_tags(tag);
  request.set_request_id(absl::StrCat(example.prompt_id, "/", item));
  return request;
}

class InProcessGraderClientTest : public ::testing::Test {
 protected:
  void StartGrader(const std::string& template_path, GraderConfig config) {
    auto tmpl = GraderTemplate::Load(template_path, /*require_reference=*/false);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    grader_ = std::make_unique<Grader>(
        llm_, scheduler_, clock_, [] { return 0.0; }, *tmpl, config);
    in_process_ = std::make_unique<InProcessGraderClient>(*grader_, clock_);
    service_ = std::make_unique<GraderServiceImpl>(*grader_, clock_, nullptr);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    auto client = GrpcGraderClient::Create(absl::StrCat("127.0.0.1:", port));
    ASSERT_TRUE(client.ok()) << client.status();
    grpc_ = *std::move(client);
  }
  void TearDown() override {
    grpc_.reset();
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    in_process_.reset();
  }

  FakeClock clock_;
  FakeScheduler scheduler_{clock_};
  FakeLlmClient llm_;
  std::unique_ptr<Grader> grader_;
  std::unique_ptr<InProcessGraderClient> in_process_;
  std::unique_ptr<GraderServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcGraderClient> grpc_;
};

TEST_F(InProcessGraderClientTest, SameResponsesAsTheGrpcPathOnTheRealRecords) {
  StartGrader(testing::ReferenceTemplatePath(), GraderConfig{});
  // A verdict that depends on the prompt, with rate-limit headers to relay.
  llm_.SetResponder([](const ChatRequest& r) -> absl::StatusOr<ChatResult> {
    ChatResult result =
        ChatReply(r.body.size() % 2 == 0 ? R"({"explanation": "even", "criteria_met": true})"
                                         : R"({"explanation": "odd", "criteria_met": false})");
    result.rate_limit.limit_requests = 500;
    result.rate_limit.remaining_requests = static_cast<int64_t>(r.body.size() % 500);
    result.rate_limit.reset_requests = absl::Milliseconds(1200);
    return result;
  });
  auto dataset = LoadDataset(testing::SharedDataFile(testing::kMainHead30), {});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  int compared = 0;
  for (const Example& example : dataset->examples) {
    for (size_t i = 0; i < example.rubrics.size(); ++i) {
      const GradeItemRequest request = RequestFor(example, i, "See a doctor if it gets worse.");
      absl::StatusOr<GradeItemResponse> local = CallAndWait(*in_process_, request);
      absl::StatusOr<GradeItemResponse> remote = CallAndWait(*grpc_, request);
      ASSERT_TRUE(local.ok()) << local.status();
      ASSERT_TRUE(remote.ok()) << remote.status();
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*local, *remote))
          << local->DebugString() << "\nvs\n"
          << remote->DebugString();
      ++compared;
    }
  }
  EXPECT_EQ(compared, 352);
}

TEST_F(InProcessGraderClientTest, ErrorsAreTheGradersStatusUnchanged) {
  GraderConfig config;
  config.retry.max_attempts = 1;
  StartGrader(testing::ReferenceTemplatePath(), config);
  llm_.SetResponder([](const ChatRequest&) -> absl::StatusOr<ChatResult> {
    return HttpFailure(429, absl::Seconds(3), "slow down");
  });
  auto dataset = LoadDataset(testing::SharedDataFile(testing::kMainHead30), {});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  const GradeItemRequest request = RequestFor(dataset->examples[0], 0, "reply");
  absl::StatusOr<GradeItemResponse> local = CallAndWait(*in_process_, request);
  absl::StatusOr<GradeItemResponse> remote = CallAndWait(*grpc_, request);
  EXPECT_THAT(local, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("http_429")));
  EXPECT_EQ(local.status().code(), remote.status().code());
  EXPECT_EQ(local.status().message(), remote.status().message());
}

TEST_F(InProcessGraderClientTest, AnInvalidRequestFailsInline) {
  StartGrader(testing::ReferenceTemplatePath(), GraderConfig{});
  GradeItemRequest request;
  request.mutable_rubric_item()->set_criterion("x");
  request.mutable_rubric_item()->set_points(1);
  bool called = false;
  in_process_->GradeItem(request, absl::Seconds(1), [&](absl::StatusOr<GradeItemResponse> r) {
    called = true;
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("conversation")));
  });
  EXPECT_TRUE(called);
  EXPECT_TRUE(llm_.requests().empty());
}

TEST_F(InProcessGraderClientTest, CancelAllCancelsTheUpstreamCall) {
  StartGrader(testing::ReferenceTemplatePath(), GraderConfig{});
  auto dataset = LoadDataset(testing::SharedDataFile(testing::kMainHead30), {});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  absl::Notification done;
  absl::Status status;
  in_process_->GradeItem(RequestFor(dataset->examples[0], 0, "reply"), absl::Seconds(60),
                         [&](absl::StatusOr<GradeItemResponse> r) {
                           status = r.status();
                           done.Notify();
                         });
  ASSERT_EQ(llm_.pending(), 1u);
  in_process_->CancelAll();
  done.WaitForNotification();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kCancelled, HasSubstr("cancelled")));
  EXPECT_EQ(llm_.cancelled().size(), 1u);
}

TEST_F(InProcessGraderClientTest, DestructionCancelsAndWaitsForOutstandingCalls) {
  StartGrader(testing::ReferenceTemplatePath(), GraderConfig{});
  auto dataset = LoadDataset(testing::SharedDataFile(testing::kMainHead30), {});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  absl::Status status;
  in_process_->GradeItem(RequestFor(dataset->examples[0], 0, "reply"), absl::Seconds(60),
                         [&](absl::StatusOr<GradeItemResponse> r) { status = r.status(); });
  in_process_.reset();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kCancelled, HasSubstr("cancelled")));
}

}  // namespace
}  // namespace hb
