// RunMetrics: what a grading or sampling job reports to its operator's metrics (hb-orchestrator
// run, meta-eval, sample; watch). The orchestrator's own seam, like llm/llm_metrics.h: the
// dispatcher and the progress reporter call it, the command layer implements it with Prometheus
// series (orchestrator/commands/orchestrator_metrics.h) and injects it through RunOptions /
// SampleOptions; without --metrics-listen nothing is passed (nullptr).
//
// Every method is thread-safe and cheap (called once per row event).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "orchestrator/report/progress.h"

namespace hb {

class RunMetrics {
 public:
  virtual ~RunMetrics() = default;

  // `rows` rows were given to the dispatcher to grade (rows already in the journal excluded).
  virtual void RowsPlanned(int64_t rows) = 0;
  // A row was committed to the journal: graded (`code` OK; `from_cache` when the grader's
  // verdict cache answered it) or failed for good with `code`.
  virtual void RowRecorded(absl::StatusCode code, bool from_cache) = 0;
  // A row failed with the retryable `code` and will be sent again.
  virtual void RowRetried(absl::StatusCode code) = 0;
  // A reply reported upstream 429s (DispatchStats::rate_limited_replies).
  virtual void RateLimited() = 0;
  // Tokens spent upstream (verdict-cache hits excluded); the implementation prices them.
  virtual void TokensSpent(int64_t prompt, int64_t cached, int64_t completion) = 0;
  // The gauges of one progress line: rows in the job and done, in flight, window, pacing,
  // sampling progress, ETA. Called on every progress report, also with --progress off.
  virtual void Progress(const ProgressSnapshot& snapshot) = 0;
};

}  // namespace hb
