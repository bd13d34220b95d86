// The command-line flags shared by hb-grader and the orchestrator's embedded grader, and their
// translation into GraderServerOptions. Link hb::grader_flags only from binaries.
//
// --llm-base-url, --llm-model, --llm-temperature, --llm-max-tokens, --llm-api-key-file (else
// $OPENAI_API_KEY), --max-attempts, --backoff-base, --backoff-cap, --attempt-timeout,
// --max-upstream-in-flight, --max-message-bytes, --max-conversation-messages,
// --max-rubric-items, --grader-template, --require-reference-template.
#pragma once

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grader_service/grader_server.h"

ABSL_DECLARE_FLAG(std::string, llm_base_url);
ABSL_DECLARE_FLAG(std::string, llm_model);
ABSL_DECLARE_FLAG(double, llm_temperature);
ABSL_DECLARE_FLAG(int, llm_max_tokens);
ABSL_DECLARE_FLAG(std::string, llm_api_key_file);
ABSL_DECLARE_FLAG(int, max_attempts);
ABSL_DECLARE_FLAG(absl::Duration, backoff_base);
ABSL_DECLARE_FLAG(absl::Duration, backoff_cap);
ABSL_DECLARE_FLAG(absl::Duration, attempt_timeout);
ABSL_DECLARE_FLAG(int, max_upstream_in_flight);
ABSL_DECLARE_FLAG(int64_t, max_message_bytes);
ABSL_DECLARE_FLAG(int, max_conversation_messages);
ABSL_DECLARE_FLAG(int, max_rubric_items);
ABSL_DECLARE_FLAG(std::string, grader_template);
ABSL_DECLARE_FLAG(bool, require_reference_template);

namespace hb {

// GraderServerOptions from the flags above (listen address and registry left at defaults).
// The API key comes from --llm-api-key-file (trailing whitespace trimmed) or $OPENAI_API_KEY;
// none is fine for local endpoints. kInvalidArgument names the offending flag (never the key);
// an unreadable key file is reported by path.
absl::StatusOr<GraderServerOptions> GraderServerOptionsFromFlags();

}  // namespace hb
