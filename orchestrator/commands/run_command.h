// `hb-orchestrator run`: the grading job of orchestrator/run/grading_job.h (RunGrading) as a
// command, with the signal handling and the exit code.
//
// Exit codes (also in the usage text):
//   0  every planned row was graded
//   3  some rows failed after their attempts; their tasks are reported as not graded. Running
//      again retries exactly those rows. Also: some tasks have no response (the reports are
//      marked incomplete), unless allow_partial_responses.
//   2  bad usage or bad input (flags, dataset, responses, template, a journal from another
//      run, grader replicas that disagree on their settings): retrying cannot help, so a
//      Kubernetes podFailurePolicy should not retry it.
//   4  interrupted by SIGTERM/SIGINT: in-flight rows drained (up to --drain-timeout), the
//      journal flushed, partial reports written and marked incomplete.
//   1  internal error (journal write failure, grader could not start, ...).
#pragma once

#include "orchestrator/run/grading_job.h"

namespace hb {

// Grades `options` (valid) with RunGrading and returns the exit code above. Handles
// SIGTERM/SIGINT for its duration (StopSignals): the first drains in-flight rows for
// drain_timeout, a second exits at once. A run refused before it wrote anything leaves no
// output folder behind; its error is one line on stderr. Prints the banner of declared
// simulated verdicts first (PrintDeclaredSimulatedBanner).
int RunWithOptions(const RunOptions& options);

}  // namespace hb
