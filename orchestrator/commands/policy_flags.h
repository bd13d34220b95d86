// The flags of a policy (the model being graded) that `hb-orchestrator sample` samples, and that
// `run --policy` shares across its policy checkpoints: how requests are shaped
// (PolicyRequestSettings), the API key, and the retry budget. Flags not given are not sent.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cli/command_line.h"
#include "orchestrator/policy/policy_options.h"

namespace hb::cli {

struct PolicyFlags {
  std::string base_url;
  std::string model;
  std::string input = "messages";
  std::string system_prompt;
  double temperature = 0;
  int64_t max_tokens = 0;
  std::string extra_body;
  std::string api_key_file;
  RetryPolicy retry;
  absl::Duration attempt_timeout = absl::Seconds(300);
};

// --policy-base-url URL, --policy-model NAME (`sample` only: `run` names them in --policy).
void AddPolicyEndpointFlags(Command& command, PolicyFlags* flags);

// --policy-input, --policy-system-prompt, --policy-temperature, --policy-max-tokens,
// --policy-extra-body, --policy-api-key-file, --policy-max-attempts, --policy-attempt-timeout.
void AddPolicySamplingFlags(Command& command, PolicyFlags* flags);

// Fills the policy part of `options` (base URL, request settings, API key from
// --policy-api-key-file or $POLICY_API_KEY, retry, attempt timeout). The optional settings are
// set only when their flag was given on `command`. kInvalidArgument naming the flag.
absl::Status ResolvePolicyFlags(const Command& command, const PolicyFlags& flags,
                                PolicyOptions* options);

}  // namespace hb::cli
