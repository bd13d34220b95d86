#include "grader_client/grpc_grader_client.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/server_callback.h"
#include "grpcpp/support/validate_service_config.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOk;
using ::hb::testing::StatusIs;
using healthbench::grader::v1::GradeItemRequest;
using healthbench::grader::v1::GradeItemResponse;
using ::testing::HasSubstr;

// A reply the client never gets: the call ends only when it is cancelled (the client's deadline,
// CancelAll), the way a stuck grader's would. Deletes itself when gRPC is done with it.
class AnswersOnlyOnCancel final : public grpc::ServerUnaryReactor {
 public:
  void OnCancel() override { Finish(grpc::Status(grpc::StatusCode::CANCELLED, "gone")); }
  void OnDone() override { delete this; }
};

// A Grader whose behaviour each test sets before its first call: by default it answers "met" and
// echoes the id; `hang` makes every call wait for its cancellation (the first call notifies
// `entered`).
class FakeGraderService final : public healthbench::grader::v1::Grader::CallbackService {
 public:
  std::function<grpc::Status(const GradeItemRequest&, int call)> behaviour;
  bool hang = false;
  absl::Notification entered;
  std::atomic<int> calls{0};

  grpc::ServerUnaryReactor* GradeItem(grpc::CallbackServerContext* context,
                                      const GradeItemRequest* request,
                                      GradeItemResponse* response) override {
    const int call = ++calls;
    if (hang) {
      auto* reactor = new AnswersOnlyOnCancel();
      if (call == 1) entered.Notify();
      return reactor;
    }
    grpc::Status status = behaviour ? behaviour(*request, call) : grpc::Status::OK;
    if (status.ok()) {
      response->set_criteria_met(true);
      response->set_explanation("ok from " + name);
      response->set_request_id(request->request_id());
      response->mutable_usage()->set_prompt_tokens(10);
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }
  std::string name;
};

struct TestServer {
  FakeGraderService service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  explicit TestServer(const std::string& name) {
    service.name = name;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
  }
  ~TestServer() { server->Shutdown(std::chrono::system_clock::now()); }
};

absl::StatusOr<GradeItemResponse> CallAndWait(GrpcGraderClient& client,
                                              const GradeItemRequest& request,
                                              absl::Duration timeout = absl::Seconds(10)) {
  // Shared with the callback: Notify() may still be running when the wait returns.
  auto done = std::make_shared<absl::Notification>();
  auto result = std::make_shared<absl::StatusOr<GradeItemResponse>>();
  client.GradeItem(request, timeout, [done, result](absl::StatusOr<GradeItemResponse> r) {
    *result = std::move(r);
    done->Notify();
  });
  done->WaitForNotification();
  return *result;
}

TEST(GrpcGraderClientTest, ServiceConfigIsValid) {
  EXPECT_EQ(grpc::experimental::ValidateServiceConfigJSON(kGraderServiceConfig), "");
}

TEST(GrpcGraderClientTest, EmptyTargetIsInvalid) {
  EXPECT_THAT(GrpcGraderClient::Create("").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
}

TEST(GrpcGraderClientTest, GradesOverLoopback) {
  TestServer server("a");
  HB_ASSERT_OK_AND_ASSIGN(auto client,
                          GrpcGraderClient::Create("127.0.0.1:" + std::to_string(server.port)));
  HB_ASSERT_OK(client->WaitForReady(absl::Seconds(10)));
  GradeItemRequest request;
  request.set_request_id("ck/p/0/1");
  HB_ASSERT_OK_AND_ASSIGN(GradeItemResponse response, CallAndWait(*client, request));
  EXPECT_TRUE(response.criteria_met());
  EXPECT_EQ(response.request_id(), "ck/p/0/1");
  EXPECT_EQ(response.usage().prompt_tokens(), 10);
}

TEST(GrpcGraderClientTest, MapsStatusCodes) {
  TestServer server("a");
  server.service.behaviour = [](const GradeItemRequest&, int) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "last turn must be from the user");
  };
  HB_ASSERT_OK_AND_ASSIGN(auto client,
                          GrpcGraderClient::Create("127.0.0.1:" + std::to_string(server.port)));
  EXPECT_THAT(
      CallAndWait(*client, GradeItemRequest()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("last turn must be from the user")));
  EXPECT_EQ(server.service.calls.load(), 1);  // not retried by gRPC
}

TEST(GrpcGraderClientTest, ChannelRetriesUnavailable) {
  TestServer server("a");
  server.service.behaviour = [](const GradeItemRequest&, int call) {
    return call == 1 ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down")
                     : grpc::Status::OK;
  };
  HB_ASSERT_OK_AND_ASSIGN(auto client,
                          GrpcGraderClient::Create("127.0.0.1:" + std::to_string(server.port)));
  EXPECT_THAT(CallAndWait(*client, GradeItemRequest()), IsOk());
  EXPECT_EQ(server.service.calls.load(), 2);
}

TEST(GrpcGraderClientTest, DeadlineExceeded) {
  TestServer server("a");
  server.service.hang = true;
  HB_ASSERT_OK_AND_ASSIGN(auto client,
                          GrpcGraderClient::Create("127.0.0.1:" + std::to_string(server.port)));
  EXPECT_THAT(CallAndWait(*client, GradeItemRequest(), absl::Milliseconds(200)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, ::testing::_));
}

TEST(GrpcGraderClientTest, CancelAllCancelsOutstandingCalls) {
  TestServer server("a");
  server.service.hang = true;
  HB_ASSERT_OK_AND_ASSIGN(auto client,
                          GrpcGraderClient::Create("127.0.0.1:" + std::to_string(server.port)));
  auto done = std::make_shared<absl::Notification>();
  auto result = std::make_shared<absl::StatusOr<GradeItemResponse>>();
  client->GradeItem(GradeItemRequest(), absl::Seconds(60),
                    [done, result](absl::StatusOr<GradeItemResponse> r) {
                      *result = std::move(r);
                      done->Notify();
                    });
  ASSERT_TRUE(server.service.entered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  client->CancelAll();
  ASSERT_TRUE(done->WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_THAT(*result, StatusIs(absl::StatusCode::kCancelled, ::testing::_));
}

TEST(GrpcGraderClientTest, RoundRobinSpreadsCallsOverReplicas) {
  TestServer a("a");
  TestServer b("b");
  HB_ASSERT_OK_AND_ASSIGN(auto client,
                          GrpcGraderClient::Create("ipv4:127.0.0.1:" + std::to_string(a.port) +
                                                   ",127.0.0.1:" + std::to_string(b.port)));
  HB_ASSERT_OK(client->WaitForReady(absl::Seconds(10)));
  // The channel is ready once one replica is; the second may still be connecting (a loaded
  // machine), so call until both have answered, within a bound a broken balancer cannot meet.
  int calls = 0;
  while (calls < 2000 && (a.service.calls.load() == 0 || b.service.calls.load() == 0)) {
    HB_ASSERT_OK(CallAndWait(*client, GradeItemRequest()).status());
    ++calls;
  }
  for (int i = 0; i < 20; ++i, ++calls) {
    HB_ASSERT_OK(CallAndWait(*client, GradeItemRequest()).status());
  }
  EXPECT_GT(a.service.calls.load(), 0);
  EXPECT_GT(b.service.calls.load(), 0);
  EXPECT_EQ(a.service.calls.load() + b.service.calls.load(), calls);
}

TEST(GrpcGraderClientTest, WaitForReadyTimesOutWithoutServer) {
  HB_ASSERT_OK_AND_ASSIGN(auto client, GrpcGraderClient::Create("127.0.0.1:1"));
  EXPECT_THAT(client->WaitForReady(absl::Milliseconds(300)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no grader replica")));
}

}  // namespace
}  // namespace hb
