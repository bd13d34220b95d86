#include "cli/server_flags.h"

#include <exception>

#include "absl/strings/str_cat.h"

namespace hb::cli {

void AddServerFlags(Command& command, ServerFlags* flags) {
  command.Flag("metrics-listen", &flags->metrics_listen, "HOST:PORT",
               "Prometheus /metrics listen address; empty disables it");
  command.Flag("drain-timeout", &flags->drain_timeout, "DURATION",
               "on SIGTERM/SIGINT, how long RPCs in progress may finish before they are "
               "cancelled");
  command.Flag("log-level", &flags->log_level, "LEVEL", "debug, info, warn or error");
  command.Bool(
      "reflection", &flags->reflection,
      "serve gRPC server reflection (grpc.reflection.v1 and v1alpha), which lists the services "
      "to any client");
  command.Flag("max-concurrent-rpcs", &flags->max_concurrent_rpcs, "N",
               "RPCs in progress at once; more are refused with RESOURCE_EXHAUSTED and a retry "
               "delay (0: no limit)");
  command.Flag("default-deadline", &flags->default_deadline, "DURATION",
               "deadline of an RPC whose client set none; past it DEADLINE_EXCEEDED");
  AddServerSecurityFlags(command, &flags->security);
}

absl::Status CheckServerFlags(const ServerFlags& flags) {
  if (flags.max_concurrent_rpcs < 0) {
    return absl::InvalidArgumentError("--max-concurrent-rpcs must be >= 0 (0: no limit)");
  }
  if (flags.default_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--default-deadline must be positive");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<prometheus::Exposer>> ServeMetrics(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry) {
  if (listen.empty()) return nullptr;
  std::unique_ptr<prometheus::Exposer> exposer;
  try {  // civetweb reports bind failures by throwing
    exposer = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", listen, ": ", e.what(),
        " Is the port taken (by another server on this host)? Give a free one with "
        "--metrics-listen=HOST:PORT (port 0 picks one), or --metrics-listen= to turn metrics off"));
  }
  exposer->RegisterCollectable(registry);
  return exposer;
}

}  // namespace hb::cli
