// The flags every server binary shares (hb-grader, hb-env): metrics listener, drain timeout,
// log level, reflection and the transport-security group (security_flags.h). The metrics
// endpoint itself is cli/metrics_flags.h (shared with hb-orchestrator).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/command_line.h"
#include "cli/metrics_flags.h"
#include "cli/security_flags.h"

namespace hb::cli {

struct ServerFlags {
  // Loopback by default: metrics are opened to a scraper on purpose (--metrics-listen).
  std::string metrics_listen;
  absl::Duration drain_timeout = absl::Seconds(30);
  std::string log_level = "info";
  bool reflection = false;
  // RPCs in progress at once; past it RESOURCE_EXHAUSTED with a retry delay (0: no limit).
  int max_concurrent_rpcs = 1024;
  // The deadline of an RPC whose client set none.
  absl::Duration default_deadline = absl::Minutes(10);
  ServerSecurityFlags security;
};

// --metrics-listen, --drain-timeout, --log-level, --reflection, --max-concurrent-rpcs,
// --default-deadline, then the security group.
// `flags->metrics_listen` holds the binary's default on entry.
void AddServerFlags(Command& command, ServerFlags* flags);

// kInvalidArgument naming the flag when --max-concurrent-rpcs is negative or --default-deadline
// is not positive (hb-grader checks them again in CompleteGraderServerOptions).
absl::Status CheckServerFlags(const ServerFlags& flags);

}  // namespace hb::cli
