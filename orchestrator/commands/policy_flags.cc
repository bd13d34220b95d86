#include "orchestrator/commands/policy_flags.h"

#include "cli/grader_flags.h"
#include "common/base/status_macros.h"

namespace hb::cli {

void AddPolicyEndpointFlags(Command& command, PolicyFlags* flags) {
  command.Flag("policy-base-url", &flags->base_url, "URL",
               "the policy's OpenAI-compatible base URL; requests go to URL/chat/completions "
               "(vLLM: http://HOST:8000/v1; hb-llm-sim: http://HOST:PORT/policy/v1)");
  command.Flag("policy-model", &flags->model, "NAME", "the `model` of every policy request");
}

void AddPolicySamplingFlags(Command& command, PolicyFlags* flags) {
  command.Flag("policy-input", &flags->input, "messages|prompt-text",
               "messages: the task's messages as a message list (as the reference samples); "
               "prompt-text: one user message holding the seed rendering hb-env shows");
  command.Flag("policy-system-prompt", &flags->system_prompt, "TEXT",
               "a leading system message (recorded as each response's system_prompt, so the "
               "grader sees it); none unless given");
  command.Flag("policy-temperature", &flags->temperature, "T",
               "`temperature` of policy requests; not sent unless given");
  command.Flag("policy-max-tokens", &flags->max_tokens, "N",
               "`max_tokens` of policy requests; not sent unless given. Replies cut by it "
               "(finish_reason length) are kept and counted");
  command.Flag("policy-extra-body", &flags->extra_body, "JSON",
               "a JSON object merged into every policy request, e.g. "
               "'{\"reasoning_effort\":\"low\"}'");
  command.Flag("policy-api-key-file", &flags->api_key_file, "PATH",
               "file holding the policy's API key (else $POLICY_API_KEY; none is fine for local "
               "servers). Never logged");
  command.Flag("policy-max-attempts", &flags->retry.max_attempts, "N",
               "attempts per task (connection errors, timeouts, 408/409/429/5xx, null content "
               "are retried with backoff; a 429's Retry-After is honoured)");
  command.Flag("policy-attempt-timeout", &flags->attempt_timeout, "DURATION",
               "timeout of one policy request");
}

absl::Status ResolvePolicyFlags(const Command& command, const PolicyFlags& flags,
                                PolicyOptions* options) {
  options->policy_base_url = flags.base_url;
  PolicyRequestSettings& request = options->request;
  request.model = flags.model;
  HB_RETURN_IF_ERROR(ParsePolicyInput(flags.input, &request.input));
  if (command.Given("policy-system-prompt")) request.system_prompt = flags.system_prompt;
  if (command.Given("policy-temperature")) request.temperature = flags.temperature;
  if (command.Given("policy-max-tokens")) request.max_tokens = flags.max_tokens;
  request.extra_body = flags.extra_body;
  HB_ASSIGN_OR_RETURN(options->api_key,
                      ReadApiKey("policy-api-key-file", flags.api_key_file, "POLICY_API_KEY"));
  if (flags.retry.max_attempts < 1) {
    return absl::InvalidArgumentError("--policy-max-attempts must be >= 1");
  }
  options->retry = flags.retry;
  options->attempt_timeout = flags.attempt_timeout;
  return absl::OkStatus();
}

}  // namespace hb::cli
