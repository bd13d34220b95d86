// GraderServiceImpl through a real channel on 127.0.0.1:0, with a FakeLlmClient underneath:
// proto <-> domain, status mapping on the wire, GradeReply fan-out and scoring, deadline
// propagation and cancellation reaching the upstream call.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "common/healthbench/prompts.h"
#include "common/retry/retry_status.h"
#include "common/rpc/grpc_status.h"
#include "gmock/gmock.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "grader/grader_metrics.h"
#include "grader_service/grader_service_impl.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
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
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kTemplate[] = "<<conversation>>\n---\n<<rubric_item>>";

class GraderServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(GraderServiceOptions{}); }

  // (Re)starts the grader and the service with `options`.
  void Start(GraderServiceOptions options) {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    auto tmpl = GraderTemplate::FromText(kTemplate, false);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    grader_ = std::make_unique<Grader>(
        llm_, scheduler_, Clock::Real(), [] { return 0.0; }, *tmpl, GraderConfig{}, &metrics_);
    service_ =
        std::make_unique<GraderServiceImpl>(*grader_, Clock::Real(), &metrics_, nullptr, options);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    builder.SetMaxReceiveMessageSize(8 << 20);  // hb-grader's default
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = grader_v1::Grader::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                           grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  // Grader replies decided by the criterion text in the prompt: "[met]" -> true.
  void AnswerByCriterion() {
    llm_.SetResponder([](const ChatRequest& r) -> absl::StatusOr<ChatResult> {
      if (absl::StrContains(r.body, "reject me")) {
        return HttpFailure(400, std::nullopt, "maximum context length exceeded");
      }
      return ChatReply(absl::StrContains(r.body, "[met]")
                           ? R"({"explanation": "yes", "criteria_met": true})"
                           : R"({"explanation": "no", "criteria_met": false})");
    });
  }

  static void AddMessage(google::protobuf::RepeatedPtrField<grader_v1::Message>* out,
                         const std::string& role, const std::string& content) {
    grader_v1::Message* m = out->Add();
    m->set_role(role);
    m->set_content(content);
  }

  static grader_v1::GradeItemRequest ItemRequest(const std::string& criterion) {
    grader_v1::GradeItemRequest request;
    AddMessage(request.mutable_conversation(), "user", "Is it serious?");
    request.set_reply("Probably not.");
    request.mutable_rubric_item()->set_criterion(criterion);
    request.mutable_rubric_item()->set_points(4);
    request.set_request_id("item-7");
    return request;
  }

  FakeClock scheduler_clock_;
  FakeScheduler scheduler_{scheduler_clock_};
  FakeLlmClient llm_;
  prometheus::Registry registry_;
  GraderMetrics metrics_{registry_};
  std::unique_ptr<Grader> grader_;
  std::unique_ptr<GraderServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grader_v1::Grader::Stub> stub_;
};

TEST_F(GraderServiceTest, GradeItemReturnsTheVerdict) {
  AnswerByCriterion();
  grpc::ClientContext context;
  grader_v1::GradeItemResponse response;
  grpc::Status status = stub_->GradeItem(&context, ItemRequest("[met] Says it."), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(response.criteria_met());
  EXPECT_EQ(response.explanation(), "yes");
  EXPECT_EQ(response.attempts(), 1);
  EXPECT_EQ(response.grader_model(), "fake-grader");
  EXPECT_EQ(response.request_id(), "item-7");
  EXPECT_EQ(response.usage().prompt_tokens(), 100);
  EXPECT_EQ(response.raw_reply(), R"({"explanation": "yes", "criteria_met": true})");
  ASSERT_EQ(llm_.requests().size(), 1u);
  EXPECT_THAT(
      llm_.requests()[0].body,
      HasSubstr("user: Is it serious?\\n\\nassistant: Probably not.\\n---\\n[4] [met] Says it."));
  EXPECT_EQ(metrics_.RpcCount("GradeItem", absl::StatusCode::kOk), 1);
  EXPECT_EQ(metrics_.RpcsInFlight("GradeItem"), 0);
}

TEST_F(GraderServiceTest, ErrorsKeepTheirCodeAndMessageOnTheWire) {
  AnswerByCriterion();
  {
    grader_v1::GradeItemRequest request = ItemRequest("x");
    request.mutable_conversation(0)->set_role("assistant");
    grpc::ClientContext context;
    grader_v1::GradeItemResponse response;
    absl::Status status = FromGrpcStatus(stub_->GradeItem(&context, request, &response));
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                                 HasSubstr("must be from the user, got role 'assistant'")));
  }
  {
    grpc::ClientContext context;
    grader_v1::GradeItemResponse response;
    absl::Status status =
        FromGrpcStatus(stub_->GradeItem(&context, ItemRequest("reject me"), &response));
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition,
                                 HasSubstr("maximum context length exceeded")));
    EXPECT_FALSE(response.criteria_met());
  }
  EXPECT_EQ(metrics_.RpcCount("GradeItem", absl::StatusCode::kInvalidArgument), 1);
  EXPECT_EQ(metrics_.RpcCount("GradeItem", absl::StatusCode::kFailedPrecondition), 1);
}

TEST_F(GraderServiceTest, GradeReplyReturnsEveryVerdictInOrderWithTheScore) {
  AnswerByCriterion();
  grader_v1::GradeReplyRequest request;
  AddMessage(request.mutable_conversation(), "system", "You are a helpful assistant.");
  AddMessage(request.mutable_conversation(), "user", "Is it serious?");
  request.set_reply("Probably not.");
  request.set_request_id("task-1");
  struct Item {
    const char* criterion;
    double points;
    const char* tag;
  };
  for (const Item& item : {Item{"[met] A", 5, "axis:accuracy"}, Item{"B", 3, "axis:accuracy"},
                           Item{"[met] C", -2, "axis:completeness"}}) {
    grader_v1::RubricItem* r = request.add_rubric_items();
    r->set_criterion(item.criterion);
    r->set_points(item.points);
    r->add_tags(item.tag);
  }
  grpc::ClientContext context;
  grader_v1::GradeReplyResponse response;
  grpc::Status status = stub_->GradeReply(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.verdicts_size(), 3);
  EXPECT_TRUE(response.verdicts(0).criteria_met());
  EXPECT_FALSE(response.verdicts(1).criteria_met());
  EXPECT_TRUE(response.verdicts(2).criteria_met());
  EXPECT_EQ(response.verdicts(1).request_id(), "task-1/1");
  EXPECT_DOUBLE_EQ(response.score(), (5.0 - 2.0) / 8.0);
  // axis:completeness has no positive item: omitted, as the reference does.
  EXPECT_THAT(response.tag_scores(), UnorderedElementsAre(Pair("axis:accuracy", 5.0 / 8.0)));
  EXPECT_EQ(response.usage().prompt_tokens(), 300);
  EXPECT_EQ(llm_.requests().size(), 3u);
  EXPECT_THAT(llm_.requests()[0].body,
              HasSubstr("system: You are a helpful assistant.\\n\\nuser:"));
}

TEST_F(GraderServiceTest, GradeReplyFailsWholeWhenAnyItemFails) {
  AnswerByCriterion();
  grader_v1::GradeReplyRequest request;
  AddMessage(request.mutable_conversation(), "user", "Q?");
  for (const char* c : {"[met] A", "reject me", "C"}) {
    grader_v1::RubricItem* r = request.add_rubric_items();
    r->set_criterion(c);
    r->set_points(1);
  }
  grpc::ClientContext context;
  grader_v1::GradeReplyResponse response;
  absl::Status status = FromGrpcStatus(stub_->GradeReply(&context, request, &response));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr("rubric item 1: grader backend rejected the request")));
  EXPECT_EQ(response.verdicts_size(), 0);
}

// A 429 whose Retry-After would pass the caller's deadline: the delay travels as the standard
// google.rpc.RetryInfo detail, which any gRPC client can read, and the message has no suffix.
TEST_F(GraderServiceTest, TheUpstreamRetryAfterTravelsAsRetryInfoInTheErrorDetails) {
  llm_.SetResponder([](const ChatRequest&) -> absl::StatusOr<ChatResult> {
    return HttpFailure(429, absl::Milliseconds(45250), "rate limited");
  });
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grader_v1::GradeItemResponse response;
  const grpc::Status wire = stub_->GradeItem(&context, ItemRequest("x"), &response);
  ASSERT_EQ(wire.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(wire.error_message(), Not(HasSubstr("retry_after")));
  google::rpc::Status details;
  ASSERT_TRUE(details.ParseFromString(wire.error_details()));
  EXPECT_EQ(details.code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), "type.googleapis.com/google.rpc.RetryInfo");
  google::rpc::RetryInfo info;
  ASSERT_TRUE(details.details(0).UnpackTo(&info));
  EXPECT_EQ(info.retry_delay().seconds(), 45);
  EXPECT_EQ(info.retry_delay().nanos(), 250'000'000);
  EXPECT_EQ(RetryDelay(FromGrpcStatus(wire)), absl::Milliseconds(45250));
  // The upstream's rate limit: never marked server-busy (the orchestrator narrows its window).
  EXPECT_FALSE(IsServerBusy(FromGrpcStatus(wire)));
}

TEST_F(GraderServiceTest, GradeReplyKeepsTheFailedItemsRetryDelay) {
  llm_.SetResponder([](const ChatRequest&) -> absl::StatusOr<ChatResult> {
    return HttpFailure(429, absl::Seconds(90), "rate limited");
  });
  grader_v1::GradeReplyRequest request;
  AddMessage(request.mutable_conversation(), "user", "Q?");
  grader_v1::RubricItem* r = request.add_rubric_items();
  r->set_criterion("A");
  r->set_points(1);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grader_v1::GradeReplyResponse response;
  absl::Status status = FromGrpcStatus(stub_->GradeReply(&context, request, &response));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("rubric item 0: ")));
  EXPECT_EQ(RetryDelay(status), absl::Seconds(90));
}

TEST_F(GraderServiceTest, GradeReplyRejectsRubricsThatCannotBeScored) {
  AnswerByCriterion();
  grader_v1::GradeReplyRequest request;
  AddMessage(request.mutable_conversation(), "user", "Q?");
  {
    grpc::ClientContext context;
    grader_v1::GradeReplyResponse response;
    EXPECT_THAT(FromGrpcStatus(stub_->GradeReply(&context, request, &response)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no rubric items")));
  }
  grader_v1::RubricItem* r = request.add_rubric_items();
  r->set_criterion("only negative");
  r->set_points(-3);
  {
    grpc::ClientContext context;
    grader_v1::GradeReplyResponse response;
    EXPECT_THAT(FromGrpcStatus(stub_->GradeReply(&context, request, &response)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("positive points")));
  }
  EXPECT_TRUE(llm_.requests().empty());
}

TEST_F(GraderServiceTest, TheCallersDeadlineBoundsTheUpstreamTimeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grader_v1::GradeItemRequest request = ItemRequest("x");
  grader_v1::GradeItemResponse response;
  absl::Notification done;
  grpc::Status status;
  stub_->async()->GradeItem(&context, &request, &response, [&](grpc::Status s) {
    status = s;
    done.Notify();
  });
  ASSERT_TRUE(llm_.WaitForPending(1, absl::Seconds(10)));
  absl::Duration timeout = llm_.requests()[0].timeout;
  EXPECT_LE(timeout, absl::Seconds(31));  // grpc-timeout is rounded up on the wire
  EXPECT_GT(timeout, absl::Seconds(20));
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(R"({"criteria_met": false})")));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(GraderServiceTest, ClientCancellationCancelsTheUpstreamCall) {
  grpc::ClientContext context;
  grader_v1::GradeItemRequest request = ItemRequest("x");
  grader_v1::GradeItemResponse response;
  absl::Notification done;
  grpc::Status status;
  stub_->async()->GradeItem(&context, &request, &response, [&](grpc::Status s) {
    status = s;
    done.Notify();
  });
  ASSERT_TRUE(llm_.WaitForPending(1, absl::Seconds(10)));
  context.TryCancel();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(llm_.WaitForCancelled(1, absl::Seconds(10)));
  EXPECT_EQ(llm_.pending(), 0u);
}

grader_v1::GradeReplyRequest ReplyRequest(int items) {
  grader_v1::GradeReplyRequest request;
  grader_v1::Message* m = request.add_conversation();
  m->set_role("user");
  m->set_content("Is it serious?");
  request.set_reply("Probably not.");
  request.set_request_id("task-9");
  for (int i = 0; i < items; ++i) {
    grader_v1::RubricItem* r = request.add_rubric_items();
    r->set_criterion(absl::StrCat("criterion ", i));
    r->set_points(i + 1);
    r->add_tags("axis:accuracy");
  }
  return request;
}

absl::Status CallGradeReply(grader_v1::Grader::Stub& stub,
                            const grader_v1::GradeReplyRequest& request) {
  grpc::ClientContext context;
  grader_v1::GradeReplyResponse response;
  return FromGrpcStatus(stub.GradeReply(&context, request, &response));
}

TEST_F(GraderServiceTest, GradeReplyScoresOnTheCompletionsSchedulerNotTheUpstreamThread) {
  FakeClock completions_clock;
  FakeScheduler completions(completions_clock);
  GraderServiceOptions options;
  options.completions = &completions;
  Start(options);
  const grader_v1::GradeReplyRequest request = ReplyRequest(2);
  grpc::ClientContext context;
  grader_v1::GradeReplyResponse response;
  absl::Notification done;
  grpc::Status status;
  stub_->async()->GradeReply(&context, &request, &response, [&](grpc::Status s) {
    status = s;
    done.Notify();
  });
  ASSERT_TRUE(llm_.WaitForPending(2, absl::Seconds(10)));
  // The upstream's callbacks (here: this thread) deliver both verdicts ...
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(R"({"explanation": "", "criteria_met": true})")));
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(R"({"explanation": "", "criteria_met": false})")));
  // ... but scoring and the reply wait for the completions scheduler.
  EXPECT_EQ(completions.PendingDelays(), std::vector<absl::Duration>{absl::ZeroDuration()});
  EXPECT_FALSE(done.HasBeenNotified());
  EXPECT_EQ(completions.RunDue(), 1);
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_DOUBLE_EQ(response.score(), 1.0 / 3.0);
  EXPECT_THAT(response.tag_scores(), UnorderedElementsAre(Pair("axis:accuracy", 1.0 / 3.0)));
}

TEST_F(GraderServiceTest, ACallWithoutADeadlineGetsTheDefaultDeadline) {
  GraderServiceOptions options;
  options.default_deadline = absl::Seconds(42);
  Start(options);
  grpc::ClientContext context;  // no deadline
  const grader_v1::GradeItemRequest request = ItemRequest("x");
  grader_v1::GradeItemResponse response;
  absl::Notification done;
  stub_->async()->GradeItem(&context, &request, &response, [&](grpc::Status) { done.Notify(); });
  ASSERT_TRUE(llm_.WaitForPending(1, absl::Seconds(10)));
  const ChatRequest sent = llm_.requests()[0];
  EXPECT_LE(sent.timeout, absl::Seconds(42));  // not the 120 s attempt timeout
  EXPECT_GT(sent.timeout, absl::Seconds(30));
  EXPECT_NE(sent.deadline, absl::InfiniteFuture());
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(R"({"criteria_met": false})")));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

TEST_F(GraderServiceTest, RpcsPastTheConcurrencyLimitAreResourceExhaustedWithARetryDelay) {
  GraderServiceOptions options;
  options.max_concurrent_rpcs = 1;
  options.busy_retry_delay = absl::Seconds(3);
  Start(options);
  grpc::ClientContext held_context;
  const grader_v1::GradeItemRequest request = ItemRequest("x");
  grader_v1::GradeItemResponse held_response;
  absl::Notification held_done;
  stub_->async()->GradeItem(&held_context, &request, &held_response,
                            [&](grpc::Status) { held_done.Notify(); });
  ASSERT_TRUE(llm_.WaitForPending(1, absl::Seconds(10)));
  const absl::Status refused = CallGradeReply(*stub_, ReplyRequest(1));
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted,
                                HasSubstr("RPCs in progress (--max-concurrent-rpcs)")));
  EXPECT_EQ(RetryDelay(refused), absl::Seconds(3));
  EXPECT_TRUE(IsServerBusy(refused));  // marked on the wire, not read as a rate limit
  EXPECT_EQ(llm_.requests().size(), 1u);
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(R"({"criteria_met": false})")));
  ASSERT_TRUE(held_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  // Freed once the first RPC is done (OnDone may trail the client's callback a little).
  AnswerByCriterion();
  absl::Status later = refused;
  for (int i = 0; i < 200 && later.code() == absl::StatusCode::kResourceExhausted; ++i) {
    later = CallGradeReply(*stub_, ReplyRequest(1));
  }
  EXPECT_TRUE(later.ok()) << later;
}

TEST_F(GraderServiceTest, TheUpstreamQueueIsBoundedNotUnbounded) {
  GraderServiceOptions options;
  options.max_items_in_progress = 3;
  Start(options);
  const absl::Status refused = CallGradeReply(*stub_, ReplyRequest(4));
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted,
                                HasSubstr("0 rubric items in progress (--max-upstream-in-flight + "
                                          "--max-upstream-queue) and 4 more asked; the limit "
                                          "is 3")));
  EXPECT_TRUE(RetryDelay(refused).has_value());
  EXPECT_TRUE(IsServerBusy(refused));  // the grader's own bound, not the upstream's 429
  EXPECT_TRUE(llm_.requests().empty());
  AnswerByCriterion();
  EXPECT_TRUE(CallGradeReply(*stub_, ReplyRequest(3)).ok());
}

TEST_F(GraderServiceTest, AConversationOverThePromptBudgetIsRefusedBeforeAnyCopy) {
  const GraderLimits limits;  // the defaults: 1 MiB per message, 4 MiB per prompt
  grader_v1::GradeReplyRequest reply = ReplyRequest(2);
  for (int i = 0; i < 5; ++i) {
    grader_v1::Message* m = reply.add_conversation();
    m->set_role("user");
    m->set_content(std::string(limits.max_message_bytes, 'x'));
  }
  EXPECT_THAT(CallGradeReply(*stub_, reply),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the limit is 4194304 (max_prompt_bytes)")));
  grader_v1::GradeItemRequest item;
  *item.mutable_conversation() = reply.conversation();
  *item.mutable_rubric_item() = reply.rubric_items(0);
  grpc::ClientContext context;
  grader_v1::GradeItemResponse response;
  const grpc::Status status = stub_->GradeItem(&context, item, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("(max_prompt_bytes)"));
  EXPECT_TRUE(llm_.requests().empty());
}

TEST_F(GraderServiceTest, FieldsOverTheirLimitsAreRefusedNamingFieldAndLimit) {
  AnswerByCriterion();
  const GraderLimits limits;  // the defaults
  struct Case {
    const char* name;
    std::function<void(grader_v1::GradeReplyRequest&)> mutate;
    const char* message;
  };
  const std::string big(limits.max_field_bytes + 1, 'x');
  const std::vector<Case> cases = {
      {"tags per item",
       [](grader_v1::GradeReplyRequest& r) {
         for (int i = 0; i < 64; ++i) r.mutable_rubric_items(1)->add_tags(absl::StrCat("t", i));
       },
       "rubric item 1: rubric item has 65 tags; the limit is 64 (max_tags_per_item)"},
      {"tag length",
       [&](grader_v1::GradeReplyRequest& r) { r.mutable_rubric_items(0)->add_tags(big); },
       "rubric item 0: rubric item tags[1] is 1025 bytes; the limit is 1024 (max_field_bytes)"},
      {"points_text",
       [&](grader_v1::GradeReplyRequest& r) { r.mutable_rubric_items(1)->set_points_text(big); },
       "rubric item 1: rubric item points_text is 1025 bytes; the limit is 1024"},
      {"prompt_cache_key", [&](grader_v1::GradeReplyRequest& r) { r.set_prompt_cache_key(big); },
       "prompt_cache_key is 1025 bytes; the limit is 1024 (max_field_bytes)"},
      {"request_id", [&](grader_v1::GradeReplyRequest& r) { r.set_request_id(big); },
       "request_id is 1027 bytes; the limit is 1024 (max_field_bytes)"},
      {"rendered prompt",
       [](grader_v1::GradeReplyRequest& r) {
         // Each <<rubric_item>> in the conversation is replaced by the rubric item (quirk 11):
         // 60,000 of them times a 100 KB criterion would be a 6 GB prompt.
         std::string content;
         for (int i = 0; i < 60000; ++i) content += "<<rubric_item>>";
         r.mutable_conversation(0)->set_content(content);
         r.mutable_rubric_items(0)->set_criterion(std::string(100000, 'c'));
       },
       "(max_prompt_bytes)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    grader_v1::GradeReplyRequest request = ReplyRequest(2);
    c.mutate(request);
    const absl::Status status = CallGradeReply(*stub_, request);
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
    EXPECT_THAT(std::string(status.message()), Not(HasSubstr(big)));  // never echoed
  }
  EXPECT_TRUE(llm_.requests().empty());
}

}  // namespace
}  // namespace hb
