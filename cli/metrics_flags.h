// The one Prometheus /metrics endpoint of every long-running binary (hb-grader, hb-env and
// hb-orchestrator's run, sample and meta-eval): the --metrics-listen flag and the exposer that
// serves a registry there.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cli/command_line.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

namespace hb::cli {

// --metrics-listen HOST:PORT into `listen`, which holds the binary's default on entry (empty:
// off).
void AddMetricsListenFlag(Command& command, std::string* listen);

// Serves `registry` on /metrics at `listen` and says where on stderr
// ("<log_name>: metrics on http://HOST:PORT/metrics", the bound port when `listen` asked for port
// 0); nullptr when `listen` is empty. kUnavailable naming the address when it cannot be bound.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> ServeMetrics(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry,
    const std::string& log_name = "");

}  // namespace hb::cli
