// Trainer protocols: the request and answer shapes of the RL trainers that post to a reward URL,
// as their own code sends and reads them (see docs/environment.md, "Training with hb-env rewards"),
// turned into (task id, reply) pairs for Environment::Submit and back. Logic only: no sockets, no
// Environment calls; the HTTP routes that use it live with the transport.
//
//   OpenRLHF  POST /get_reward  {"query": [str], "prompts": [str], "labels": [str]}
//             -> {"rewards": [float], "scores": [float], "extra_logs": {name: [float]}}
//             labels[i] is the task id; the reply is query[i] without its prompts[i] prefix.
//             An empty batch is valid (OpenRLHF posts one to every URL but the first).
//   slime     POST /reward  {"prompt": str | [message], "response": str, "label": str}
//             -> {"reward", "reward_clipped", "points_met", "points_possible", "task_id"}
//   NeMo-Gym  POST /verify  {<row fields>, "prompt_id" | "task_id": str,
//             "responses_create_params": {...}, "response": <Responses API object>}
//             -> the request echoed + "reward", "reward_clipped", "points_met",
//             "points_possible", "reward_components": {tag: score}; a judge failure is the echo +
//             "reward": 0.0, "_ng_failure_class": "judge_failed", "_ng_failure_judge_error".
//             The reply is the concatenated text of the "output_text" parts of the response's
//             "message" items (as the OpenAI SDK's Response.output_text).
//             POST /aggregate_metrics {"verify_responses": [...]} -> {"group_level_metrics",
//             "agent_metrics", "key_metrics"} with NeMo-Gym's "mean/<field>" names.
//
// Every reply has trailing end-of-turn tokens removed (StripSuffixes: any of `strip_suffixes`,
// repeatedly, so "<|im_end|><|endoftext|>" goes too).
//
// Errors (all kInvalidArgument; the message names the field, the sample index and the task):
//   "request body: malformed JSON at offset N: <why>", "request body must be a JSON object",
//   "request body: field 'query' must be an array of strings",
//   "request body: 'query', 'prompts' and 'labels' must have the same length (got 3, 3, 2)",
//   "request body: labels[1] must be a task id (a non-empty string)",
//   "query[1] (task 'abc') does not start with prompts[1]: they differ at byte 57 ..."
//
// Thread-safety: free functions and value types; no shared state.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "environment/environment.h"

namespace hb::env {

// One reply to grade.
struct TrainerSample {
  std::string task_id;
  std::string reply;
};

struct TrainerProtocolOptions {
  // End-of-turn tokens stripped from the end of every reply (hb-env's --strip-suffix).
  std::vector<std::string> strip_suffixes = {"<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>",
                                             "<|end|>"};
};

// `reply` without trailing `suffixes`, removed repeatedly until none matches. Empty suffixes are
// ignored.
absl::string_view StripSuffixes(absl::string_view reply, const std::vector<std::string>& suffixes);

// True for the statuses of a reply that could not be graded (Environment::Submit's
// kUnavailable, kDeadlineExceeded, kFailedPrecondition): NeMo-Gym's "judge_failed".
bool IsJudgeFailure(const absl::Status& status);

// --- OpenRLHF ------------------------------------------------------------------------------

absl::StatusOr<std::vector<TrainerSample>> ParseOpenRlhfRequest(
    absl::string_view body, const TrainerProtocolOptions& options);

// The answer for `results` (in request order): rewards unclipped, scores clipped to [0, 1],
// extra_logs {"points_met", "points_possible"}.
std::string FormatOpenRlhfAnswer(const std::vector<SubmitResult>& results);

// --- slime ---------------------------------------------------------------------------------

absl::StatusOr<TrainerSample> ParseSlimeRequest(absl::string_view body,
                                                const TrainerProtocolOptions& options);
std::string FormatSlimeAnswer(const SubmitResult& result);

// --- NeMo-Gym ------------------------------------------------------------------------------

// A parsed /verify body: the sample and the body itself, echoed in the answer.
struct NemoGymVerifyRequest {
  TrainerSample sample;
  std::string body;
};

absl::StatusOr<NemoGymVerifyRequest> ParseNemoGymVerify(absl::string_view body,
                                                        const TrainerProtocolOptions& options);

// The echo plus the result's fields (request fields of the same names are replaced).
std::string FormatNemoGymVerifyAnswer(const NemoGymVerifyRequest& request,
                                      const SubmitResult& result);
// The echo plus NeMo-Gym's judge-failure marker, for a status IsJudgeFailure() accepts.
std::string FormatNemoGymJudgeFailure(const NemoGymVerifyRequest& request,
                                      const absl::Status& status);

// POST /aggregate_metrics: the mean, min and max of "reward", "reward_clipped", "points_met" and
// "points_possible" over the verify responses (rows with "_ng_failure_class" left out, as
// NeMo-Gym's collection does), the mean of each "theme:" component over the rows that have it, and
// per "_ng_task_index" the same means. key_metrics holds the agent-level "mean/..." entries.
absl::StatusOr<std::string> NemoGymAggregateMetrics(absl::string_view body);

}  // namespace hb::env
