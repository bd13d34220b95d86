#include "grader/grader_stack_options.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/quota/redis_url.h"
#include "grader/grader_settings.h"
#include "http/url_redaction.h"
#include "security/transport_security.h"

namespace hb {

std::vector<std::string> ApiKeyWarnings(const LlmOptions& llm) {
  std::vector<std::string> warnings;
  if (llm.api_key.empty()) return warnings;
  const std::string url = RedactUrl(llm.base_url);
  if (!llm.base_url_given) {
    warnings.push_back(absl::StrCat(
        "the API key ($OPENAI_API_KEY or --llm-api-key-file) goes to ", url,
        ", the default --llm-base-url: pass --llm-base-url to choose the endpoint explicitly"));
  }
  if (absl::StartsWithIgnoreCase(llm.base_url, "http://") &&
      !IsLoopbackAddress(UrlHostPort(llm.base_url))) {
    warnings.push_back(absl::StrCat("the API key goes over plain http:// to ", url,
                                    ", readable by anyone on the path: use https://"));
  }
  return warnings;
}

EndpointPreflight LlmEndpoint(const LlmOptions& llm, const std::vector<GraderHeader>& headers) {
  EndpointPreflight endpoint;
  endpoint.base_url = llm.base_url;
  endpoint.has_api_key = !llm.api_key.empty() || !headers.empty();
  endpoint.url_flag = "--llm-base-url";
  endpoint.url_is_default = !llm.base_url_given;
  endpoint.key_source = "$OPENAI_API_KEY or --llm-api-key-file";
  return endpoint;
}

absl::Status CheckQuotaSettings(const QuotaSettings& quota) {
  if (quota.redis_url.empty()) {
    if (quota.rpm != 0 || quota.tpm != 0 || !quota.key.empty() || !quota.redis_password.empty()) {
      return absl::InvalidArgumentError(
          "--quota-rpm, --quota-tpm, --quota-key and --quota-redis-password-file need "
          "--quota-redis URL (the fleet's shared quota)");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<RedisEndpoint> endpoint = ParseRedisUrl(quota.redis_url);
  if (!endpoint.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--quota-redis: ", endpoint.status().message()));
  }
  if (quota.rpm < 0 || quota.tpm < 0) {
    return absl::InvalidArgumentError("--quota-rpm and --quota-tpm must be >= 0 (0: learned)");
  }
  if (!(quota.fallback_share > 0 && quota.fallback_share <= 1)) {
    return absl::InvalidArgumentError("--quota-fallback-share must be in (0, 1]");
  }
  return absl::OkStatus();
}

absl::StatusOr<GraderStackOptions> CompleteGraderStackOptions(GraderStackOptions options) {
  if (options.llm.base_url.empty()) return absl::InvalidArgumentError("--llm-base-url is empty");
  HB_RETURN_IF_ERROR(ValidateGraderSettings(options.settings));
  if (options.retry.max_attempts < 1) {
    return absl::InvalidArgumentError("--max-attempts must be at least 1");
  }
  if (options.retry.base < absl::ZeroDuration() || options.retry.cap < options.retry.base) {
    return absl::InvalidArgumentError("need 0 <= --backoff-base <= --backoff-cap");
  }
  if (options.llm.attempt_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--attempt-timeout must be positive");
  }
  if (options.llm.max_upstream_in_flight < 1) {
    return absl::InvalidArgumentError("--max-upstream-in-flight must be at least 1");
  }
  const GraderLimits& limits = options.limits;
  if (limits.max_message_bytes < 1 || limits.max_conversation_messages < 1 ||
      limits.max_rubric_items < 1) {
    return absl::InvalidArgumentError(
        "--max-message-bytes, --max-conversation-messages and --max-rubric-items must be "
        "positive");
  }
  if (limits.max_tags_per_item < 1 || limits.max_field_bytes < 1 || limits.max_prompt_bytes < 1) {
    return absl::InvalidArgumentError(
        "--max-tags-per-item, --max-field-bytes and --max-prompt-bytes must be positive");
  }
  // An attempt needs at most its own timeout; don't give up earlier than that would allow.
  options.retry.min_attempt_time =
      std::min(options.retry.min_attempt_time, options.llm.attempt_timeout);
  HB_RETURN_IF_ERROR(CheckQuotaSettings(options.quota));
  return options;
}

}  // namespace hb
