#include "grader_service/grader_flags.h"

#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/file.h"
#include "common/base/status_macros.h"

// Flag names use dashes on the command line; Abseil accepts only underscores in the
// definition, so binaries parse with hb::ParseFlags (common/base/flags_usage.h).
ABSL_FLAG(std::string, llm_base_url, "https://api.openai.com/v1",
          "Base URL of the OpenAI-compatible endpoint; requests go to {base}/chat/completions");
ABSL_FLAG(std::string, llm_model, "gpt-4.1-2025-04-14", "Grader model (SPEC §5)");
ABSL_FLAG(double, llm_temperature, 0.5, "Grader sampling temperature (SPEC §5)");
ABSL_FLAG(int, llm_max_tokens, 2048, "Grader max_tokens (SPEC §5)");
ABSL_FLAG(std::string, llm_api_key_file, "",
          "File holding the API key; when empty, $OPENAI_API_KEY is used; none is fine for "
          "local endpoints. The key is never logged");
ABSL_FLAG(int, max_attempts, 6, "Upstream attempts per rubric item, the first included");
ABSL_FLAG(absl::Duration, backoff_base, absl::Milliseconds(500),
          "First backoff ceiling (full jitter, doubling per attempt)");
ABSL_FLAG(absl::Duration, backoff_cap, absl::Seconds(30),
          "Largest backoff ceiling; also caps a Retry-After on statuses other than 429 "
          "(a 429's Retry-After is always waited out, within the caller's deadline)");
ABSL_FLAG(absl::Duration, attempt_timeout, absl::Seconds(120), "Timeout of one upstream attempt");
ABSL_FLAG(int, max_upstream_in_flight, 2048,
          "Upstream requests in flight at once; more wait in a queue");
ABSL_FLAG(int64_t, max_message_bytes, 1 << 20,
          "Largest message content, reply or criterion accepted, in bytes");
ABSL_FLAG(int, max_conversation_messages, 512, "Most conversation turns accepted");
ABSL_FLAG(int, max_rubric_items, 512, "Most rubric items per GradeReply");
ABSL_FLAG(std::string, grader_template, "data/grader_template.txt",
          "Path of the grader prompt template (the reference's text, byte for byte)");
ABSL_FLAG(bool, require_reference_template, true,
          "Refuse a template whose sha256 differs from the reference's");

namespace hb {

absl::StatusOr<GraderServerOptions> GraderServerOptionsFromFlags() {
  GraderServerOptions options;
  options.llm.base_url = absl::GetFlag(FLAGS_llm_base_url);
  if (options.llm.base_url.empty()) return absl::InvalidArgumentError("--llm-base-url is empty");
  options.settings.model = absl::GetFlag(FLAGS_llm_model);
  options.settings.temperature = absl::GetFlag(FLAGS_llm_temperature);
  options.settings.max_tokens = absl::GetFlag(FLAGS_llm_max_tokens);
  if (options.settings.max_tokens <= 0) {
    return absl::InvalidArgumentError("--llm-max-tokens must be positive");
  }
  const std::string key_file = absl::GetFlag(FLAGS_llm_api_key_file);
  if (!key_file.empty()) {
    absl::StatusOr<std::string> key = ReadFile(key_file);
    if (!key.ok()) {
      return absl::Status(key.status().code(),
                          absl::StrCat("--llm-api-key-file: cannot read ", key_file));
    }
    options.llm.api_key = std::string(absl::StripAsciiWhitespace(*key));
  } else if (const char* env = std::getenv("OPENAI_API_KEY"); env != nullptr) {
    options.llm.api_key = std::string(absl::StripAsciiWhitespace(env));
  }
  options.retry.max_attempts = absl::GetFlag(FLAGS_max_attempts);
  if (options.retry.max_attempts < 1) {
    return absl::InvalidArgumentError("--max-attempts must be at least 1");
  }
  options.retry.base = absl::GetFlag(FLAGS_backoff_base);
  options.retry.cap = absl::GetFlag(FLAGS_backoff_cap);
  if (options.retry.base < absl::ZeroDuration() || options.retry.cap < options.retry.base) {
    return absl::InvalidArgumentError("need 0 <= --backoff-base <= --backoff-cap");
  }
  options.llm.attempt_timeout = absl::GetFlag(FLAGS_attempt_timeout);
  if (options.llm.attempt_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--attempt-timeout must be positive");
  }
  // An attempt needs at most its own timeout; don't give up earlier than that would allow.
  options.retry.min_attempt_time =
      std::min(options.retry.min_attempt_time, options.llm.attempt_timeout);
  options.llm.max_upstream_in_flight = absl::GetFlag(FLAGS_max_upstream_in_flight);
  if (options.llm.max_upstream_in_flight < 1) {
    return absl::InvalidArgumentError("--max-upstream-in-flight must be at least 1");
  }
  const int64_t max_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  const int max_messages = absl::GetFlag(FLAGS_max_conversation_messages);
  const int max_items = absl::GetFlag(FLAGS_max_rubric_items);
  if (max_bytes < 1 || max_messages < 1 || max_items < 1) {
    return absl::InvalidArgumentError(
        "--max-message-bytes, --max-conversation-messages and --max-rubric-items must be "
        "positive");
  }
  options.limits.max_message_bytes = static_cast<size_t>(max_bytes);
  options.limits.max_conversation_messages = static_cast<size_t>(max_messages);
  options.limits.max_rubric_items = static_cast<size_t>(max_items);
  // Leave room for a whole conversation at the limits, capped at what gRPC can carry.
  options.max_receive_message_bytes =
      static_cast<int>(std::min<int64_t>(std::max<int64_t>(64 << 20, 4 * max_bytes), 1 << 30));
  options.template_path = absl::GetFlag(FLAGS_grader_template);
  options.require_reference_template = absl::GetFlag(FLAGS_require_reference_template);
  return options;
}

}  // namespace hb
