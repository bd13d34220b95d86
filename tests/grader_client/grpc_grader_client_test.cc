#include "grader_client/grpc_grader_client.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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
using healthbench::grader::v1::GraderInfo;
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

  // Answers with model `name` (an older hb-grader: UNIMPLEMENTED when !has_get_info).
  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const healthbench::grader::v1::GetInfoRequest*,
                                    GraderInfo* info) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (!has_get_info) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""));
      return reactor;
    }
    info->set_model(name);
    info->set_temperature(0.5);
    info->set_max_tokens(2048);
    info->set_template_sha256("abc");
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  std::string name;
  bool has_get_info = true;
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

TEST(ReplicaTargetsTest, ListsEveryAddressOfATarget) {
  HB_ASSERT_OK_AND_ASSIGN(std::vector<ReplicaTarget> list,
                          ReplicaTargets("ipv4:10.0.0.1:50051,10.0.0.2:50052"));
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].target, "ipv4:10.0.0.1:50051");
  EXPECT_EQ(list[1].target, "ipv4:10.0.0.2:50052");
  EXPECT_EQ(list[0].authority, "");

  for (const std::string target : {"127.0.0.1:7", "dns:///127.0.0.1:7", "dns:127.0.0.1:7"}) {
    HB_ASSERT_OK_AND_ASSIGN(list, ReplicaTargets(target));
    ASSERT_EQ(list.size(), 1u) << target;
    EXPECT_EQ(list[0].target, "ipv4:127.0.0.1:7") << target;
    EXPECT_EQ(list[0].authority, "127.0.0.1:7") << target;
  }
  // A name resolves to each of its addresses now, presented under the name.
  HB_ASSERT_OK_AND_ASSIGN(list, ReplicaTargets("dns:///localhost:7"));
  ASSERT_FALSE(list.empty());
  for (const ReplicaTarget& replica : list) EXPECT_EQ(replica.authority, "localhost:7");

  HB_ASSERT_OK_AND_ASSIGN(list, ReplicaTargets("unix:/tmp/grader.sock"));
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].target, "unix:/tmp/grader.sock");

  EXPECT_THAT(ReplicaTargets("localhost"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has no port")));
  EXPECT_THAT(ReplicaTargets(""), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
}

TEST(GetInfoFromEveryReplicaTest, AsksEachReplicaAndSkipsUnreachableOnes) {
  TestServer a("model-a"), b("model-b");
  int closed_port = 0;
  {
    TestServer gone("gone");
    closed_port = gone.port;
  }
  const std::string target =
      absl::StrCat("ipv4:127.0.0.1:", a.port, ",127.0.0.1:", closed_port, ",127.0.0.1:", b.port);
  std::vector<std::string> unreachable;
  HB_ASSERT_OK_AND_ASSIGN(std::vector<ReplicaInfo> infos,
                          GetInfoFromEveryReplica(target, {}, absl::Seconds(5), &unreachable));
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[0].replica, absl::StrCat("ipv4:127.0.0.1:", a.port));
  EXPECT_EQ(infos[0].info.model(), "model-a");
  EXPECT_EQ(infos[1].info.model(), "model-b");
  ASSERT_EQ(unreachable.size(), 1u);
  EXPECT_THAT(unreachable[0], HasSubstr(absl::StrCat("127.0.0.1:", closed_port)));
  // They disagree: the check names both replicas and the field.
  EXPECT_THAT(CheckGradersAgree(infos),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(absl::StrCat(
                           "graders disagree on model: replica ipv4:127.0.0.1:", a.port,
                           " has 'model-a', replica ipv4:127.0.0.1:", b.port, " has 'model-b'"))));

  // No replica answers: kUnavailable naming the target.
  EXPECT_THAT(
      GetInfoFromEveryReplica(absl::StrCat("127.0.0.1:", closed_port), {}, absl::Seconds(5)),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("answered GetInfo")));
}

TEST(GetInfoFromEveryReplicaTest, AnOlderGraderWithoutGetInfoIsRefused) {
  TestServer old("old");
  old.service.has_get_info = false;
  EXPECT_THAT(
      GetInfoFromEveryReplica(absl::StrCat("127.0.0.1:", old.port), {}, absl::Seconds(5)),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("does not implement GetInfo")));
}

TEST(GrpcGraderClientTest, GetInfoAsksOneReplica) {
  TestServer a("model-a");
  HB_ASSERT_OK_AND_ASSIGN(auto client,
                          GrpcGraderClient::Create(absl::StrCat("127.0.0.1:", a.port)));
  HB_ASSERT_OK_AND_ASSIGN(GraderInfo info, client->GetInfo(absl::Seconds(5)));
  EXPECT_EQ(info.model(), "model-a");
}

}  // namespace
}  // namespace hb
