// OrsApi: the Open Reward Standard logic of hb-env, independent of HTTP: it turns request
// bodies (JSON text) into Environment calls and Environment answers into the JSON the ORS
// client expects. The transport (ors_http_server.h) only routes, checks sessions and maps the
// returned absl::Status to HTTP with the table in ors_wire.h.
//
// One environment (named by `env_name`, "healthbench" in hb-env) with one tool:
//   answer  input {"answer": string}: the agent's reply, graded as the next assistant turn.
// A task spec is {"prompt_id": <task id>, "split": <its split>, "tags": [<example tags>]}; it
// never carries the rubric. A spec given back to /create is resolved within its "split" (the
// same prompt_id may be in several splits, each with its own rubric); without one, a prompt_id
// that several splits hold is refused (kInvalidArgument listing them, see TaskRef). Splits are
// reported as {"name", "type"} with type "train"/"validation"/"test" for splits of those names and
// "validation" otherwise (as the reference server does).
//
// Error messages (codes per ors_wire.h):
//   malformed JSON             kInvalidArgument "malformed JSON request body at offset N: <why>"
//   wrong shape                kInvalidArgument "request body: field 'split' must be a string" ...
//   unknown split              kInvalidArgument "Invalid split: 'x' (splits: a, b)"
//   index outside the split    kInvalidArgument "Invalid index: 7 is outside split 'x' of 3 tasks"
//   unknown environment        kNotFound "unknown environment 'x'"
//   unknown task id            kNotFound, the Environment's message
//
// Thread-compatible: const methods only read the (thread-safe) Environment.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "environment/environment.h"

namespace hb::env {

// A parsed POST /{env}/call body.
struct OrsToolCall {
  std::string name;
  // Set when `name` is "answer" and the input is valid.
  std::optional<std::string> answer;
  // When set, the call never reaches the environment: this is its RunToolError message
  // (unknown tool, invalid input), as the reference answers inside the event stream.
  std::optional<std::string> tool_error;
  // Reconnect to this earlier call instead of starting one ("" = start a new call).
  std::string call_id;
};

class OrsApi {
 public:
  // `env` is not owned and must outlive the api.
  OrsApi(Environment& env, std::string env_name);

  const std::string& env_name() const { return env_name_; }
  // OK when `name` names this environment (case-insensitively, as the reference), else
  // kNotFound "unknown environment 'x'".
  absl::Status CheckEnvName(absl::string_view name) const;

  // GET /health, GET /list_environments, GET /{env}/splits, GET /{env}/tools and
  // /{env}/task_tools (no task-specific tools).
  static std::string Health();
  std::string ListEnvironments() const;
  std::string Splits() const;
  static std::string Tools();

  // POST /{env}/tasks {"split"} -> {"tasks": [spec...], "env_name"}.
  absl::StatusOr<std::string> Tasks(absl::string_view body) const;
  // POST /{env}/num_tasks {"split"} -> {"num_tasks": n}.
  absl::StatusOr<std::string> NumTasks(absl::string_view body) const;
  // POST /{env}/task {"split", "index"} -> {"task": spec}; a negative index counts from the end.
  absl::StatusOr<std::string> Task(absl::string_view body) const;
  // POST /{env}/task_range {"split", "start"?, "stop"?} -> {"tasks": [...]}, with Python slice
  // semantics (None, negative and out-of-range bounds are clamped, never an error).
  absl::StatusOr<std::string> TaskRange(absl::string_view body) const;

  // POST /create {"env_name"?, "task_spec"?: {"prompt_id", "split"?}, "split"?, "index"?,
  // "secrets"?}: the task the session is for, with its split always set. Exactly one of
  // task_spec and (split, index).
  absl::StatusOr<TaskRef> ResolveCreate(absl::string_view body) const;

  // GET /{env}/prompt: [{"type": "text", "text": <prompt_text>, "detail": null}].
  absl::StatusOr<std::string> Prompt(const TaskRef& task) const;

  // POST /{env}/call {"name", "input", "task_id"?}. kInvalidArgument only for a body that is
  // not a ToolCall; an unknown tool or bad input is an OrsToolCall with `tool_error`.
  static absl::StatusOr<OrsToolCall> ParseToolCall(absl::string_view body);

  // The RunToolOutput JSON of a finished call: {"ok": true, "output": {"blocks": [summary],
  // "metadata": {reward_clipped, points_met, points_possible, items}, "reward", "finished":
  // true}} for a graded reply, {"ok": false, "error": "<code>: <message>"} otherwise.
  static std::string RunToolOutput(const absl::StatusOr<SubmitResult>& result);
  static std::string RunToolError(absl::string_view message);

 private:
  // The number of tasks of `split`; kInvalidArgument "Invalid split: ..." when unknown.
  absl::StatusOr<int64_t> SplitSize(absl::string_view split) const;
  absl::StatusOr<TaskPrompt> TaskAtIndex(absl::string_view split, int64_t index) const;

  Environment& env_;
  const std::string env_name_;
};

}  // namespace hb::env
