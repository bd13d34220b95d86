#include "cli/server_flags.h"

namespace hb::cli {

void AddServerFlags(Command& command, ServerFlags* flags) {
  AddMetricsListenFlag(command, &flags->metrics_listen);
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

}  // namespace hb::cli
