// The request handling of hb-llm-sim, free of sockets and event loops so tests can drive it
// directly: response bodies, and `Simulator`, which turns one HTTP request into one `SimAction`
// (reply now or later, hang, or reset) using request parsing (sim_request.h), the simulated
// prompt cache (prompt_cache.h), the rate limiter (rate_limiter.h) and fault injection
// (faults.h). simulator/main.cc only wires `Simulator` to libevent.
//
// Every random decision is a pure function of (--seed, request sequence number, stream): the
// n-th chat request the simulator handles (0-based, in arrival order) gets the same latency,
// fault and reply variant on every run with the same seed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/clock.h"
#include "llm/llm_client.h"
#include "simulator/faults.h"
#include "simulator/prompt_cache.h"
#include "simulator/rate_limiter.h"
#include "simulator/sim_batch.h"
#include "simulator/sim_metrics.h"
#include "simulator/sim_request.h"

namespace hb::sim {

// ---------------------------------------------------------------------------------------------
// Bodies

// {"error":{"message":...,"type":...,"param":null,"code":<code or null>}}.
std::string BuildErrorBody(absl::string_view message, absl::string_view type,
                           absl::string_view code = "");

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // reasoning tokens included
  int64_t cached_tokens = 0;
  int64_t reasoning_tokens = 0;
};

// An OpenAI chat.completion object with one choice (role assistant, `finish_reason`),
// usage {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details{cached_tokens}}.
std::string BuildCompletionBody(absl::string_view id, int64_t created_unix_seconds,
                                absl::string_view model, absl::string_view content,
                                const Usage& usage, absl::string_view finish_reason = "stop");

// An OpenAI Responses API `response` object (status "completed"): a reasoning item, then one
// assistant message whose `content` is split into two output_text parts at the byte nearest
// its middle that starts a UTF-8 character (clients must join every part: the SDK's
// output_text); usage {input_tokens, input_tokens_details{cached_tokens}, output_tokens,
// output_tokens_details{reasoning_tokens}, total_tokens}.
std::string BuildResponseBody(absl::string_view id, int64_t created_unix_seconds,
                              absl::string_view model, absl::string_view content,
                              const Usage& usage);

// ---------------------------------------------------------------------------------------------
// Simulator

// One HTTP request, as the server saw it.
struct SimHttpRequest {
  absl::string_view method;         // "GET", "POST", ...
  absl::string_view path;           // without the query string
  absl::string_view authorization;  // the Authorization header, empty when absent
  absl::string_view body;
  absl::string_view content_type;  // the Content-Type header, empty when absent
  // Every request header (name as sent, value), for --require-header.
  std::vector<std::pair<absl::string_view, absl::string_view>> headers;
};

// The Content-Type of the simulator's JSON replies.
inline constexpr char kJsonType[] = "application/json";

// What the server must do.
struct SimAction {
  enum class Kind { kReply, kHang, kReset };
  Kind kind = Kind::kReply;
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type included
  std::string body;
  absl::Duration delay = absl::ZeroDuration();  // reply / reset after this long
  bool is_chat = false;  // a chat-completions request (counted, logged, in flight)
  std::string log_line;  // one JSON line for --request-log (chat requests only), no newline
};

struct SimulatorOptions {
  std::string api_key;  // empty = no authentication
  // --require-header NAME=VALUE: headers every grader, policy and batch request must carry
  // (name case-insensitive, value exact), else 401 like a wrong key (a gateway or Azure's
  // api-key in front of a self-hosted judge).
  std::vector<std::pair<std::string, std::string>> required_headers;
  // --require-body-key KEY: top-level keys every grader request body must have, else 400 (a
  // judge that needs its guided-decoding field, e.g. vLLM's guided_json).
  std::vector<std::string> required_body_keys;
  double latency_ms = 0;
  double latency_jitter = 0;  // fraction: delay = latency_ms * (1 + jitter * U[-1, 1)), >= 0
  uint64_t seed = 0;
  FaultRates faults;
  int64_t retry_after_ms = 500;  // for injected 429s
  RateLimiter::Options rate_limits;
  PromptCache::Options prompt_cache;
  // Policy mode (sim_policy.h): the models POST /policy/v1/chat/completions serves (empty: any;
  // others get 404 model_not_found), and its latency (< 0: latency_ms).
  std::vector<std::string> policy_models;
  double policy_latency_ms = -1;
  // The Batch API (sim_batch.h).
  BatchOptions batch;
};

// Handles requests (see simulator/README.md for the full contract). Batch API requests
// (BatchService) are authenticated like chat requests, and each batch line is answered as one
// chat request. Chat requests go through, in
// order: authentication (401), parsing (400), for policy requests the model check (404), the
// rate limiter (429), the fault draw, then the reply. Latency applies to replies with status
// 200/500/503 and to resets; 400, 401 and 429 answer at once. Every chat response carries
// x-ratelimit-* headers when a limit is set. Thread-safe; `clock` is not owned and must outlive the
// simulator.
class Simulator {
 public:
  Simulator(SimulatorOptions options, const Clock* clock);

  // Every response carries kSimulatorHeader (llm/llm_client.h: "x-hb-llm-sim: 1"), by which
  // clients know that its verdicts are simulated.
  SimAction Handle(const SimHttpRequest& request);

  // The counters in the Prometheus text format (SimMetrics), for GET /metrics.
  std::string RenderMetrics() const { return metrics_.Render(); }

  // The server reports requests it holds (delayed or hanging) for the in-flight gauge.
  void AddInFlight(int64_t delta) { metrics_.AddInFlight(delta); }

 private:
  // Handle without the simulator header.
  SimAction Route(const SimHttpRequest& request);
  // Why `request` is refused before its body is read: "" when it carries the --api-key bearer
  // token and every --require-header, else the 401 error message.
  std::string Unauthorized(const SimHttpRequest& request) const;
  // `policy`: a policy request (sim_policy.h) rather than a grader request; `api`: chat
  // completions or the Responses API (the body's format and the reply's).
  SimAction HandleChat(const SimHttpRequest& request, bool policy,
                       GraderApi api = GraderApi::kChatCompletions);
  // HandleChat's steps. The request parsed as `api` when the simulator serves it, else nullopt
  // with its refusal (401, 400 or 404) in `action`, finished.
  std::optional<ParsedChatRequest> AcceptChat(const SimHttpRequest& request, bool policy,
                                              GraderApi api, SimAction& action);
  // A refusal before the rate limits: `status` with `body`, the limits' current headers.
  void Refuse(SimAction& action, int status, std::string body);
  // Whether the rate limits admit the request; else its 429 (Retry-After) in `action`, finished.
  // Adds the limits' headers either way.
  bool Admit(const ParsedChatRequest& parsed, int64_t prompt_tokens, SimAction& action);
  // The reply's delay: the configured latency (the policy's for a policy request) with jitter.
  void SetLatency(bool policy, uint64_t seq, SimAction& action) const;
  // Whether `fault` is the whole answer (a reset, a hang, a 429, 500 or 503), put in `action`,
  // finished; false for no fault or one in the reply's content.
  bool AnswerWithFault(FaultKind fault, int64_t prompt_tokens, SimAction& action);
  // The 200 reply body to an admitted grader request.
  std::string GraderReplyBody(const ParsedChatRequest& parsed, const std::string& prompt,
                              uint64_t seq, absl::string_view content, Usage& usage);
  // The 200 reply to an admitted policy request.
  SimAction PolicyAction(SimAction action, const ParsedChatRequest& parsed,
                         const std::string& prompt, uint64_t seq, absl::string_view fault_name);
  void AddRateLimitHeaders(const RateLimitDecision& d, SimAction& action) const;
  void Finish(SimAction& action, absl::string_view fault, int64_t prompt_tokens,
              std::optional<bool> verdict, int64_t cached_tokens);

  const SimulatorOptions options_;
  const Clock* const clock_;
  RateLimiter rate_limiter_;
  PromptCache prompt_cache_;
  std::atomic<uint64_t> next_seq_{0};
  SimMetrics metrics_;
  BatchService batch_;
};

}  // namespace hb::sim
