// `hb-orchestrator watch`: grades each checkpoint of a training run as it lands. DIR/<name>/
// holds responses.jsonl (or .gz) once the trainer has written the ready marker (DIR/<name>/DONE);
// each ready version is graded exactly once by run's grading core (RunGrading: the same grader,
// journal, reports and exit codes as `run`) into OUT/versions/<name>/v<N>/, OUT/<name> points at
// the newest report, and OUT/comparison.{json,html} is rewritten over every checkpoint with a
// report, in natural step order. State: OUT/watch.jsonl (orchestrator/watch/watch_journal.h);
// the logic: orchestrator/watch/checkpoint_watcher.h. One watcher per OUT (OUT/.lock).
//
// Exit codes: 2 bad usage, or OUT already has a watcher or run (the reason on stderr); 1
// internal error (the watch journal cannot be written). Without --once: 0 after SIGTERM/SIGINT
// (the checkpoint in flight drains its rows, journals them and resumes at the next start).
// With --once: run's codes over the checkpoints graded (0 all graded, 3 some not done, 4
// interrupted, 2 / 1 as run).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "orchestrator/run/grading_job.h"

namespace hb {

class OrchestratorMetrics;  // orchestrator/commands/orchestrator_metrics.h

struct WatchOptions {
  // The grading settings, as `run` takes them; `out` is OUT. Its checkpoints, policies and
  // sharding are unused (each version is graded as one checkpoint).
  RunOptions run;
  std::string checkpoints_dir;
  std::string ready_marker = "DONE";
  absl::Duration poll_interval = absl::Seconds(30);
  bool once = false;
  // --metrics-listen's series (not owned; none when null): each checkpoint that finishes counts
  // in hb_orchestrator_checkpoints_total as "graded" (exit 0) or "failed" (an interrupted one
  // counts in neither); its rows count through `run.metrics` as run's do.
  OrchestratorMetrics* metrics = nullptr;
};

// kInvalidArgument naming the flag (--checkpoints-dir, --ready-marker, --poll-interval, and
// run's grading flags as ValidateRunOptions checks them).
absl::Status ValidateWatchOptions(const WatchOptions& options);

// Runs the watcher until SIGTERM/SIGINT (or, with --once, one pass); returns the exit code.
int RunWatch(const WatchOptions& options);

}  // namespace hb
