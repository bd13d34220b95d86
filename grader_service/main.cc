// hb-grader: the HealthBench grader service (gRPC). See grader_server.h.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "cli/command_line.h"
#include "cli/grader_flags.h"
#include "cli/security_flags.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "grader_service/grader_server.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

namespace {

constexpr char kDescription[] = R"(hb-grader: the HealthBench grader service.

Serves healthbench.grader.v1.Grader over gRPC (plus grpc.health.v1.Health, and server
reflection with --reflection). Each GradeItem grades one (conversation, reply, rubric item) with an LLM grader
through an OpenAI-compatible chat-completions endpoint, using the reference's prompt and reply
parsing; GradeReply grades a whole rubric concurrently and returns the task score. Upstream
calls share keep-alive connections on one libcurl event loop, with bounded retries (exponential
backoff with full jitter, Retry-After honoured) for connection errors, timeouts, 408/409/429/5xx
and malformed grader replies. 400/401/403/404 are never retried.

Flags may be written with dashes or underscores (--llm-base-url or --llm_base_url).
The API key is read from --llm-api-key-file or $OPENAI_API_KEY and is never logged.
Callers authenticate with a bearer token from --auth-token-file (and/or a client certificate
with --tls-client-ca-file); health stays open for probes. A non-loopback --listen address
without either is refused unless --allow-insecure.
SIGTERM/SIGINT: report NOT_SERVING, drain for --drain-timeout, exit 0.)";

constexpr char kFooter[] =
    "Exit status: 0 after a signal and a drain, 2 on bad usage, 1 when the server cannot start.";

struct Flags {
  hb::cli::GraderFlags grader;
  hb::cli::ServerSecurityFlags security;
  std::string listen = "0.0.0.0:50051";
  std::string metrics_listen = "127.0.0.1:9464";
  absl::Duration drain_timeout = absl::Seconds(30);
  std::string log_level = "info";
  bool reflection = false;
};

void AddFlags(hb::cli::Command& command, Flags* flags) {
  command.Group("server");
  hb::cli::AddListenFlag(command, &flags->listen,
                         "gRPC listen address (port 0 picks one; the first stdout line is "
                         "'listening on HOST:PORT')");
  command.Flag("metrics-listen", &flags->metrics_listen, "HOST:PORT",
               "Prometheus /metrics listen address; empty disables it");
  command.Flag("drain-timeout", &flags->drain_timeout, "DURATION",
               "on SIGTERM/SIGINT, how long RPCs in progress may finish before they are "
               "cancelled");
  command.Flag("log-level", &flags->log_level, "LEVEL", "debug, info, warn or error");
  command.Bool("reflection", &flags->reflection,
               "serve gRPC server reflection (grpc.reflection.v1alpha), which lists the services "
               "to any client");
  hb::cli::AddServerSecurityFlags(command, &flags->security);
  hb::cli::AddGraderFlags(command, &flags->grader);
}

}  // namespace

int main(int argc, char** argv) {
  hb::TuneProcess();
  Flags flags;
  hb::cli::Program program("hb-grader", kDescription, kFooter);
  program.root().LastValueWins();
  AddFlags(program.root(), &flags);
  if (std::optional<int> exit_code = program.ParseOrExit(argc, argv)) return *exit_code;
  hb::InitLogging(flags.log_level.c_str());
  absl::StatusOr<hb::GraderServerOptions> options = hb::cli::ResolveGraderFlags(flags.grader);
  if (!options.ok()) return program.UsageError("", options.status());
  options->listen_address = flags.listen;
  options->reflection = flags.reflection;
  absl::StatusOr<hb::ServerSecurityOptions> security =
      hb::cli::ResolveServerSecurity(flags.security);
  if (!security.ok()) return program.UsageError("", security.status());
  options->security = *std::move(security);
  options->registry = std::make_shared<prometheus::Registry>();

  // Before any thread starts: the signals must reach the watcher only.
  hb::StopSignals signals;
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!flags.metrics_listen.empty()) {
    try {  // civetweb reports bind failures by throwing
      exposer = std::make_unique<prometheus::Exposer>(flags.metrics_listen);
    } catch (const std::exception& e) {
      HB_LOG_ERROR("hb-grader: cannot serve metrics on {}: {}", flags.metrics_listen, e.what());
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

  const int signal_number = signals.Wait();
  HB_LOG_INFO("hb-grader: {} received", hb::SignalName(signal_number));
  (*server)->Shutdown(flags.drain_timeout);
  (*server)->Wait();
  server->reset();
  return 0;
}
