// LlmClient: one chat-completions call, asynchronous. The production implementation speaks the
// OpenAI protocol over an HttpClient (openai_llm_client.h); tests use
// hb::testing::FakeLlmClient.
//
// A failed call's status carries an AttemptOutcome as status details (what went wrong as a
// payload, the server's Retry-After as the standard RetryInfo of common/retry/retry_status.h),
// so the retry policy above can decide without re-parsing messages: see WithAttemptOutcome /
// AttemptOutcomeOf.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/retry/retry_policy.h"

namespace hb {

// One request: the JSON body exactly as it goes on the wire (BuildGraderRequestBody).
struct ChatRequest {
  std::string body;
  // When non-empty, the body is these pieces in order instead (`body` is ignored): the rubric
  // items of one reply share its rendered conversation this way (SharedChatCompletionBody)
  // rather than each holding a copy.
  std::vector<std::shared_ptr<const std::string>> body_parts;
  // This attempt's timeout.
  absl::Duration timeout = absl::Seconds(120);
  // The caller's overall deadline (informational for the client; the timeout already fits it).
  absl::Time deadline = absl::InfiniteFuture();
};

// Token counts from the response's `usage`.
struct ChatUsage {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  ChatUsage& operator+=(const ChatUsage& o) {
    prompt_tokens += o.prompt_tokens;
    cached_tokens += o.cached_tokens;
    completion_tokens += o.completion_tokens;
    return *this;
  }
};

// The x-ratelimit-* headers, when the endpoint sends them.
struct RateLimitInfo {
  std::optional<int64_t> limit_requests;
  std::optional<int64_t> remaining_requests;
  std::optional<int64_t> limit_tokens;
  std::optional<int64_t> remaining_tokens;
  // x-ratelimit-reset-{requests,tokens}: time until the budget resets ("6m0s", "58.8s",
  // "250ms", "1m").
  std::optional<absl::Duration> reset_requests;
  std::optional<absl::Duration> reset_tokens;
};

// The response header by which hb-llm-sim (simulator/) says that it is a simulator, not a model:
// any reply carrying it is a simulated verdict (ChatResult::simulated), whatever the flags said.
inline constexpr char kSimulatorHeader[] = "x-hb-llm-sim";

// A usable completion: HTTP 200 with a string `choices[0].message.content`.
struct ChatResult {
  std::string content;
  // `model` as the endpoint reported it.
  std::string model;
  // `choices[0].finish_reason` ("stop", "length", ...); empty when absent or not a string.
  std::string finish_reason;
  ChatUsage usage;
  int http_status = 0;
  absl::Duration latency = absl::ZeroDuration();
  RateLimitInfo rate_limit;
  // The endpoint identified itself as hb-llm-sim (kSimulatorHeader): the content is simulated.
  bool simulated = false;
};

// Receives the outcome of one call, exactly once. Errors carry an AttemptOutcome payload;
// codes: kUnavailable (connection, 5xx, malformed or null-content reply), kDeadlineExceeded
// (timeout, 408), kResourceExhausted (429), kAborted (409), kInvalidArgument (400),
// kUnauthenticated (401), kPermissionDenied (403), kNotFound (404), kFailedPrecondition (other
// 4xx, TLS verification), kCancelled.
using ChatCallback = absl::AnyInvocable<void(absl::StatusOr<ChatResult>)>;

class LlmClient {
 public:
  // 0 is never a valid id.
  using CallId = uint64_t;

  virtual ~LlmClient() = default;

  // Starts a call; `done` runs once, on the client's thread (normally not inline). `done` must
  // not block. Thread-safe.
  virtual CallId Complete(ChatRequest request, ChatCallback done) = 0;

  // Aborts a call in progress; its `done` then runs with kCancelled (unless it already ran).
  // Thread-safe.
  virtual void Cancel(CallId id) = 0;
};

// Attaches `outcome` to `status` (not OK) as a payload and returns it.
absl::Status WithAttemptOutcome(absl::Status status, const AttemptOutcome& outcome);

// The AttemptOutcome attached by WithAttemptOutcome, or one inferred from the status code
// when there is none (kUnavailable -> connection, kDeadlineExceeded -> timeout,
// kResourceExhausted -> 429, kAborted -> 409, kDataLoss -> malformed reply, kInvalidArgument ->
// 400, kUnauthenticated -> 401, kPermissionDenied -> 403, kNotFound -> 404, kCancelled ->
// cancelled, anything else -> other 4xx, i.e. final).
AttemptOutcome AttemptOutcomeOf(const absl::Status& status);

}  // namespace hb
