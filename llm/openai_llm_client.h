// OpenAiLlmClient: LlmClient over the OpenAI chat-completions protocol (OpenAI, Azure OpenAI
// compatible gateways, vLLM, the bundled simulator) or OpenAI's Responses API, on top of an
// HttpClient.
//
// POSTs the body to "{base_url}/chat/completions" (or "{base_url}/responses") with
// "Authorization: Bearer <key>" when a key is configured, and turns the answer into a ChatResult or
// a status with an AttemptOutcome. The key never appears in a status message, a log line or a
// metric.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/clock.h"
#include "common/healthbench/types.h"
#include "http/http_client.h"
#include "llm/llm_client.h"
#include "llm/llm_metrics.h"

namespace hb {

struct OpenAiLlmClientOptions {
  // E.g. "https://api.openai.com/v1" (a trailing '/' is ignored).
  std::string base_url = "https://api.openai.com/v1";
  // Sent as a bearer token when non-empty. Never logged.
  std::string api_key;
  // Optional; not owned; must outlive the client.
  LlmMetrics* metrics = nullptr;
  // For latency; Clock::Real() when null. Not owned.
  Clock* clock = nullptr;
  // The endpoint and reply format (the request bodies must match: BuildGraderRequestBody).
  GraderApi api = GraderApi::kChatCompletions;
  // Extra headers of every request (--llm-header: Azure's api-key, gateways), after
  // Content-Type, Accept and Authorization. Values may be secrets: never logged, and scrubbed
  // like the key from the statuses this client returns.
  std::vector<std::pair<std::string, std::string>> headers;
};

class OpenAiLlmClient final : public LlmClient {
 public:
  // `http` is not owned and must outlive this client.
  OpenAiLlmClient(HttpClient& http, OpenAiLlmClientOptions options);

  CallId Complete(ChatRequest request, ChatCallback done) override;
  void Cancel(CallId id) override;

  // The endpoint URL requests go to.
  const std::string& url() const { return url_; }

 private:
  // `status` with every non-empty header value in its message replaced by "[redacted]" (its
  // payloads, the AttemptOutcome, kept).
  absl::Status ScrubHeaderValues(absl::Status status) const;

  HttpClient& http_;
  OpenAiLlmClientOptions options_;
  Clock& clock_;
  std::string url_;
};

// Maps one HTTP exchange to a ChatResult or an error with an AttemptOutcome (see
// llm_client.h). `api_key` is scrubbed from every message. For the Responses API the text is
// the SDK's output_text (every "output_text" part of every "message" item of `output`,
// joined; "" when none) and usage comes from input_tokens, input_tokens_details.cached_tokens
// and output_tokens (reasoning tokens included); finish_reason is the response's `status`.
// `simulated` is set when the response carries kSimulatorHeader.
// A non-array `output` is a malformed reply (kUnavailable, retried). Exposed for tests and the
// Batch API path.
absl::StatusOr<ChatResult> InterpretLlmResponse(const HttpResponse& response,
                                                absl::string_view api_key, GraderApi api);
// InterpretLlmResponse for chat completions.
absl::StatusOr<ChatResult> InterpretChatResponse(const HttpResponse& response,
                                                 absl::string_view api_key);

// Reads "retry-after-ms" (milliseconds) or else "retry-after" (seconds, possibly
// fractional); std::nullopt when absent or unparsable. Exposed for tests.
std::optional<absl::Duration> RetryAfterOf(const HttpResponse& response);

}  // namespace hb
