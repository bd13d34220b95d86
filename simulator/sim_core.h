// The decision logic of hb-llm-sim, free of sockets and event loops so tests can drive it
// directly: request parsing and validation, the token estimate, the simulated prompt cache, the
// rate limiter, fault injection, response bodies, and `Simulator`, which turns one HTTP request
// into one `SimAction` (reply now or later, hang, or reset). simulator/main.cc only wires
// `Simulator` to libevent.
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

namespace hb::sim {

// ---------------------------------------------------------------------------------------------
// Requests and tokens

// One chat message. `content` is the text: a JSON string, or the concatenation of the "text"
// fields of an array of content parts; empty for null content.
struct ChatMessage {
  std::string role;
  std::string content;
};

// The parts of an OpenAI chat-completions request the simulator uses.
struct ChatRequest {
  std::string model;  // echoed in the response; "hb-llm-sim" when the request has none
  std::vector<ChatMessage> messages;
  std::optional<double> temperature;
  int64_t max_tokens = 0;  // max_tokens, else max_completion_tokens, else 0
  std::string prompt_cache_key;
};

// Parses and validates a request body. kInvalidArgument (the message becomes the 400 body's
// error.message) when: the body is not valid JSON ("request body is not valid JSON: <why> at
// offset N"), not an object, `messages` is missing / not a non-empty array, a message is not an
// object or lacks a string `role`, `content` is neither string, array of parts nor null,
// `model` / `prompt_cache_key` is not a string, `temperature` is not a number in [0, 2], or
// `max_tokens` / `max_completion_tokens` is not a positive integer.
absl::StatusOr<ChatRequest> ParseChatRequest(absl::string_view body);

// The deterministic token estimate: ceil(bytes / 4). 0 for empty text.
int64_t EstimateTokens(absl::string_view text);

// The prompt text the estimate and the cache work on: every message's content concatenated in
// order, with no separators (roles are not counted). prompt_tokens = EstimateTokens(this).
std::string PromptText(const ChatRequest& request);

// The content of the last message with role "user"; empty when there is none.
absl::string_view LastUserMessage(const ChatRequest& request);

// ---------------------------------------------------------------------------------------------
// Prompt cache (simulates OpenAI's automatic prefix caching)

// Rules, exactly:
// * A prompt (PromptText) is cut into blocks of 128 tokens = 512 bytes; a trailing partial block
//   is never cached. Prompts shorter than 1,024 tokens (8 blocks, 4,096 bytes) are never cached
//   and never stored.
// * Entry key: "key:" + prompt_cache_key when the request has one; otherwise "prefix:" + a hash
//   of the first 1,024 tokens (8 blocks).
// * Each entry remembers the block-chain hashes of the MOST RECENT prompt stored under its key
//   and when it was last used. An entry unused for longer than `ttl` is expired.
// * cached_tokens = 128 * (number of leading blocks identical to the entry's prompt) when that
//   is >= 1,024 tokens, else 0. The current prompt then replaces the entry's prompt and
//   refreshes its time (also when it was a miss).
// Thread-safe.
class PromptCache {
 public:
  struct Options {
    absl::Duration ttl = absl::Minutes(5);
    size_t max_entries = 200000;  // beyond this, expired entries are swept, then any dropped
  };
  static constexpr int64_t kBlockTokens = 128;
  static constexpr int64_t kMinCachedTokens = 1024;

  // `clock` is not owned and must outlive the cache.
  PromptCache(Options options, const Clock* clock);

  // Returns cached_tokens for this prompt and records it (see the class comment).
  int64_t LookupAndStore(absl::string_view prompt_cache_key, absl::string_view prompt_text);

 private:
  struct Entry {
    std::vector<uint64_t> chain;  // chain[i] = hash of blocks 0..i
    absl::Time last_used;
  };
  const Options options_;
  const Clock* const clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------------------------------------
// Rate limiter

// The state reported in x-ratelimit-* headers, and whether the request was admitted.
struct RateLimitDecision {
  bool admitted = true;
  bool requests_exceeded = false;  // set when refused for requests-per-minute
  bool tokens_exceeded = false;    // set when refused for tokens-per-minute
  int64_t limit_requests = 0;      // 0 = unlimited (no header emitted)
  int64_t remaining_requests = 0;
  int64_t limit_tokens = 0;  // 0 = unlimited (no header emitted)
  int64_t remaining_tokens = 0;
  absl::Duration reset = absl::ZeroDuration();        // until the current window ends
  absl::Duration retry_after = absl::ZeroDuration();  // when refused: until it may pass
};

// Fixed-window limiter: a window of `window` (60 s) opens at the first request that arrives
// when no window is open; requests and tokens are counted until it ends, then both counters
// restart. A request is admitted iff requests_used + 1 <= rpm (when rpm > 0) and tokens_used +
// tokens <= tpm (when tpm > 0); a refused request consumes nothing and gets retry_after = the
// time until the window ends (a request larger than tpm can never pass: retry_after = window).
// Thread-safe.
class RateLimiter {
 public:
  struct Options {
    int64_t rpm = 0;  // 0 = unlimited
    int64_t tpm = 0;  // 0 = unlimited
    absl::Duration window = absl::Seconds(60);
  };
  // `clock` is not owned and must outlive the limiter.
  RateLimiter(Options options, const Clock* clock);

  bool enabled() const { return options_.rpm > 0 || options_.tpm > 0; }
  // Admits (and charges one request and `tokens`) or refuses.
  RateLimitDecision Acquire(int64_t tokens);
  // The current state without charging anything (admitted = true).
  RateLimitDecision Peek();

 private:
  RateLimitDecision StateLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RollLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const Clock* const clock_;
  absl::Mutex mu_;
  std::optional<absl::Time> window_end_ ABSL_GUARDED_BY(mu_);
  int64_t requests_used_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t tokens_used_ ABSL_GUARDED_BY(mu_) = 0;
};

// OpenAI-style duration for x-ratelimit-reset-*: Go-like via absl::FormatDuration, rounded to
// milliseconds ("0s", "250ms", "1.2s", "59.999s", "1m").
std::string FormatResetDuration(absl::Duration d);

// ---------------------------------------------------------------------------------------------
// Fault injection

enum class FaultKind {
  kNone,
  kReset,      // close the connection (TCP RST) without a response
  kHang,       // never answer; hold the connection until the client gives up
  k429,        // 429 + Retry-After / retry-after-ms
  k500,        // 500 server_error
  k503,        // 503 service unavailable
  kMalformed,  // 200, content is not valid JSON
  kNonObject,  // 200, content is a JSON value that is not an object
  kFenced,     // 200, the correct reply wrapped in "```json\n...\n```"
};
inline constexpr int kNumFaultKinds = 9;

// "none", "reset", "hang", "429", "500", "503", "malformed", "nonobject", "fenced".
absl::string_view FaultKindName(FaultKind kind);

// Per-kind probability in [0, 1].
struct FaultRates {
  double reset = 0, hang = 0, status_429 = 0, status_500 = 0, status_503 = 0, malformed = 0,
         nonobject = 0, fenced = 0;
};

// A uniform double in [0, 1) that depends only on (seed, seq, stream) (SplitMix64 mixing).
double Uniform01(uint64_t seed, uint64_t seq, uint64_t stream);

// Chooses the fault for request `seq`: one independent draw per kind, in the fixed order
// reset, hang, 429, 500, 503, malformed, nonobject, fenced; the first kind whose draw is below
// its rate wins. So a rate of 1 always fires unless an earlier kind fired, a rate of 0 never
// fires, and kind k fires with probability rate_k * prod_{j before k} (1 - rate_j).
FaultKind ChooseFault(const FaultRates& rates, uint64_t seed, uint64_t seq);

// The 200 reply content for a content fault, given the true verdict `met`:
// * kMalformed: one of three invalid-JSON texts (variant = seq % 3): the correct reply with its
//   closing brace cut off; the correct reply followed by " (simulated trailing text)"; a Python
//   dict literal {'explanation': ..., 'criteria_met': True}. A strict parser rejects all three.
// * kNonObject: one of `42`, `"criteria_met"`, `[true]` (variant = seq % 3).
// * kFenced: "```json\n" + SimulatedReplyContent(met) + "\n```"; the reference parser accepts it
//   with criteria_met == met.
// Anything else: SimulatedReplyContent(met).
// No variant ever carries a verdict other than `met`.
std::string FaultReplyContent(FaultKind kind, bool met, uint64_t seq);

// ---------------------------------------------------------------------------------------------
// Bodies

// {"error":{"message":...,"type":...,"param":null,"code":<code or null>}}.
std::string BuildErrorBody(absl::string_view message, absl::string_view type,
                           absl::string_view code = "");

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

// An OpenAI chat.completion object with one choice (role assistant, finish_reason "stop"),
// usage {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details{cached_tokens}}.
std::string BuildCompletionBody(absl::string_view id, int64_t created_unix_seconds,
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
};

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
  double latency_ms = 0;
  double latency_jitter = 0;  // fraction: delay = latency_ms * (1 + jitter * U[-1, 1)), >= 0
  uint64_t seed = 0;
  FaultRates faults;
  int64_t retry_after_ms = 500;  // for injected 429s
  RateLimiter::Options rate_limits;
  PromptCache::Options prompt_cache;
};

// Handles requests (see simulator/README.md for the full contract). Chat requests go through, in
// order: authentication (401), parsing (400), the rate limiter (429), the fault draw, then the
// reply. Latency applies to replies with status 200/500/503 and to resets; 400, 401 and 429
// answer at once. Every chat response carries x-ratelimit-* headers when a limit is set.
// Thread-safe; `clock` is not owned and must outlive the simulator.
class Simulator {
 public:
  Simulator(SimulatorOptions options, const Clock* clock);

  SimAction Handle(const SimHttpRequest& request);

  // Plain-text counters (Prometheus text format), for GET /metrics.
  std::string RenderMetrics() const;

  // The server reports requests it holds (delayed or hanging) for the in-flight gauge.
  void AddInFlight(int64_t delta) { in_flight_.fetch_add(delta, std::memory_order_relaxed); }

 private:
  SimAction HandleChat(const SimHttpRequest& request);
  void AddRateLimitHeaders(const RateLimitDecision& d, SimAction& action) const;
  void Finish(SimAction& action, absl::string_view fault, int64_t prompt_tokens,
              std::optional<bool> verdict, int64_t cached_tokens);

  const SimulatorOptions options_;
  const Clock* const clock_;
  RateLimiter rate_limiter_;
  PromptCache prompt_cache_;
  std::atomic<uint64_t> next_seq_{0};

  // Counters.
  std::atomic<int64_t> requests_{0};
  std::array<std::atomic<int64_t>, 600> by_status_{};
  std::array<std::atomic<int64_t>, kNumFaultKinds> by_fault_{};
  std::atomic<int64_t> rate_limited_{0};
  std::atomic<int64_t> prompt_tokens_{0};
  std::atomic<int64_t> completion_tokens_{0};
  std::atomic<int64_t> cached_tokens_{0};
  std::atomic<int64_t> in_flight_{0};
};

}  // namespace hb::sim
