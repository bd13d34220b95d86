// hb-grader: the HealthBench grader service (gRPC). See grader_server.h.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "common/base/flags_usage.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "grader_service/grader_flags.h"
#include "grader_service/grader_server.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051",
          "gRPC listen address (host:port; port 0 picks one)");
ABSL_FLAG(std::string, metrics_listen, "0.0.0.0:9464",
          "Prometheus /metrics listen address; empty disables it");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(30),
          "On SIGTERM/SIGINT, how long RPCs in progress may finish before they are cancelled");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warn or error");
ABSL_FLAG(bool, reflection, false,
          "Serve gRPC server reflection (grpc.reflection.v1alpha), which lists the services to "
          "any client");

namespace {

constexpr char kUsage[] = R"(the HealthBench grader service.

Serves healthbench.grader.v1.Grader over gRPC (plus grpc.health.v1.Health, and server
reflection with --reflection). Each GradeItem grades one (conversation, reply, rubric item) with an LLM grader
through an OpenAI-compatible chat-completions endpoint, using the reference's prompt and reply
parsing; GradeReply grades a whole rubric concurrently and returns the task score. Upstream
calls share keep-alive connections on one libcurl event loop, with bounded retries (exponential
backoff with full jitter, Retry-After honoured) for connection errors, timeouts, 408/409/429/5xx
and malformed grader replies. 400/401/403/404 are never retried.

Flags may be written with dashes or underscores (--llm-base-url or --llm_base_url).
The API key is read from --llm-api-key-file or $OPENAI_API_KEY and is never logged.
SIGTERM/SIGINT: report NOT_SERVING, drain for --drain-timeout, exit 0.

Usage: hb-grader [--listen=0.0.0.0:50051] [--llm-base-url=URL] [--grader-template=PATH] ...)";

}  // namespace

int main(int argc, char** argv) {
  hb::TuneProcess();
  hb::ParseFlags(argc, argv, kUsage);
  hb::InitLogging(absl::GetFlag(FLAGS_log_level).c_str());

  // Block the shutdown signals in every thread; main waits for them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<hb::GraderServerOptions> options = hb::GraderServerOptionsFromFlags();
  if (!options.ok()) {
    HB_LOG_ERROR("hb-grader: {}", options.status().ToString());
    return 2;
  }
  options->listen_address = absl::GetFlag(FLAGS_listen);
  options->reflection = absl::GetFlag(FLAGS_reflection);
  options->registry = std::make_shared<prometheus::Registry>();

  std::unique_ptr<prometheus::Exposer> exposer;
  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (!metrics_listen.empty()) {
    try {  // civetweb reports bind failures by throwing
      exposer = std::make_unique<prometheus::Exposer>(metrics_listen);
    } catch (const std::exception& e) {
      HB_LOG_ERROR("hb-grader: cannot serve metrics on {}: {}", metrics_listen, e.what());
      return 1;
    }
    exposer->RegisterCollectable(options->registry);
  }

  absl::StatusOr<std::unique_ptr<hb::GraderServer>> server = hb::GraderServer::Start(*options);
  if (!server.ok()) {
    HB_LOG_ERROR("hb-grader: {}", server.status().ToString());
    return 1;
  }
  std::printf("listening on %s:%d\n",
              options->listen_address.substr(0, options->listen_address.rfind(':')).c_str(),
              (*server)->port());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  HB_LOG_INFO("hb-grader: signal {} received", signal_number);
  (*server)->Shutdown(absl::GetFlag(FLAGS_drain_timeout));
  (*server)->Wait();
  server->reset();
  return 0;
}
