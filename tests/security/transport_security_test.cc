// Transport security over real gRPC on 127.0.0.1: TLS, mTLS and bearer tokens, with a minimal
// service whose handler makes the same CheckGrpcCaller call the project's servers make.
#include "security/transport_security.h"

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/rpc/grpc_status.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "healthbench/grader/v1/grader.grpc.pb.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_pki.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;
namespace pb = ::healthbench::grader::v1;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";

TEST(ListenPolicyTest, LoopbackAddresses) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:50051"));
  EXPECT_TRUE(IsLoopbackAddress("127.3.2.1:0"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:80"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:50051"));
  EXPECT_TRUE(IsLoopbackAddress("unix:/tmp/sock"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:50051"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:50051"));
  EXPECT_FALSE(IsLoopbackAddress("10.1.2.3:50051"));
  EXPECT_FALSE(IsLoopbackAddress("grader.svc:50051"));
}

TEST(ListenPolicyTest, RefusesAnOpenNonLoopbackPort) {
  EXPECT_THAT(CheckListenPolicy("0.0.0.0:50051", {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("refusing to serve 0.0.0.0:50051 without authentication")));
  EXPECT_TRUE(CheckListenPolicy("127.0.0.1:50051", {}).ok());
  ServerSecurityOptions insecure;
  insecure.allow_insecure = true;
  EXPECT_TRUE(CheckListenPolicy("0.0.0.0:50051", insecure).ok());
  ServerSecurityOptions with_token;
  with_token.tokens = *BearerTokens::FromList({kToken});
  EXPECT_TRUE(CheckListenPolicy("0.0.0.0:50051", with_token).ok());
}

TEST(ListenPolicyTest, RejectsHalfATlsPair) {
  ServerSecurityOptions options;
  options.tls_cert_file = "/x/cert.pem";
  EXPECT_THAT(ValidateServerSecurity(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--tls-cert-file and --tls-key-file go together")));
  ServerSecurityOptions ca_only;
  ca_only.tls_client_ca_file = "/x/ca.pem";
  EXPECT_THAT(ValidateServerSecurity(ca_only),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--tls-client-ca-file needs --tls-cert-file")));
}

TEST(ServerCredentialsTest, NamesAFileThatIsNotPem) {
  HB_ASSERT_OK_AND_ASSIGN(testing::TestPki pki, testing::MakeTestPki());
  ServerSecurityOptions options;
  options.tls_cert_file = pki.dir + "/san.ext";
  options.tls_key_file = pki.server_key;
  EXPECT_THAT(MakeServerCredentials(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(pki.dir + "/san.ext: not a PEM file")));
}

// GradeItem echoes the request id once the caller passes CheckGrpcCaller.
class EchoService final : public pb::Grader::CallbackService {
 public:
  explicit EchoService(const BearerTokens& tokens) : tokens_(tokens) {}
  grpc::ServerUnaryReactor* GradeItem(grpc::CallbackServerContext* context,
                                      const pb::GradeItemRequest* request,
                                      pb::GradeItemResponse* response) override {
    auto* reactor = context->DefaultReactor();
    absl::Status status = CheckGrpcCaller(*context, tokens_);
    if (status.ok()) response->set_request_id(request->request_id());
    reactor->Finish(ToGrpcStatus(status));
    return reactor;
  }

 private:
  const BearerTokens& tokens_;
};

class SecureServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto pki = testing::MakeTestPki();
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = new testing::TestPki(*pki);
  }

  void Start(ServerSecurityOptions options) {
    options_ = std::move(options);
    service_ = std::make_unique<EchoService>(options_.tokens);
    auto creds = MakeServerCredentials(options_);
    ASSERT_TRUE(creds.ok()) << creds.status();
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", *creds, &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }

  absl::Status Call(const ClientSecurityOptions& client) {
    HB_ASSIGN_OR_RETURN(ClientCredentials creds, MakeClientCredentials(client));
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    auto channel =
        grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port_), creds.channel, args);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    AttachCallerToken(context, creds.token);
    pb::GradeItemRequest request;
    request.set_request_id("r-1");
    pb::GradeItemResponse response;
    absl::Status status =
        FromGrpcStatus(pb::Grader::NewStub(channel)->GradeItem(&context, request, &response));
    if (status.ok()) {
      EXPECT_EQ(response.request_id(), "r-1");
    }
    return status;
  }

  std::string WriteTokenFile(const std::string& token) {
    std::string path = pki_->dir + "/client-token";
    std::ofstream(path) << token << "\n";
    return path;
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  static testing::TestPki* pki_;
  ServerSecurityOptions options_;
  std::unique_ptr<EchoService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

testing::TestPki* SecureServerTest::pki_ = nullptr;

TEST_F(SecureServerTest, TokenRequiredOnPlaintext) {
  ServerSecurityOptions options;
  options.tokens = *BearerTokens::FromList({kToken});
  Start(std::move(options));
  EXPECT_THAT(Call({}),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("missing credentials")));
  ClientSecurityOptions wrong;
  wrong.token_file = WriteTokenFile("ffffffffffffffffffffffffffffffff");
  EXPECT_THAT(Call(wrong), StatusIs(absl::StatusCode::kUnauthenticated,
                                    HasSubstr("bearer token is not accepted")));
  ClientSecurityOptions right;
  right.token_file = WriteTokenFile(kToken);
  EXPECT_TRUE(Call(right).ok());
}

TEST_F(SecureServerTest, HealthStaysOpenForProbes) {
  ServerSecurityOptions options;
  options.tokens = *BearerTokens::FromList({kToken});
  Start(std::move(options));
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials());
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status =
      grpc::health::v1::Health::NewStub(channel)->Check(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(SecureServerTest, TlsWithTheRightCa) {
  ServerSecurityOptions options;
  options.tls_cert_file = pki_->server_cert;
  options.tls_key_file = pki_->server_key;
  Start(std::move(options));
  ClientSecurityOptions client;
  client.tls_ca_file = pki_->ca_cert;
  EXPECT_TRUE(Call(client).ok());
  ClientSecurityOptions other;
  other.tls_ca_file = pki_->other_ca_cert;
  EXPECT_THAT(Call(other), StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
  EXPECT_THAT(Call({}), StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
}

TEST_F(SecureServerTest, MutualTlsRequiresAClientCertificate) {
  ServerSecurityOptions options;
  options.tls_cert_file = pki_->server_cert;
  options.tls_key_file = pki_->server_key;
  options.tls_client_ca_file = pki_->ca_cert;
  Start(std::move(options));
  ClientSecurityOptions no_cert;
  no_cert.tls_ca_file = pki_->ca_cert;
  EXPECT_THAT(Call(no_cert), StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
  ClientSecurityOptions with_cert = no_cert;
  with_cert.tls_cert_file = pki_->client_cert;
  with_cert.tls_key_file = pki_->client_key;
  EXPECT_TRUE(Call(with_cert).ok());
}

TEST(ClientCredentialsTest, RejectsHalfAClientPair) {
  ClientSecurityOptions options;
  options.tls_cert_file = "/x/client.pem";
  EXPECT_THAT(MakeClientCredentials(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--grader-tls-cert-file and --grader-tls-key-file go together")));
}

}  // namespace
}  // namespace hb
