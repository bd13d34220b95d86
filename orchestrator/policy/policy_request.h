// The chat-completions request `hb-orchestrator sample` sends to a policy (the model being
// graded) for one task, and the settings that shape it. One function builds the body, so the
// tests pin its exact bytes and the journal fingerprints exactly what was sent.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "common/healthbench/types.h"

namespace hb {

// How the task reaches the policy.
enum class PolicyInput {
  kMessages,    // the task's messages as a message list (what the reference sampler sends)
  kPromptText,  // one user message holding TaskPromptText(messages) (what hb-env shows)
};

// Parses "messages" | "prompt-text"; kInvalidArgument naming --policy-input otherwise.
absl::Status ParsePolicyInput(const std::string& text, PolicyInput* input);

// Everything that shapes a policy request. Unset optionals are not sent.
struct PolicyRequestSettings {
  std::string model;
  PolicyInput input = PolicyInput::kMessages;
  // Sent as a leading {"role":"system"} message (and recorded as the response's system_prompt)
  // when set.
  std::optional<std::string> system_prompt;
  std::optional<double> temperature;
  std::optional<int64_t> max_tokens;
  // A JSON object whose members are appended to the body, e.g. {"reasoning_effort":"low"};
  // empty: none.
  std::string extra_body;
};

// kInvalidArgument naming the flag: empty model, temperature outside [0, 2], max_tokens < 1,
// extra_body not a JSON object or one naming a key the body already has (model, messages,
// temperature, max_tokens).
absl::Status ValidatePolicyRequestSettings(const PolicyRequestSettings& settings);

// The body, compact, keys in this order: "model", "messages" ([system], then the task's
// messages or one user message with the prompt text), "temperature" (Python float repr) and
// "max_tokens" when set, then the extra_body members verbatim in their order. Settings must be
// valid.
std::string BuildPolicyRequestBody(const PolicyRequestSettings& settings,
                                   const std::vector<Message>& prompt);

// A stable text of every setting above (for the journal: a journal is only resumed by a run
// with the same fingerprint).
std::string PolicySettingsFingerprint(const PolicyRequestSettings& settings);

}  // namespace hb
