#include "simulator/sim_core.h"

#include <algorithm>
#include <cmath>

#include "absl/hash/hash.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/json.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "simulator/sim_verdict.h"

namespace hb::sim {
namespace {

constexpr int64_t kBlockBytes = PromptCache::kBlockTokens * 4;
constexpr size_t kMinBlocks = PromptCache::kMinCachedTokens / PromptCache::kBlockTokens;
constexpr uint64_t kJitterStream = 100;
constexpr char kJsonType[] = "application/json";

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// chain[i] identifies blocks 0..i of `text` (full 512-byte blocks only).
std::vector<uint64_t> BlockChain(absl::string_view text, size_t max_blocks) {
  const size_t blocks = std::min<size_t>(text.size() / kBlockBytes, max_blocks);
  std::vector<uint64_t> chain;
  chain.reserve(blocks);
  uint64_t h = 0x6862'6c6c'6d73'696dULL;
  for (size_t i = 0; i < blocks; ++i) {
    h = absl::Hash<std::pair<uint64_t, absl::string_view>>{}(
        std::make_pair(h, text.substr(i * kBlockBytes, kBlockBytes)));
    chain.push_back(h);
  }
  return chain;
}

std::string RetryAfterSeconds(absl::Duration d) {
  // HTTP Retry-After is whole seconds; round up so a client never retries too early.
  return absl::StrCat(std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(d, absl::Seconds(1)))));
}

std::string RetryAfterMs(absl::Duration d) {
  return absl::StrCat(
      std::max<int64_t>(0, absl::ToInt64Milliseconds(absl::Ceil(d, absl::Milliseconds(1)))));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

absl::StatusOr<ChatRequest> ParseChatRequest(absl::string_view body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request body is not valid JSON: ", rapidjson::GetParseError_En(doc.GetParseError()),
        " at offset ", doc.GetErrorOffset()));
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError("request body must be a JSON object");
  }
  ChatRequest request;
  if (auto it = doc.FindMember("model"); it != doc.MemberEnd()) {
    if (!it->value.IsString()) return absl::InvalidArgumentError("'model' must be a string");
    request.model.assign(it->value.GetString(), it->value.GetStringLength());
  }
  if (request.model.empty()) request.model = "hb-llm-sim";
  auto messages = doc.FindMember("messages");
  if (messages == doc.MemberEnd()) {
    return absl::InvalidArgumentError("'messages' is a required property");
  }
  if (!messages->value.IsArray() || messages->value.Empty()) {
    return absl::InvalidArgumentError("'messages' must be a non-empty array");
  }
  int index = 0;
  for (const auto& m : messages->value.GetArray()) {
    if (!m.IsObject()) {
      return absl::InvalidArgumentError(absl::StrCat("messages[", index, "] must be an object"));
    }
    auto role = m.FindMember("role");
    if (role == m.MemberEnd() || !role->value.IsString()) {
      return absl::InvalidArgumentError(
          absl::StrCat("messages[", index, "].role must be a string"));
    }
    ChatMessage message;
    message.role.assign(role->value.GetString(), role->value.GetStringLength());
    if (auto content = m.FindMember("content"); content != m.MemberEnd()) {
      const auto& c = content->value;
      if (c.IsString()) {
        message.content.assign(c.GetString(), c.GetStringLength());
      } else if (c.IsArray()) {
        for (const auto& part : c.GetArray()) {
          if (!part.IsObject()) continue;
          auto text = part.FindMember("text");
          if (text != part.MemberEnd() && text->value.IsString()) {
            message.content.append(text->value.GetString(), text->value.GetStringLength());
          }
        }
      } else if (!c.IsNull()) {
        return absl::InvalidArgumentError(
            absl::StrCat("messages[", index, "].content must be a string, an array or null"));
      }
    }
    request.messages.push_back(std::move(message));
    ++index;
  }
  if (auto it = doc.FindMember("temperature"); it != doc.MemberEnd() && !it->value.IsNull()) {
    if (!it->value.IsNumber() || it->value.GetDouble() < 0 || it->value.GetDouble() > 2) {
      return absl::InvalidArgumentError("'temperature' must be a number between 0 and 2");
    }
    request.temperature = it->value.GetDouble();
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = doc.FindMember(key);
    if (it == doc.MemberEnd() || it->value.IsNull()) continue;
    if (!it->value.IsInt64() || it->value.GetInt64() < 1) {
      return absl::InvalidArgumentError(absl::StrCat("'", key, "' must be a positive integer"));
    }
    if (request.max_tokens == 0) request.max_tokens = it->value.GetInt64();
  }
  if (auto it = doc.FindMember("prompt_cache_key"); it != doc.MemberEnd() && !it->value.IsNull()) {
    if (!it->value.IsString()) {
      return absl::InvalidArgumentError("'prompt_cache_key' must be a string");
    }
    request.prompt_cache_key.assign(it->value.GetString(), it->value.GetStringLength());
  }
  return request;
}

int64_t EstimateTokens(absl::string_view text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

std::string PromptText(const ChatRequest& request) {
  size_t size = 0;
  for (const auto& m : request.messages) size += m.content.size();
  std::string text;
  text.reserve(size);
  for (const auto& m : request.messages) text += m.content;
  return text;
}

absl::string_view LastUserMessage(const ChatRequest& request) {
  for (auto it = request.messages.rbegin(); it != request.messages.rend(); ++it) {
    if (it->role == "user") return it->content;
  }
  return {};
}

// ---------------------------------------------------------------------------------------------

PromptCache::PromptCache(Options options, const Clock* clock) : options_(options), clock_(clock) {}

int64_t PromptCache::LookupAndStore(absl::string_view prompt_cache_key,
                                    absl::string_view prompt_text) {
  std::vector<uint64_t> chain = BlockChain(prompt_text, prompt_text.size());
  if (chain.size() < kMinBlocks) return 0;
  std::string key = prompt_cache_key.empty() ? absl::StrCat("prefix:", chain[kMinBlocks - 1])
                                             : absl::StrCat("key:", prompt_cache_key);
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  int64_t cached = 0;
  auto it = entries_.find(key);
  if (it != entries_.end() && now - it->second.last_used <= options_.ttl) {
    const auto& old = it->second.chain;
    size_t shared = 0;
    while (shared < old.size() && shared < chain.size() && old[shared] == chain[shared]) {
      ++shared;
    }
    if (shared >= kMinBlocks) cached = static_cast<int64_t>(shared) * kBlockTokens;
  }
  if (it == entries_.end() && entries_.size() >= options_.max_entries) {
    absl::erase_if(entries_,
                   [&](const auto& kv) { return now - kv.second.last_used > options_.ttl; });
    if (entries_.size() >= options_.max_entries) entries_.erase(entries_.begin());
  }
  Entry& entry = entries_[key];
  entry.chain = std::move(chain);
  entry.last_used = now;
  return cached;
}

// ---------------------------------------------------------------------------------------------

RateLimiter::RateLimiter(Options options, const Clock* clock) : options_(options), clock_(clock) {}

void RateLimiter::RollLocked(absl::Time now) {
  if (window_end_.has_value() && now >= *window_end_) {
    window_end_.reset();
    requests_used_ = 0;
    tokens_used_ = 0;
  }
}

RateLimitDecision RateLimiter::StateLocked(absl::Time now) {
  RateLimitDecision d;
  d.limit_requests = options_.rpm;
  d.limit_tokens = options_.tpm;
  d.remaining_requests = std::max<int64_t>(0, options_.rpm - requests_used_);
  d.remaining_tokens = std::max<int64_t>(0, options_.tpm - tokens_used_);
  d.reset = window_end_.has_value() ? *window_end_ - now : absl::ZeroDuration();
  return d;
}

RateLimitDecision RateLimiter::Acquire(int64_t tokens) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  RollLocked(now);
  const bool requests_exceeded = options_.rpm > 0 && requests_used_ + 1 > options_.rpm;
  const bool tokens_exceeded = options_.tpm > 0 && tokens_used_ + tokens > options_.tpm;
  if (requests_exceeded || tokens_exceeded) {
    RateLimitDecision d = StateLocked(now);
    d.admitted = false;
    d.requests_exceeded = requests_exceeded;
    d.tokens_exceeded = tokens_exceeded;
    // An empty window can only refuse a request larger than the whole budget.
    d.retry_after = window_end_.has_value() ? d.reset : options_.window;
    return d;
  }
  if (enabled() && !window_end_.has_value()) window_end_ = now + options_.window;
  ++requests_used_;
  tokens_used_ += tokens;
  return StateLocked(now);
}

RateLimitDecision RateLimiter::Peek() {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  RollLocked(now);
  return StateLocked(now);
}

std::string FormatResetDuration(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return "0s";
  return absl::FormatDuration(absl::Ceil(d, absl::Milliseconds(1)));
}

// ---------------------------------------------------------------------------------------------

absl::string_view FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kNone:
      return "none";
    case FaultKind::kReset:
      return "reset";
    case FaultKind::kHang:
      return "hang";
    case FaultKind::k429:
      return "429";
    case FaultKind::k500:
      return "500";
    case FaultKind::k503:
      return "503";
    case FaultKind::kMalformed:
      return "malformed";
    case FaultKind::kNonObject:
      return "nonobject";
    case FaultKind::kFenced:
      return "fenced";
  }
  return "unknown";
}

double Uniform01(uint64_t seed, uint64_t seq, uint64_t stream) {
  const uint64_t x = SplitMix64(SplitMix64(SplitMix64(seed) ^ seq) ^ stream);
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

FaultKind ChooseFault(const FaultRates& rates, uint64_t seed, uint64_t seq) {
  const std::pair<FaultKind, double> order[] = {
      {FaultKind::kReset, rates.reset},         {FaultKind::kHang, rates.hang},
      {FaultKind::k429, rates.status_429},      {FaultKind::k500, rates.status_500},
      {FaultKind::k503, rates.status_503},      {FaultKind::kMalformed, rates.malformed},
      {FaultKind::kNonObject, rates.nonobject}, {FaultKind::kFenced, rates.fenced},
  };
  uint64_t stream = 0;
  for (const auto& [kind, rate] : order) {
    if (Uniform01(seed, seq, stream++) < rate) return kind;
  }
  return FaultKind::kNone;
}

std::string FaultReplyContent(FaultKind kind, bool met, uint64_t seq) {
  const std::string correct = SimulatedReplyContent(met);
  switch (kind) {
    case FaultKind::kMalformed:
      switch (seq % 3) {
        case 0:
          return correct.substr(0, correct.size() - 1);
        case 1:
          return correct + " (simulated trailing text)";
        default:
          return absl::StrCat("{'explanation': 'simulated malformed reply', 'criteria_met': ",
                              met ? "True" : "False", "}");
      }
    case FaultKind::kNonObject:
      switch (seq % 3) {
        case 0:
          return "42";
        case 1:
          return "\"criteria_met\"";
        default:
          return "[true]";
      }
    case FaultKind::kFenced:
      return absl::StrCat("```json\n", correct, "\n```");
    default:
      return correct;
  }
}

// ---------------------------------------------------------------------------------------------

std::string BuildErrorBody(absl::string_view message, absl::string_view type,
                           absl::string_view code) {
  return absl::StrCat("{\"error\":{\"message\":", JsonQuote(message), ",\"type\":", JsonQuote(type),
                      ",\"param\":null,\"code\":", code.empty() ? "null" : JsonQuote(code), "}}");
}

std::string BuildCompletionBody(absl::string_view id, int64_t created_unix_seconds,
                                absl::string_view model, absl::string_view content,
                                const Usage& usage) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto str = [&w](absl::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.StartObject();
  w.Key("id");
  str(id);
  w.Key("object");
  w.String("chat.completion");
  w.Key("created");
  w.Int64(created_unix_seconds);
  w.Key("model");
  str(model);
  w.Key("choices");
  w.StartArray();
  w.StartObject();
  w.Key("index");
  w.Int(0);
  w.Key("message");
  w.StartObject();
  w.Key("role");
  w.String("assistant");
  w.Key("content");
  str(content);
  w.Key("refusal");
  w.Null();
  w.EndObject();
  w.Key("logprobs");
  w.Null();
  w.Key("finish_reason");
  w.String("stop");
  w.EndObject();
  w.EndArray();
  w.Key("usage");
  w.StartObject();
  w.Key("prompt_tokens");
  w.Int64(usage.prompt_tokens);
  w.Key("completion_tokens");
  w.Int64(usage.completion_tokens);
  w.Key("total_tokens");
  w.Int64(usage.prompt_tokens + usage.completion_tokens);
  w.Key("prompt_tokens_details");
  w.StartObject();
  w.Key("cached_tokens");
  w.Int64(usage.cached_tokens);
  w.EndObject();
  w.EndObject();
  w.Key("system_fingerprint");
  w.String("hb-llm-sim");
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// ---------------------------------------------------------------------------------------------

Simulator::Simulator(SimulatorOptions options, const Clock* clock)
    : options_(std::move(options)),
      clock_(clock),
      rate_limiter_(options_.rate_limits, clock),
      prompt_cache_(options_.prompt_cache, clock) {}

SimAction Simulator::Handle(const SimHttpRequest& request) {
  const bool chat_path =
      request.path == "/v1/chat/completions" || request.path == "/chat/completions";
  SimAction action;
  if (chat_path && request.method == "POST") return HandleChat(request);
  if (request.method == "GET" && request.path == "/healthz") {
    action.headers.emplace_back("Content-Type", "text/plain");
    action.body = "ok\n";
  } else if (request.method == "GET" && request.path == "/metrics") {
    action.headers.emplace_back("Content-Type", "text/plain; version=0.0.4");
    action.body = RenderMetrics();
  } else if (chat_path || request.path == "/healthz" || request.path == "/metrics") {
    action.status = 405;
    action.headers.emplace_back("Content-Type", kJsonType);
    action.body = BuildErrorBody(absl::StrCat("method ", request.method, " not allowed"),
                                 "invalid_request_error");
  } else {
    action.status = 404;
    action.headers.emplace_back("Content-Type", kJsonType);
    action.body = BuildErrorBody(absl::StrCat("unknown path ", request.path),
                                 "invalid_request_error", "unknown_url");
  }
  return action;
}

void Simulator::AddRateLimitHeaders(const RateLimitDecision& d, SimAction& action) const {
  const std::string reset = FormatResetDuration(d.reset);
  if (d.limit_requests > 0) {
    action.headers.emplace_back("x-ratelimit-limit-requests", absl::StrCat(d.limit_requests));
    action.headers.emplace_back("x-ratelimit-remaining-requests",
                                absl::StrCat(d.remaining_requests));
    action.headers.emplace_back("x-ratelimit-reset-requests", reset);
  }
  if (d.limit_tokens > 0) {
    action.headers.emplace_back("x-ratelimit-limit-tokens", absl::StrCat(d.limit_tokens));
    action.headers.emplace_back("x-ratelimit-remaining-tokens", absl::StrCat(d.remaining_tokens));
    action.headers.emplace_back("x-ratelimit-reset-tokens", reset);
  }
}

void Simulator::Finish(SimAction& action, absl::string_view fault, int64_t prompt_tokens,
                       std::optional<bool> verdict, int64_t cached_tokens) {
  const int status = action.kind == SimAction::Kind::kReply ? action.status : 0;
  if (status > 0 && status < static_cast<int>(by_status_.size())) {
    by_status_[status].fetch_add(1, std::memory_order_relaxed);
  }
  action.log_line = absl::StrCat(
      "{\"time\":",
      JsonQuote(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", clock_->Now(), absl::UTCTimeZone())),
      ",\"status\":", status, ",\"fault\":", JsonQuote(fault),
      ",\"latency_ms\":", JsonNumber(absl::ToDoubleMilliseconds(action.delay)),
      ",\"prompt_tokens\":", prompt_tokens, ",\"cached_tokens\":", cached_tokens,
      ",\"verdict\":", verdict.has_value() ? (*verdict ? "true" : "false") : "null", "}");
}

SimAction Simulator::HandleChat(const SimHttpRequest& request) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  SimAction action;
  action.is_chat = true;
  action.headers.emplace_back("Content-Type", kJsonType);

  if (!options_.api_key.empty() &&
      request.authorization != absl::StrCat("Bearer ", options_.api_key)) {
    action.status = 401;
    action.body =
        BuildErrorBody("Incorrect API key provided. The simulator was started with --api-key.",
                       "invalid_request_error", "invalid_api_key");
    AddRateLimitHeaders(rate_limiter_.Peek(), action);
    Finish(action, "none", 0, std::nullopt, 0);
    return action;
  }

  absl::StatusOr<ChatRequest> parsed = ParseChatRequest(request.body);
  if (!parsed.ok()) {
    action.status = 400;
    action.body = BuildErrorBody(parsed.status().message(), "invalid_request_error");
    AddRateLimitHeaders(rate_limiter_.Peek(), action);
    Finish(action, "none", 0, std::nullopt, 0);
    return action;
  }
  const std::string prompt = PromptText(*parsed);
  const int64_t prompt_tokens = EstimateTokens(prompt);

  const RateLimitDecision limit = rate_limiter_.Acquire(prompt_tokens + parsed->max_tokens);
  AddRateLimitHeaders(limit, action);
  if (!limit.admitted) {
    rate_limited_.fetch_add(1, std::memory_order_relaxed);
    action.status = 429;
    const bool too_large = limit.tokens_exceeded && options_.rate_limits.tpm > 0 &&
                           prompt_tokens + parsed->max_tokens > options_.rate_limits.tpm;
    action.body = BuildErrorBody(
        too_large
            ? absl::StrCat("Request too large: ", prompt_tokens + parsed->max_tokens,
                           " tokens requested, limit ", options_.rate_limits.tpm,
                           " tokens per min.")
            : absl::StrCat(
                  "Rate limit reached for ", limit.requests_exceeded ? "requests" : "tokens",
                  ". Limit ", limit.requests_exceeded ? limit.limit_requests : limit.limit_tokens,
                  " per min. Please try again in ", FormatResetDuration(limit.retry_after), "."),
        limit.requests_exceeded ? "requests" : "tokens", "rate_limit_exceeded");
    action.headers.emplace_back("retry-after", RetryAfterSeconds(limit.retry_after));
    action.headers.emplace_back("retry-after-ms", RetryAfterMs(limit.retry_after));
    Finish(action, "none", prompt_tokens, std::nullopt, 0);
    return action;
  }

  const uint64_t seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
  const FaultKind fault = ChooseFault(options_.faults, options_.seed, seq);
  by_fault_[static_cast<int>(fault)].fetch_add(1, std::memory_order_relaxed);
  prompt_tokens_.fetch_add(prompt_tokens, std::memory_order_relaxed);

  if (options_.latency_ms > 0) {
    const double u = 2 * Uniform01(options_.seed, seq, kJitterStream) - 1;
    const double ms = std::max(0.0, options_.latency_ms * (1 + options_.latency_jitter * u));
    action.delay = absl::Microseconds(static_cast<int64_t>(std::llround(ms * 1000)));
  }

  const absl::string_view fault_name = FaultKindName(fault);
  switch (fault) {
    case FaultKind::kReset:
      action.kind = SimAction::Kind::kReset;
      Finish(action, fault_name, prompt_tokens, std::nullopt, 0);
      return action;
    case FaultKind::kHang:
      action.kind = SimAction::Kind::kHang;
      action.delay = absl::InfiniteDuration();
      Finish(action, fault_name, prompt_tokens, std::nullopt, 0);
      return action;
    case FaultKind::k429: {
      const absl::Duration retry = absl::Milliseconds(options_.retry_after_ms);
      action.status = 429;
      action.delay = absl::ZeroDuration();
      action.body = BuildErrorBody("Rate limit reached (simulated fault). Please retry.",
                                   "requests", "rate_limit_exceeded");
      action.headers.emplace_back("retry-after", RetryAfterSeconds(retry));
      action.headers.emplace_back("retry-after-ms", RetryAfterMs(retry));
      Finish(action, fault_name, prompt_tokens, std::nullopt, 0);
      return action;
    }
    case FaultKind::k500:
      action.status = 500;
      action.body = BuildErrorBody(
          "The server had an error while processing your request "
          "(simulated fault).",
          "server_error");
      Finish(action, fault_name, prompt_tokens, std::nullopt, 0);
      return action;
    case FaultKind::k503:
      action.status = 503;
      action.body = BuildErrorBody("The engine is currently overloaded (simulated fault).",
                                   "server_error", "service_unavailable");
      Finish(action, fault_name, prompt_tokens, std::nullopt, 0);
      return action;
    default:
      break;
  }

  const bool met = SimulatedVerdict(LastUserMessage(*parsed));
  const std::string content = FaultReplyContent(fault, met, seq);
  Usage usage;
  usage.prompt_tokens = prompt_tokens;
  usage.completion_tokens = EstimateTokens(content);
  usage.cached_tokens = prompt_cache_.LookupAndStore(parsed->prompt_cache_key, prompt);
  completion_tokens_.fetch_add(usage.completion_tokens, std::memory_order_relaxed);
  cached_tokens_.fetch_add(usage.cached_tokens, std::memory_order_relaxed);
  const absl::Time now = clock_->Now();
  action.body = BuildCompletionBody(absl::StrFormat("chatcmpl-sim-%016x", seq),
                                    absl::ToUnixSeconds(now), parsed->model, content, usage);
  Finish(action, fault_name, prompt_tokens,
         fault == FaultKind::kNone || fault == FaultKind::kFenced ? std::optional<bool>(met)
                                                                  : std::nullopt,
         usage.cached_tokens);
  return action;
}

std::string Simulator::RenderMetrics() const {
  std::string out;
  auto line = [&out](absl::string_view name, absl::string_view labels, int64_t value) {
    absl::StrAppend(&out, name, labels, " ", value, "\n");
  };
  out += "# TYPE hb_sim_requests_total counter\n";
  line("hb_sim_requests_total", "", requests_.load(std::memory_order_relaxed));
  out += "# TYPE hb_sim_responses_total counter\n";
  for (size_t status = 0; status < by_status_.size(); ++status) {
    const int64_t n = by_status_[status].load(std::memory_order_relaxed);
    if (n > 0) line("hb_sim_responses_total", absl::StrCat("{status=\"", status, "\"}"), n);
  }
  out += "# TYPE hb_sim_faults_total counter\n";
  for (int k = 1; k < kNumFaultKinds; ++k) {
    line("hb_sim_faults_total",
         absl::StrCat("{kind=\"", FaultKindName(static_cast<FaultKind>(k)), "\"}"),
         by_fault_[k].load(std::memory_order_relaxed));
  }
  out += "# TYPE hb_sim_rate_limited_total counter\n";
  line("hb_sim_rate_limited_total", "", rate_limited_.load(std::memory_order_relaxed));
  out += "# TYPE hb_sim_prompt_tokens_total counter\n";
  line("hb_sim_prompt_tokens_total", "", prompt_tokens_.load(std::memory_order_relaxed));
  out += "# TYPE hb_sim_completion_tokens_total counter\n";
  line("hb_sim_completion_tokens_total", "", completion_tokens_.load(std::memory_order_relaxed));
  out += "# TYPE hb_sim_cached_tokens_total counter\n";
  line("hb_sim_cached_tokens_total", "", cached_tokens_.load(std::memory_order_relaxed));
  out += "# TYPE hb_sim_in_flight gauge\n";
  line("hb_sim_in_flight", "", in_flight_.load(std::memory_order_relaxed));
  return out;
}

}  // namespace hb::sim
