#include "cli/metrics_flags.h"

#include <cstdio>
#include <exception>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/host_port.h"
#include "common/base/process.h"

namespace hb::cli {
void AddMetricsListenFlag(Command& command, std::string* listen) {
  command.Flag("metrics-listen", listen, "HOST:PORT",
               "Prometheus /metrics listen address (port 0 picks one, printed on stderr); "
               "empty disables it");
}

absl::StatusOr<std::unique_ptr<prometheus::Exposer>> ServeMetrics(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry,
    const std::string& log_name) {
  if (listen.empty()) return nullptr;
  std::unique_ptr<prometheus::Exposer> exposer;
  try {  // civetweb reports bind failures by throwing
    // Its threads start with SIGTERM/SIGINT blocked: run and watch take them with a StopSignals
    // made after this (to drain); a server thread taking one would end the process instead.
    StopSignalsBlockedInScope blocked;
    exposer = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", listen, ": ", e.what(),
        " Is the port taken (by another server on this host)? Give a free one with "
        "--metrics-listen=HOST:PORT (port 0 picks one), or --metrics-listen= to turn metrics off"));
  }
  exposer->RegisterCollectable(registry);
  const std::vector<int> ports = exposer->GetListeningPorts();
  if (!log_name.empty() && !ports.empty()) {
    std::fprintf(stderr, "%s: metrics on http://%s:%d/metrics\n", log_name.c_str(),
                 std::string(HostPartOf(listen)).c_str(), ports.front());
  }
  return exposer;
}

}  // namespace hb::cli
