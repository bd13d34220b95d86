#include "orchestrator/policy/policy_options.h"

#include <memory>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grading/grader_reply.h"
#include "common/retry/retry_status.h"
#include "http/url_redaction.h"

namespace hb {

absl::Status ValidatePolicyOptions(const PolicyOptions& options) {
  if (options.policy_base_url.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.endpoint_flag, " is required (e.g. http://vllm:8000/v1)"));
  }
  if (!absl::StartsWith(options.policy_base_url, "http://") &&
      !absl::StartsWith(options.policy_base_url, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat("the policy URL (", options.endpoint_flag,
                                                   ") must start with http:// or https://, got '",
                                                   RedactUrl(options.policy_base_url), "'"));
  }
  if (options.max_in_flight < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-in-flight must be >= 1, got ", options.max_in_flight));
  }
  return ValidatePolicyRequestSettings(options.request);
}

SampledReply ToSampledReply(const std::string& prompt_id, const PolicyOptions& options,
                            ChatResult result) {
  SampledReply reply;
  reply.prompt_id = prompt_id;
  reply.response = std::move(result.content);
  reply.system_prompt = options.request.system_prompt;
  reply.model = result.model.empty() ? options.request.model : std::move(result.model);
  reply.finish_reason = std::move(result.finish_reason);
  reply.usage = result.usage;
  return reply;
}

absl::Status PolicyProbeError(const PolicyOptions& options, const absl::Status& status) {
  const FailureKind kind = AttemptOutcomeOf(status).kind;
  std::string hint;
  switch (kind) {
    case FailureKind::kConnection:
      hint =
          "the policy endpoint is unreachable; check --policy-base-url and that the server is "
          "up";
      break;
    case FailureKind::kHttp401:
    case FailureKind::kHttp403:
      hint =
          "the policy endpoint refused the API key; set POLICY_API_KEY or "
          "--policy-api-key-file";
      break;
    case FailureKind::kHttp404:
      hint = absl::StrCat("the endpoint does not serve model '", options.request.model,
                          "' (or --policy-base-url lacks the /v1 part); check --policy-model");
      break;
    case FailureKind::kHttp400:
    case FailureKind::kOtherHttp4xx:
      hint =
          "the policy endpoint rejected the request; check --policy-extra-body and the "
          "sampling flags";
      break;
    default:
      return absl::OkStatus();  // transient: the sampler retries it
  }
  return absl::FailedPreconditionError(
      absl::StrCat("probe request to ", RedactUrl(options.policy_base_url),
                   " failed: ", status.message(), " (", hint, ")"));
}

EndpointPreflight PolicyEndpoint(const PolicyOptions& options) {
  EndpointPreflight endpoint;
  endpoint.base_url = options.policy_base_url;
  endpoint.has_api_key = !options.api_key.empty();
  endpoint.url_flag = options.endpoint_flag;
  endpoint.key_source = "$POLICY_API_KEY or --policy-api-key-file";
  return endpoint;
}

absl::Status CheckNotGraderVerdict(const PolicyOptions& options, absl::string_view content) {
  if (!ParseGraderReply(content).ok()) return absl::OkStatus();
  constexpr size_t kShown = 120;
  const std::string shown = content.size() <= kShown
                                ? std::string(content)
                                : absl::StrCat(content.substr(0, kShown), "...");
  return absl::FailedPreconditionError(absl::StrCat(
      "a reply of ", RedactUrl(options.policy_base_url), " (", options.endpoint_flag, ", model ",
      options.request.model,
      ") is a grader verdict, not an answer to the task: a JSON object with a boolean "
      "\"criteria_met\": ",
      shown, " \u2014 ", options.endpoint_flag,
      " points at a grader route; give the policy's own endpoint (hb-llm-sim serves policies at "
      "http://HOST:PORT/policy/v1, its grader at /v1)"));
}

PolicySamplerOptions MakePolicySamplerOptions(const PolicyOptions& options) {
  PolicySamplerOptions sampler_options;
  sampler_options.max_in_flight = options.max_in_flight;
  sampler_options.adaptive = options.adaptive_concurrency;
  sampler_options.retry = options.retry;
  sampler_options.attempt_timeout = options.attempt_timeout;
  auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
  sampler_options.jitter = [rng] { return std::uniform_real_distribution<double>(0, 1)(*rng); };
  return sampler_options;
}

}  // namespace hb
