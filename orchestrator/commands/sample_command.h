// `hb-orchestrator sample`: one reply per task from a served policy model (any OpenAI-compatible
// chat-completions endpoint: vLLM, OpenAI, hb-llm-sim's policy route), written as a responses
// file that `run --responses` grades. The sampling is the engine `run --policy` uses too
// (orchestrator/policy/policy_feed.h), journaled in OUT.journal.
//
// Outputs, beside OUT:
//   OUT                  the responses (FormatSampledReply lines), in task-selection order; only
//                        the tasks that got a reply
//   OUT.journal          the durable record of the replies so far (sample_journal.h); running
//                        the same command again asks only for the tasks it lacks
//   OUT.failures.jsonl   {prompt_id, attempts, reason} per task that exhausted its attempts
//   OUT.summary.json     counts (tasks, replies, from journal, failed, length-truncated, empty),
//                        tokens and wall time; also printed on stderr
//
// Exit codes: 0 every task has a reply; 3 some tasks failed (listed; run again to retry them);
// 2 configuration or input error, including the probe: the first task's request is sent once,
// not retried, alongside the others (within --max-in-flight), and its connection failure
// (unreachable URL), 400, 401, 403 or 404 (unknown model or wrong URL) stops the job within
// seconds with the reason on stderr; 1 internal error (common/base/exit_codes.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/base/scheduler.h"
#include "llm/llm_client.h"
#include "orchestrator/policy/policy_options.h"
#include "orchestrator/report/run_metrics.h"

namespace hb {

// The policy (PolicyOptions: endpoint, request settings, concurrency, retries) and the job.
struct SampleOptions : PolicyOptions {
  std::string dataset;
  // -1: every task; else the reference's --examples N selection (as `run`).
  int64_t examples = -1;
  // Of the selected tasks, sample those at positions p % shard_count == shard_index (as `run
  // --shard-index/--shard-count`, so each shard of a `run --policy` samples its own tasks).
  int shard_index = 0;
  int shard_count = 1;
  std::string out;
  absl::Duration progress_interval = absl::Seconds(5);
  // Given the sampling progress (tasks, sampled, in flight, window, ETA) with every progress
  // line; not owned, null: none (`--metrics-listen` off).
  RunMetrics* metrics = nullptr;
};

// kInvalidArgument naming the flag behind the first bad field.
absl::Status ValidateSampleOptions(const SampleOptions& options);

struct SampleSummary {
  int64_t tasks = 0;             // selected tasks
  int64_t replies = 0;           // tasks with a reply in OUT
  int64_t from_journal = 0;      // of which found in the journal at start
  int64_t failed = 0;            // tasks without a reply
  int64_t length_truncated = 0;  // finish_reason "length"
  int64_t empty = 0;             // empty content
  int64_t retries = 0;
  ChatUsage usage;  // replies received by this process
  absl::Duration elapsed;
};

// Samples through `llm` (its base URL is the policy's), retry timers on `scheduler`; both not
// owned. The outputs are checked first (PrepareSampleOutputs), before the dataset is read and
// anything is sent. Progress and the summary go to `log`. Errors: kInvalidArgument (options,
// dataset, --out a directory), kFailedPrecondition (--out not writable; probe: unreachable,
// 400/401/403/404, a grader verdict as reply; a journal of another job), kDataLoss / kInternal
// (journal, outputs). Failed tasks are not an error: see SampleSummary::failed.
absl::StatusOr<SampleSummary> SampleToFile(const SampleOptions& options, LlmClient& llm,
                                           Scheduler& scheduler, std::FILE* log);

// Makes sure the outputs (OUT, OUT.journal, OUT.failures.jsonl, OUT.summary.json) can be
// written before anything is sampled, and creates OUT's folder. kInvalidArgument when OUT (or
// one of the others) is a directory ("--out runs/ is a directory: sample writes one responses
// file there, e.g. --out runs/responses.jsonl"); kFailedPrecondition when its folder cannot be
// created or written (common/base/file.h MakeOutputDirs).
absl::Status PrepareSampleOutputs(const std::string& out);

// The whole command: PreflightEndpoint(PolicyEndpoint), a libcurl client for the policy,
// SampleToFile, and the exit code.
int RunSample(const SampleOptions& options);

}  // namespace hb
