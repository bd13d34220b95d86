#include "grader_service/grader_server.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/healthbench/prompts.h"
#include "common/rpc/malformed_request.h"
#include "common/rpc/server_reflection.h"
#include "common/rpc/server_transport.h"
#include "grader/grader_stack.h"
#include "grader_service/grader_service_impl.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/server_interceptor.h"

namespace hb {
namespace {

namespace grader_v1 = ::healthbench::grader::v1;

}  // namespace

absl::StatusOr<std::unique_ptr<GraderServer>> GraderServer::Start(
    const GraderServerOptions& options) {
  HB_RETURN_IF_ERROR(CheckListenPolicy(options.listen_address, options.security));
  HB_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                      MakeServerCredentials(options.security));
  std::unique_ptr<GraderServer> server(new GraderServer());
  server->tokens_ = options.security.tokens;
  server->registry_ =
      options.registry != nullptr ? options.registry : std::make_shared<prometheus::Registry>();
  GraderStackOptions stack_options = options;
  stack_options.registry = server->registry_;
  // The grading stack is the embedded grader's; this server only adds gRPC on top.
  HB_ASSIGN_OR_RETURN(server->stack_, GraderStack::Start(stack_options));
  server->completions_ = std::make_unique<ThreadScheduler>();
  GraderServiceOptions service_options;
  service_options.max_concurrent_rpcs = options.max_concurrent_rpcs;
  service_options.max_items_in_progress =
      options.max_upstream_queue <= 0
          ? 0
          : int64_t{options.llm.max_upstream_in_flight} + options.max_upstream_queue;
  service_options.default_deadline = options.default_deadline;
  service_options.completions = server->completions_.get();
  service_options.info = server->stack_->info();
  server->service_ = std::make_unique<GraderServiceImpl>(server->stack_->grader(), Clock::Real(),
                                                         &server->stack_->metrics(),
                                                         &server->tokens_, service_options);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, credentials, &server->port_);
  ConfigureServerTransport(builder, options.max_receive_message_bytes);
  builder.SetOption(ReflectionOption(options.reflection));
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<MalformedRequestInterceptorFactory>(
      "grader", server->service_->refused_log(),
      [tokens = &server->tokens_](absl::string_view auth) {
        return CheckGrpcAuthorization(*tokens, auth);
      }));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("grader: could not listen on ", options.listen_address,
                     ": the address is in use (another hb-grader?) or cannot be bound"));
  }
  grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService();
  health->SetServingStatus(grader_v1::Grader::service_full_name(), true);
  health->SetServingStatus(true);
  HB_LOG_INFO("grader: listening on port {} (upstream {}, model {})", server->port_,
              server->stack_->upstream_url(), options.settings.model);
  return server;
}

void GraderServer::Shutdown(absl::Duration drain) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  HB_LOG_INFO("grader: shutting down (drain {})", absl::FormatDuration(drain));
  server_->GetHealthCheckService()->SetServingStatus(false);
  // Stops accepting, waits for RPCs in progress until the deadline, then cancels them; the
  // reactors' OnCancel cancels their upstream calls, so this returns promptly.
  server_->Shutdown(absl::ToChronoTime(absl::Now() + drain));
  HB_LOG_INFO("grader: stopped");
}

void GraderServer::Wait() { server_->Wait(); }

GraderMetrics& GraderServer::metrics() { return stack_->metrics(); }

RateLimitedLog& GraderServer::refused_log() { return *service_->refused_log(); }

hb::Grader& GraderServer::grader() { return stack_->grader(); }

GraderServer::~GraderServer() {
  if (server_ != nullptr) {
    Shutdown(absl::ZeroDuration());
    server_->Wait();
  }
  // Order matters: the server before the service, the service before the grading stack.
  server_.reset();
  completions_.reset();  // after the server: RPCs done, nothing left to score
  service_.reset();
  stack_.reset();
}

}  // namespace hb
