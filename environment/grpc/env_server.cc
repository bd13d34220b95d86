#include "environment/grpc/env_server.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/rpc/malformed_request.h"
#include "common/rpc/server_reflection.h"
#include "common/rpc/server_transport.h"
#include "environment/grpc/env_service.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace hb::env {

int ReceiveLimitFor(size_t max_reply_bytes) {
  const size_t bytes =
      std::max<size_t>(16 << 20, 2 * std::min<size_t>(max_reply_bytes, 1 << 29) + (1 << 20));
  return static_cast<int>(std::min<size_t>(bytes, 1 << 30));
}

constexpr char kServiceName[] = "healthbench.env.v1.Environment";

absl::StatusOr<std::unique_ptr<EnvGrpcServer>> EnvGrpcServer::Start(
    Environment& env, const EnvServerOptions& options) {
  HB_RETURN_IF_ERROR(CheckListenPolicy(options.listen_address, options.security));
  HB_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                      MakeServerCredentials(options.security));
  std::unique_ptr<EnvGrpcServer> server(new EnvGrpcServer());
  server->options_ = options;
  server->service_ = std::make_unique<EnvServiceImpl>(env, server->options_.security.tokens,
                                                      server->options_.service);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.SetOption(ReflectionOption(options.reflection));
  ConfigureServerTransport(builder, options.max_receive_message_bytes);
  builder.AddListeningPort(options.listen_address, credentials, &server->port_);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<MalformedRequestInterceptorFactory>(
      "env", server->service_->refused_log(),
      [tokens = &server->options_.security.tokens](absl::string_view authorization) {
        return CheckGrpcAuthorization(*tokens, authorization);
      }));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("env: could not listen on ", options.listen_address));
  }
  grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService();
  health->SetServingStatus(true);
  health->SetServingStatus(kServiceName, true);
  return server;
}

void EnvGrpcServer::Shutdown(absl::Duration drain) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  server_->GetHealthCheckService()->SetServingStatus(false);
  server_->Shutdown(absl::ToChronoTime(absl::Now() + drain));
}

EnvGrpcServer::~EnvGrpcServer() {
  if (server_ != nullptr) {
    Shutdown(absl::ZeroDuration());
    server_->Wait();
  }
  server_.reset();
  service_.reset();
}

}  // namespace hb::env
