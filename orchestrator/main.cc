// hb-orchestrator: grades model responses on HealthBench, in process or through hb-grader
// replicas (`run`), and the offline subcommands around it (`tasks`, `dry-run`, `score`,
// `merge`, ...). The command line is orchestrator/commands/orchestrator_cli.h.
#include "common/base/process.h"
#include "orchestrator/commands/orchestrator_cli.h"

int main(int argc, char** argv) {
  hb::TuneProcess();
  return hb::OrchestratorMain(argc, argv);
}
