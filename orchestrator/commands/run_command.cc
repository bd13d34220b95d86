#include "orchestrator/commands/run_command.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "common/base/exit_codes.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "orchestrator/run/output_lock.h"
#include "orchestrator/run/stop_switch.h"

namespace hb {

int RunWithOptions(const RunOptions& options) {
  if (options.simulated_verdicts) PrintDeclaredSimulatedBanner(options);
  // Before any thread starts (the journal's writer, gRPC's pollers): a SIGTERM must reach the
  // watcher, never a thread whose default action would kill the process.
  StopSwitch stop;
  StopSignals signals([&](int signal, int count) {
    if (count == 1) {
      HB_LOG_WARN("{} received: stopping (in-flight rows get {} to finish)", SignalName(signal),
                  absl::FormatDuration(options.drain_timeout));
      stop.Request();
    } else {
      HB_LOG_WARN("second signal: exiting at once (committed rows are kept in the journal)");
      std::_Exit(kExitInterrupted);
    }
  });
  const NewOutputDirs new_dirs(options.RunDir());
  absl::StatusOr<int> code = RunGrading(options, stop);
  if (!code.ok()) {
    new_dirs.RemoveIfUnused();  // a run refused before writing anything leaves no folder
    std::fprintf(stderr, "hb-orchestrator run: %s\n",
                 absl::StrReplaceAll(code.status().message(), {{"\n", " "}}).c_str());
    return ExitCodeFor(code.status());
  }
  return *code;
}

}  // namespace hb
