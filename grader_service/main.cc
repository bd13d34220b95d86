// hb-grader: the HealthBench grader service (gRPC). See grader_server.h.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "cli/command_line.h"
#include "cli/grader_flags.h"
#include "cli/security_flags.h"
#include "cli/server_flags.h"
#include "common/base/exit_codes.h"
#include "common/base/host_port.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "common/base/status_macros.h"
#include "grader_service/grader_server.h"
#include "llm/endpoint_preflight.h"
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
An upstream that cannot be called (no API key for a remote https endpoint, a host that does
not resolve) is refused at start with exit status 2.
SIGTERM/SIGINT: report NOT_SERVING, drain for --drain-timeout, exit 0.)";

constexpr char kFooter[] =
    "Exit status: 0 after a signal and a drain, 2 on bad usage or an upstream without API key or "
    "address, 1 when the server cannot start.";

struct Flags {
  hb::cli::GraderFlags grader;
  hb::cli::ServerFlags server;
  std::string listen = "0.0.0.0:50051";
  int max_upstream_queue = hb::GraderServerOptions().max_upstream_queue;
};

void AddFlags(hb::cli::Command& command, Flags* flags) {
  command.Group("server");
  hb::cli::AddListenFlag(command, &flags->listen,
                         "gRPC listen address (port 0 picks one; the first stdout line is "
                         "'listening on HOST:PORT')");
  flags->server.metrics_listen = "127.0.0.1:9464";
  hb::cli::AddServerFlags(command, &flags->server);
  hb::cli::AddGraderFlags(command, &flags->grader);
  command.Flag("max-upstream-queue", &flags->max_upstream_queue, "N",
               "rubric items admitted beyond --max-upstream-in-flight, waiting for an upstream "
               "slot; a request that would queue more is refused with RESOURCE_EXHAUSTED and a "
               "retry delay (0: no limit)");
}

// The grader group, the server group and --listen as complete, validated options.
absl::StatusOr<hb::GraderServerOptions> ServerOptions(const Flags& flags) {
  hb::GraderServerOptions options;
  HB_ASSIGN_OR_RETURN(static_cast<hb::GraderStackOptions&>(options),
                      hb::cli::ResolveGraderFlags(flags.grader));
  options.listen_address = flags.listen;
  options.max_upstream_queue = flags.max_upstream_queue;
  options.max_concurrent_rpcs = flags.server.max_concurrent_rpcs;
  options.default_deadline = flags.server.default_deadline;
  options.reflection = flags.server.reflection;
  HB_ASSIGN_OR_RETURN(options.security, hb::cli::ResolveServerSecurity(flags.server.security));
  options.registry = std::make_shared<prometheus::Registry>();
  return hb::CompleteGraderServerOptions(std::move(options));
}

}  // namespace

int main(int argc, char** argv) {
  hb::TuneProcess();
  Flags flags;
  hb::cli::Program program("hb-grader", kDescription, kFooter);
  program.root().LastValueWins();
  AddFlags(program.root(), &flags);
  if (std::optional<int> exit_code = program.ParseOrExit(argc, argv)) return *exit_code;
  hb::InitLogging(flags.server.log_level.c_str());
  absl::StatusOr<hb::GraderServerOptions> options = ServerOptions(flags);
  if (!options.ok()) return program.UsageError("", options.status());

  // Before any thread starts: the signals must reach the watcher only.
  hb::StopSignals signals;
  // Before anything starts (after StopSignals: the resolver runs on a thread of its own): an
  // upstream that cannot be called (no key for a remote https endpoint, a host that does not
  // resolve) is refused within seconds, with the fix.
  if (absl::Status upstream =
          hb::PreflightEndpoint(hb::LlmEndpoint(options->llm, options->settings.headers));
      !upstream.ok()) {
    std::fprintf(stderr, "hb-grader: %s\n", hb::cli::OneLine(upstream).c_str());
    return hb::ExitCodeFor(upstream);
  }
  absl::StatusOr<std::unique_ptr<prometheus::Exposer>> exposer =
      hb::cli::ServeMetrics(flags.server.metrics_listen, options->registry, "hb-grader");
  if (!exposer.ok()) {
    HB_LOG_ERROR("hb-grader: {}", std::string(exposer.status().message()));
    return 1;
  }

  absl::StatusOr<std::unique_ptr<hb::GraderServer>> server = hb::GraderServer::Start(*options);
  if (!server.ok()) {
    HB_LOG_ERROR("hb-grader: {}", server.status().ToString());
    return hb::ExitCodeFor(server.status());
  }
  std::printf("listening on %s:%d\n", std::string(hb::HostPartOf(options->listen_address)).c_str(),
              (*server)->port());
  std::fflush(stdout);

  const int signal_number = signals.Wait();
  HB_LOG_INFO("hb-grader: {} received", hb::SignalName(signal_number));
  (*server)->Shutdown(flags.server.drain_timeout);
  (*server)->Wait();
  server->reset();
  return 0;
}
