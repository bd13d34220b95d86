// `hb-orchestrator run`: the grading job (one Kubernetes Job per checkpoint set). It plans the
// rows (task x rubric item) of every checkpoint, skips rows the journal already holds as
// graded, sends the rest to hb-grader replicas (or an in-process grader), journals every
// verdict in OUT/journal.sqlite, and writes each checkpoint's reports to OUT/<checkpoint>/
// (plus OUT/comparison.{json,html} for two or more checkpoints). Running it again with the same
// inputs grades only the rows that failed or are missing.
//
// Exit codes (also in the usage text):
//   0  every planned row was graded
//   3  some rows failed after their attempts; their tasks are reported as not graded. Running
//      again retries exactly those rows.
//   2  bad usage or bad input (flags, dataset, responses, template, a journal from another
//      run): retrying cannot help, so a Kubernetes podFailurePolicy should not retry it.
//   4  interrupted by SIGTERM/SIGINT: in-flight rows drained (up to --drain-timeout), the
//      journal flushed, partial reports written and marked incomplete.
//   1  internal error (journal write failure, grader could not start, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "orchestrator/run/progress.h"
#include "orchestrator/run/row_plan.h"

namespace hb {

inline constexpr int kRunExitOk = 0;
inline constexpr int kRunExitInternal = 1;
inline constexpr int kRunExitUsage = 2;
inline constexpr int kRunExitRowsFailed = 3;
inline constexpr int kRunExitInterrupted = 4;

// The usage text of `hb-orchestrator run` (every flag, the exit codes).
extern const char kRunUsage[];

// Everything `run` was asked to do, parsed and validated.
struct RunOptions {
  std::string dataset;
  // --prompt-cache-key=prompt_id: send each task's prompt_id as `prompt_cache_key`.
  bool send_prompt_cache_key = false;
  std::vector<CheckpointSpec> checkpoints;
  // Output folder as given; with --shard-count > 1 the run writes to <out>/shard-<index>.
  std::string out;
  // "embedded" or a gRPC target.
  std::string grader = "embedded";
  int max_in_flight = 512;
  // Adapt the in-flight window within [1, max_in_flight] and pace dispatch from the upstream
  // rate-limit signals (AdaptiveLimiter).
  bool adaptive_concurrency = true;
  int row_attempts = 3;
  absl::Duration row_timeout = absl::Seconds(300);
  int64_t examples = -1;
  uint32_t seed = 0;
  int shard_index = 0;
  int shard_count = 1;
  bool force_new = false;
  ProgressMode progress = ProgressMode::kAuto;
  absl::Duration progress_interval = absl::Seconds(5);
  absl::Duration drain_timeout = absl::Seconds(20);
  TokenPrices prices;
  bool simulated_verdicts = false;
  bool skip_invalid = false;

  // The folder this run writes (out, or out/shard-<index> when sharded).
  std::string RunDir() const;
};

// Parses the arguments after "run". Flags may be spelled --name=value, --name value,
// --bool / --nobool, with '-' or '_'. Run's own flags, the shared grader flags
// (--grader-template, --llm-*, ...: they go to the absl flags hb::grader_flags defines) and the
// flags below are accepted; anything else, a positional argument, a repeated single-valued
// flag or a bad value is kInvalidArgument naming the flag. --responses may be repeated and
// takes comma lists. --shard-index defaults to $JOB_COMPLETION_INDEX when set.
absl::StatusOr<RunOptions> ParseRunArgs(const std::vector<std::string>& args);

// Runs `options`; returns the exit code above. Installs SIGTERM/SIGINT handling for its
// duration (the signals are blocked in every thread and a watcher thread waits for them).
int RunWithOptions(const RunOptions& options);

// `hb-orchestrator run ARGS...`: ParseRunArgs then RunWithOptions. "--help" prints kRunUsage
// and returns 0; a parse error prints one line to stderr and returns 2.
int RunCommand(const std::vector<std::string>& args);

}  // namespace hb
