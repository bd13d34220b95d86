// EnvServiceImpl's bounds over a FakeEnvironment through a real channel on 127.0.0.1:0: the
// concurrent-RPC cap, the default deadline and the short-field limits (issue #12).
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/base/clock.h"
#include "common/retry/retry_status.h"
#include "common/rpc/grpc_status.h"
#include "common/rpc/malformed_request.h"
#include "environment/grpc/env_server.h"
#include "gmock/gmock.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_environment.h"
#include "tests/testing/raw_grpc_call.h"
#include "tests/testing/status_matchers.h"

namespace hb::env {
namespace {

using ::hb::testing::FakeEnvironment;
using ::hb::testing::RawUnaryCall;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

class EnvServiceLimitsTest : public ::testing::Test {
 protected:
  void Start(EnvServiceOptions service) {
    env_.AddTask("dev", {"t1", {}, "prompt"});
    EnvServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.service = service;
    auto server = EnvGrpcServer::Start(env_, options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = env_v1::Environment::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->port()), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    env_.HoldSubmissions(false);
    server_.reset();
  }

  static env_v1::SubmitRequest Request(const std::string& request_id) {
    env_v1::SubmitRequest request;
    request.mutable_task()->set_task_id("t1");
    request.set_reply("a reply");
    request.set_request_id(request_id);
    return request;
  }

  absl::Status Submit(const env_v1::SubmitRequest& request) {
    grpc::ClientContext context;
    env_v1::SubmitResponse response;
    return FromGrpcStatus(stub_->Submit(&context, request, &response));
  }

  FakeEnvironment env_;
  std::unique_ptr<EnvGrpcServer> server_;
  std::unique_ptr<env_v1::Environment::Stub> stub_;
};

TEST_F(EnvServiceLimitsTest, RpcsPastTheCapAreResourceExhaustedWithARetryDelay) {
  EnvServiceOptions service;
  service.max_concurrent_rpcs = 1;
  service.busy_retry_delay = absl::Seconds(2);
  Start(service);
  env_.HoldSubmissions(true);
  const env_v1::SubmitRequest held_request = Request("r1");
  grpc::ClientContext held_context;
  env_v1::SubmitResponse held_response;
  absl::Notification held_done;
  grpc::Status held_status;
  stub_->async()->Submit(&held_context, &held_request, &held_response, [&](grpc::Status s) {
    held_status = s;
    held_done.Notify();
  });
  EXPECT_TRUE(env_.WaitForSubmissions(1)) << env_.submissions() << " submitted";
  const absl::Status refused = Submit(Request("r2"));
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted,
                                HasSubstr("RPCs in progress (--max-concurrent-rpcs)")));
  EXPECT_EQ(RetryDelay(refused), absl::Seconds(2));
  EXPECT_TRUE(IsServerBusy(refused));
  EXPECT_EQ(env_.submissions(), 1);
  env_.HoldSubmissions(false);
  ASSERT_TRUE(held_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(held_status.ok()) << held_status.error_message();
  // The permit is released before the first RPC finishes: the next call is admitted.
  EXPECT_TRUE(Submit(Request("r3")).ok());
}

TEST_F(EnvServiceLimitsTest, AnOversizedRequestIdIsRefusedAndNeverEchoed) {
  Start(EnvServiceOptions{});
  const std::string id(5000, 'i');
  const absl::Status status = Submit(Request(id));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("request_id is 5000 bytes; the limit is 1024 "
                                         "(max_field_bytes)")));
  EXPECT_THAT(std::string(status.message()), Not(HasSubstr(id)));
  env_v1::SubmitRequest long_task = Request("r");
  long_task.mutable_task()->set_task_id(std::string(2000, 't'));
  EXPECT_THAT(Submit(long_task), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("task.task_id is 2000 bytes")));
  env_v1::SubmitBatchRequest batch;
  *batch.add_submissions() = Request("ok");
  *batch.add_submissions() = Request(id);
  grpc::ClientContext context;
  env_v1::SubmitBatchResponse response;
  EXPECT_THAT(FromGrpcStatus(stub_->SubmitBatch(&context, batch, &response)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("submissions[1]: request_id is 5000 bytes")));
  EXPECT_EQ(env_.submissions(), 0);
}

TEST_F(EnvServiceLimitsTest, ASubmitWithoutADeadlineGetsTheDefaultDeadline) {
  EnvServiceOptions service;
  service.default_deadline = absl::Minutes(3);
  Start(service);
  const absl::Time before = Clock::Real().Now();
  ASSERT_TRUE(Submit(Request("r")).ok());
  EXPECT_GE(env_.last_deadline(), before + absl::Minutes(3));
  EXPECT_LE(env_.last_deadline(), Clock::Real().Now() + absl::Minutes(3));
}

// One list_services request over a real v1 reflection stream; the services, or the status.
absl::StatusOr<std::vector<std::string>> ListServicesByReflection(int port) {
  namespace v1 = ::grpc::reflection::v1;
  auto stub = v1::ServerReflection::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = stub->ServerReflectionInfo(&context);
  v1::ServerReflectionRequest request;
  request.set_list_services("");
  stream->Write(request);
  stream->WritesDone();
  std::vector<std::string> services;
  v1::ServerReflectionResponse response;
  while (stream->Read(&response)) {
    for (const auto& service : response.list_services_response().service()) {
      services.push_back(service.name());
    }
  }
  const grpc::Status status = stream->Finish();
  if (!status.ok()) return FromGrpcStatus(status);
  return services;
}

TEST(EnvServerReflectionTest, OffByDefaultAndBothVersionsWhenAskedFor) {
  FakeEnvironment env;
  EnvServerOptions options;
  options.listen_address = "127.0.0.1:0";
  auto closed = EnvGrpcServer::Start(env, options);
  ASSERT_TRUE(closed.ok()) << closed.status();
  EXPECT_THAT(ListServicesByReflection((*closed)->port()).status(),
              StatusIs(absl::StatusCode::kUnimplemented, ::testing::_));
  options.reflection = true;
  auto open = EnvGrpcServer::Start(env, options);
  ASSERT_TRUE(open.ok()) << open.status();
  auto services = ListServicesByReflection((*open)->port());
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, ::testing::IsSupersetOf({"healthbench.env.v1.Environment",
                                                  "grpc.reflection.v1.ServerReflection",
                                                  "grpc.reflection.v1alpha.ServerReflection"}));
}

// hb-env's gRPC server with one bearer token, and a channel to it.
class EnvServerMalformedRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EnvServerOptions options;
    options.listen_address = "127.0.0.1:0";
    absl::StatusOr<BearerTokens> tokens = BearerTokens::FromList({token}, "test");
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    options.security.tokens = *tokens;
    absl::StatusOr<std::unique_ptr<EnvGrpcServer>> started = EnvGrpcServer::Start(env_, options);
    ASSERT_TRUE(started.ok()) << started.status();
    server = *std::move(started);
    channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server->port()),
                                  grpc::InsecureChannelCredentials());
  }

  FakeEnvironment env_;
  const std::string token = "tok-0123456789abcdef";
  const std::string path = "/healthbench.env.v1.Environment/Submit";
  std::unique_ptr<EnvGrpcServer> server;
  std::shared_ptr<grpc::Channel> channel;
};

// gRPC answers bytes that do not parse as the request message with a bare UNIMPLEMENTED before
// any handler runs: the server says INVALID_ARGUMENT and why to a caller with a valid token,
// UNAUTHENTICATED (and nothing about the request) to any other, each logged rate-limited.
TEST_F(EnvServerMalformedRequestTest, InvalidArgumentForACallerUnauthenticatedForAStranger) {
  std::string response;
  // An unterminated varint: no protobuf message parses from it.
  grpc::Status status = RawUnaryCall(*channel, path, "\x08\xff\xff", &response, "Bearer " + token);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr(absl::StrCat("malformed request for ", path,
                                     ": the bytes do not parse as its request message")));
  for (int i = 0; i < 8; ++i) {
    status = RawUnaryCall(*channel, path, "\x08\xff\xff", &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_THAT(status.error_message(), Not(HasSubstr("malformed")));
  }
  // 5 lines per kind per 10 s are written, the other 3 counted as suppressed.
  EXPECT_EQ(server->refused_log().suppressed_total("Submit UNAUTHENTICATED"), 3);
  EXPECT_EQ(server->refused_log().suppressed_total("Submit INVALID_ARGUMENT"), 0);
}

// A reply that is not valid UTF-8 fails to parse (proto3 strings must be): a caller with a token
// is told which field, a stranger nothing; libprotobuf's own line for each such request (written
// before any check, for strangers too) is rate-limited, 5 per 10 s.
TEST_F(EnvServerMalformedRequestTest, AStringFieldThatIsNotUtf8IsNamed) {
  // SubmitRequest.reply (field 2, length-delimited) = "caf\xc3(".
  const std::string invalid_reply = std::string("\x12\x05") + "caf\xc3(";
  std::string response;
  const int64_t suppressed = SuppressedProtobufLogLines();
  grpc::Status status = RawUnaryCall(*channel, path, invalid_reply, &response, "Bearer " + token);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            absl::StrCat("malformed request for ", path,
                         ": string field 'healthbench.env.v1.SubmitRequest.reply' is not valid "
                         "UTF-8; send the text UTF-8 encoded"));
  for (int i = 0; i < 9; ++i) {
    status = RawUnaryCall(*channel, path, invalid_reply, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_THAT(status.error_message(), Not(HasSubstr("UTF-8")));
  }
  EXPECT_EQ(SuppressedProtobufLogLines() - suppressed, 5);
  // The field is the last request's only: bytes that fail to parse otherwise are not blamed on it.
  status = RawUnaryCall(*channel, path, "\x08\xff\xff", &response, "Bearer " + token);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr(": the bytes do not parse as its request message"));
}

TEST(ReceiveLimitForTest, RoomForABatchOfRepliesButNoMore) {
  EXPECT_EQ(ReceiveLimitFor(1 << 20), 16 << 20);                 // the default --max-reply-bytes
  EXPECT_EQ(ReceiveLimitFor(10 << 20), (20 << 20) + (1 << 20));  // two of the largest
  EXPECT_EQ(ReceiveLimitFor(size_t{1} << 40), 1 << 30);          // capped
}

}  // namespace
}  // namespace hb::env
