// `run`'s reports (internal to grading_job.cc): each checkpoint's reports written from the
// journal (checkpoint_report.h) and the comparison of two or more, then what the run prints at
// its end (cost, the simulated banner, the most frequent failure reasons, what is left to do)
// and its exit code.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grader_client/grader_connection.h"
#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/run/grading_job.h"
#include "orchestrator/run/run_inputs.h"
#include "orchestrator/run/verdict_store.h"

namespace hb::run_internal {

// What the reports of a run found, over every checkpoint.
struct ReportTotals {
  int64_t failed_rows = 0;
  int64_t missing_rows = 0;
  // The failed rows' errors.
  std::vector<std::string> errors;
  // Per checkpoint, this run's tasks without a response (only when some lack one).
  std::vector<std::pair<std::string, int64_t>> without_response;
  // Over every checkpoint, as the reports give them.
  ReportUsage usage;
  // Each checkpoint's report, in the run's order.
  std::vector<CheckpointResult> results;
};

// Phase 5: writes each checkpoint's reports to RUN_DIR/<checkpoint>/ from the journal's rows of
// this run's tasks (marked incomplete when `interrupted` or tasks lack a response without
// allow_partial_responses), one line per checkpoint on stderr, and RUN_DIR/comparison.{json,html}
// for two or more. `wall_time`: of every run that wrote to the journal (this one included).
// `simulated_reason`: SimulatedReason, when options.simulated_verdicts. Errors: kInternal.
absl::StatusOr<ReportTotals> WriteReports(const RunOptions& options, const RunInputs& inputs,
                                          const GraderConnection& grader, VerdictStore& store,
                                          bool interrupted, absl::Duration wall_time,
                                          const std::string& simulated_reason);

// Why the run is simulated, as the reports say it (ReportContext::simulated_reason).
std::string SimulatedReason(bool detected);

// The banner of a simulated run: `detected` when a verdict came from hb-llm-sim (it says so in
// a response header), else declared by --simulated-verdicts. Names the endpoint actually called,
// never a simulator the run did not reach.
void PrintSimulatedBanner(const RunOptions& options, bool detected);

// The run's cost line: what the verdicts in the reports cost (across resumes), what the verdict
// cache saved, and the wall time (`wall_time` of every run, `this_run` of this one).
void PrintCostLine(const RunOptions& options, const ReportTotals& totals, absl::Duration wall_time,
                   absl::Duration this_run);

// The three most frequent failure reasons among `errors` (TopFailureReasons), if any.
void PrintTopFailureReasons(const std::vector<std::string>& errors);

// What is left to do, on stderr, and the exit code of a run whose reports are written:
// kExitInterrupted when `interrupted` (the missing rows and unsampled tasks a new run would
// do), kExitRowsFailed for failed or missing rows, tasks without a response (unless
// allow_partial_responses) or `unsampled` tasks a policy could not answer, else kExitOk.
int ExitCodeAfterReports(const RunOptions& options, const ReportTotals& totals, bool interrupted,
                         int64_t unsampled);

}  // namespace hb::run_internal
