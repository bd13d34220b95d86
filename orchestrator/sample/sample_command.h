// `hb-orchestrator sample`: one reply per task from a served policy model (any OpenAI-compatible
// chat-completions endpoint: vLLM, OpenAI, hb-llm-sim's policy route), written as a responses
// file that `run --responses` grades.
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
// seconds with the reason on stderr; 1 internal error.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/base/scheduler.h"
#include "common/retry/retry_policy.h"
#include "llm/endpoint_preflight.h"
#include "llm/llm_client.h"
#include "orchestrator/sample/policy_request.h"
#include "orchestrator/sample/policy_sampler.h"
#include "orchestrator/sample/sample_journal.h"

namespace hb {

inline constexpr int kSampleExitOk = 0;
inline constexpr int kSampleExitInternal = 1;
inline constexpr int kSampleExitUsage = 2;
inline constexpr int kSampleExitTasksFailed = 3;

struct SampleOptions {
  std::string dataset;
  // -1: every task; else the reference's --examples N selection (as `run`).
  int64_t examples = -1;
  // Of the selected tasks, sample those at positions p % shard_count == shard_index (as `run
  // --shard-index/--shard-count`, so each shard of a `run --policy` samples its own tasks).
  int shard_index = 0;
  int shard_count = 1;
  std::string out;
  // E.g. http://127.0.0.1:8000/v1; requests go to {base_url}/chat/completions.
  std::string policy_base_url;
  PolicyRequestSettings request;
  // Bearer token; never logged.
  std::string api_key;
  int max_in_flight = 64;
  bool adaptive_concurrency = true;
  RetryPolicy retry;
  absl::Duration attempt_timeout = absl::Seconds(300);
  // Timeout of the probe request (the first task, sent once without retries).
  absl::Duration probe_timeout = absl::Seconds(60);
  absl::Duration progress_interval = absl::Seconds(5);
  // Prefix of progress and summary lines on stderr ("sample" or "sample <checkpoint>").
  std::string log_name = "sample";
  // How errors name the flag that gave policy_base_url ("--policy-base-url"; `run`: "--policy
  // NAME").
  std::string endpoint_flag = "--policy-base-url";
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

// The sampler settings of `options` (in flight, adaptive, retries, attempt timeout, a seeded
// jitter source).
PolicySamplerOptions MakePolicySamplerOptions(const SampleOptions& options);

// The policy endpoint as PreflightEndpoint (llm/endpoint_preflight.h) checks it before the first
// request: options.endpoint_flag, and $POLICY_API_KEY or --policy-api-key-file for the key.
EndpointPreflight PolicyEndpoint(const SampleOptions& options);

// Makes sure the outputs (OUT, OUT.journal, OUT.failures.jsonl, OUT.summary.json) can be
// written before anything is sampled, and creates OUT's folder. kInvalidArgument when OUT (or
// one of the others) is a directory ("--out runs/ is a directory: sample writes one responses
// file there, e.g. --out runs/responses.jsonl"); kFailedPrecondition when its folder cannot be
// created or written (common/base/file.h MakeOutputDirs).
absl::Status PrepareSampleOutputs(const std::string& out);

// kFailedPrecondition when `content`, a reply of the policy, is a grader verdict (it parses as
// the grader's reply does: a JSON object with a boolean "criteria_met",
// common/grading/grader_reply.h): the endpoint is a grader route, and grading its verdicts as
// answers would score nothing. The message names the URL, options.endpoint_flag and the fix.
// `sample` stops at the first such reply (journaling none); `run --policy` stops when the probe
// gets one and fails the task for any later one.
absl::Status CheckNotGraderVerdict(const SampleOptions& options, absl::string_view content);

// The probe: `body` sent alone through `llm`, waited for (timeout: the smaller of
// probe_timeout and attempt_timeout), so a misconfiguration fails in seconds.
absl::StatusOr<ChatResult> ProbePolicy(LlmClient& llm, const SampleOptions& options,
                                       const std::string& body);

// The probe's verdict on the configuration: kFailedPrecondition "probe request to URL failed:
// ... (<what to check>)" for a failure no retry can fix (unreachable, 400/401/403/404); OK for
// a transient one (the task is then sampled again like any other).
absl::Status PolicyProbeError(const SampleOptions& options, const absl::Status& status);

// A policy reply as written to the responses file (the model as reported, else as requested).
SampledReply ToSampledReply(const std::string& prompt_id, const SampleOptions& options,
                            ChatResult result);

// The whole command: PreflightEndpoint(PolicyEndpoint), a libcurl client for the policy,
// SampleToFile, and the exit code.
int RunSample(const SampleOptions& options);

}  // namespace hb
