// Progress reporting of a run: a pure formatter (unit-tested) and a reporter that draws it on
// stderr, as a live line redrawn with '\r' on a terminal or as a log line otherwise.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "llm/token_prices.h"

namespace hb {

class RunMetrics;  // orchestrator/report/run_metrics.h

// What one progress line shows.
struct ProgressSnapshot {
  // Rows of the run in total (including rows already in the journal) and rows recorded so far
  // (ok or failed, including those from the journal).
  int64_t total_rows = 0;
  int64_t done_rows = 0;
  // Rows recorded by this process (the rate is computed from these).
  int64_t done_this_run = 0;
  int64_t failed_rows = 0;
  int64_t retries = 0;
  int64_t in_flight = 0;
  // The adaptive window and pacing rate (calls/s); 0 when not adaptive / not pacing.
  int64_t window = 0;
  double paced_rate = 0;
  int64_t prompt_tokens = 0;  // includes cached
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  // Rows answered from the grader's verdict cache (their tokens are not in the counts above).
  int64_t from_cache_rows = 0;
  absl::Duration elapsed;
  bool stopping = false;
  // run --policy: tasks x policy checkpoints to sample (0: no sampling), those with a reply or
  // failed for good (journaled replies of earlier runs included), and policy calls in flight.
  int64_t sample_total = 0;
  int64_t sampled = 0;
  int64_t sampling_in_flight = 0;
};

// Estimated spend: uncached input, cached input and output tokens at `prices`.
double EstimatedCostUsd(const ProgressSnapshot& snapshot, const TokenPrices& prices);

// The time left at this process's row rate (rows recorded by this process over elapsed), for
// the rows of the job not done yet; std::nullopt before the first row.
std::optional<absl::Duration> EstimatedTimeLeft(const ProgressSnapshot& snapshot);

// One line, no trailing newline, e.g.
//   "rows 1200/5000 (24.0%) | 40.0 rows/s | ETA 1m35s | in flight 512 | retries 3 |
//    failed 1 | tokens in 1.25M (cached 800.0k) out 45.6k | est. $1.23"
// (one line). With an adaptive window, "in flight 20" reads "in flight 20 (window 44)", or
// "in flight 20 (window 44, paced 100.0/s)" while pacing. Before the first row the rate and ETA
// print as "-". With verdict-cache hits, " | from cache N" follows the cost. When stopping, the
// line ends with " | stopping: draining in-flight rows". While policies are sampled
// (sample_total > 0) the line starts with "sampled 120/5000 (64 in flight) | " and the rows
// read "graded rows 1200/5000 (24.0%)".
std::string FormatProgressLine(const ProgressSnapshot& snapshot, const TokenPrices& prices);

// Token counts: "950", "45.6k", "1.25M", "3.40B".
std::string FormatTokenCount(int64_t tokens);
// Durations for the ETA: "42s", "1m35s", "2h03m".
std::string FormatEta(absl::Duration d);

enum class ProgressMode { kAuto, kTty, kLog, kOff };

// Parses "auto" | "tty" | "log" | "off". kInvalidArgument otherwise.
bool ParseProgressMode(absl::string_view text, ProgressMode* mode, std::string* error);

// Draws progress lines to `out` (not owned). kTty redraws one line ("\r" + line + clear to end
// of line) and ends it with "\n" on Finish; kLog writes "progress: <line>\n" per report;
// kOff writes nothing; kAuto means kTty when `out` is a terminal, else kLog. Every report also
// goes to `metrics` (not owned; may be null), whatever the mode. Not thread-safe: call from one
// thread (the dispatcher's on_progress runs on Run's thread).
class ProgressReporter {
 public:
  ProgressReporter(ProgressMode mode, FILE* out, TokenPrices prices, RunMetrics* metrics = nullptr);
  void Report(const ProgressSnapshot& snapshot);
  // Ends a live line.
  void Finish();
  ProgressMode mode() const { return mode_; }

 private:
  ProgressMode mode_;
  FILE* out_;
  TokenPrices prices_;
  RunMetrics* metrics_;
  bool line_open_ = false;
};

}  // namespace hb
