#include "grader_service/grader_server.h"

#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/healthbench/prompts.h"
#include "http/curl_http_client.h"
#include "grader_service/grader_service_impl.h"
#include "llm/openai_llm_client.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace hb {

absl::StatusOr<std::unique_ptr<GraderServer>> GraderServer::Start(
    const GraderServerOptions& options) {
  HB_ASSIGN_OR_RETURN(
      GraderTemplate grader_template,
      GraderTemplate::Load(options.template_path, options.require_reference_template));
  std::unique_ptr<GraderServer> server(new GraderServer());
  server->registry_ =
      options.registry != nullptr ? options.registry : std::make_shared<prometheus::Registry>();
  server->metrics_ = std::make_unique<GraderMetrics>(*server->registry_);

  CurlHttpClientOptions http_options;
  http_options.max_in_flight = options.llm.max_upstream_in_flight;
  http_options.verify_tls = options.llm.verify_tls;
  http_options.ca_file = options.llm.ca_file;
  HB_ASSIGN_OR_RETURN(server->http_, CurlMultiHttpClient::Create(http_options));

  OpenAiLlmClientOptions llm_options;
  llm_options.base_url = options.llm.base_url;
  llm_options.api_key = options.llm.api_key;
  llm_options.metrics = server->metrics_.get();
  server->llm_ = std::make_unique<OpenAiLlmClient>(*server->http_, llm_options);

  GraderConfig config;
  config.settings = options.settings;
  config.retry = options.retry;
  config.limits = options.limits;
  config.attempt_timeout = options.llm.attempt_timeout;
  auto bitgen = std::make_shared<absl::BitGen>();
  server->grader_ = std::make_unique<hb::Grader>(
      *server->llm_, *server->http_, Clock::Real(),
      [bitgen] { return absl::Uniform(absl::IntervalClosed, *bitgen, 0.0, 1.0); },
      std::move(grader_template), config, server->metrics_.get());
  server->service_ =
      std::make_unique<GraderServiceImpl>(*server->grader_, Clock::Real(), server->metrics_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, grpc::InsecureServerCredentials(),
                           &server->port_);
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("grader: could not listen on ", options.listen_address));
  }
  server->server_->GetHealthCheckService()->SetServingStatus(true);
  HB_LOG_INFO("grader: listening on port {} (upstream {}, model {})", server->port_,
              server->llm_->url(), options.settings.model);
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

GraderServer::~GraderServer() {
  if (server_ != nullptr) {
    Shutdown(absl::ZeroDuration());
    server_->Wait();
  }
  // Order matters: the server before the service, the grader before the clients.
  server_.reset();
  service_.reset();
  http_.reset();  // completes anything left with kCancelled
  grader_.reset();
  llm_.reset();
}

}  // namespace hb
