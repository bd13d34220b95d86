#include "simulator/sim_core.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/json.h"
#include "common/base/json_io.h"
#include "simulator/sim_policy.h"
#include "simulator/sim_verdict.h"

namespace hb::sim {
namespace {

// The first of `keys` the JSON object `body` lacks at its top level, "" when it has them all
// (or is not an object: the request parser reports that).
std::string MissingBodyKey(absl::string_view body, const std::vector<std::string>& keys) {
  if (keys.empty()) return "";
  rapidjson::Document doc;
  if (!ParseJson(body, doc).ok() || !doc.IsObject()) return "";
  for (const std::string& key : keys) {
    if (FindJsonMember(doc, key) == nullptr) return key;
  }
  return "";
}

constexpr uint64_t kJitterStream = 100;

// Every kind but kNone: the labels of hb_sim_faults_total.
std::vector<std::string> InjectedFaultKinds() {
  std::vector<std::string> kinds;
  for (int k = 1; k < kNumFaultKinds; ++k) {
    kinds.emplace_back(FaultKindName(static_cast<FaultKind>(k)));
  }
  return kinds;
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

std::string BuildErrorBody(absl::string_view message, absl::string_view type,
                           absl::string_view code) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("error");
    w.StartObject();
    w.Key("message");
    WriteJsonString(w, message);
    w.Key("type");
    WriteJsonString(w, type);
    w.Key("param");
    w.Null();
    w.Key("code");
    if (code.empty()) {
      w.Null();
    } else {
      WriteJsonString(w, code);
    }
    w.EndObject();
    w.EndObject();
  });
}

std::string BuildCompletionBody(absl::string_view id, int64_t created_unix_seconds,
                                absl::string_view model, absl::string_view content,
                                const Usage& usage, absl::string_view finish_reason) {
  return WriteJson([&](JsonWriter& w) {
    auto str = [&w](absl::string_view s) { WriteJsonString(w, s); };
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
    str(finish_reason);
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
  });
}

namespace {

// The byte nearest the middle of `text` that starts a UTF-8 character.
size_t MiddleCharBoundary(absl::string_view text) {
  size_t at = text.size() / 2;
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  return at;
}

void WriteOutputText(JsonWriter& w, absl::string_view text) {
  w.StartObject();
  w.Key("type");
  w.String("output_text");
  w.Key("text");
  WriteJsonString(w, text);
  w.Key("annotations");
  w.StartArray();
  w.EndArray();
  w.EndObject();
}

void WriteResponsesUsage(JsonWriter& w, const Usage& usage) {
  w.StartObject();
  w.Key("input_tokens");
  w.Int64(usage.prompt_tokens);
  w.Key("input_tokens_details");
  w.StartObject();
  w.Key("cached_tokens");
  w.Int64(usage.cached_tokens);
  w.EndObject();
  w.Key("output_tokens");
  w.Int64(usage.completion_tokens);
  w.Key("output_tokens_details");
  w.StartObject();
  w.Key("reasoning_tokens");
  w.Int64(usage.reasoning_tokens);
  w.EndObject();
  w.Key("total_tokens");
  w.Int64(usage.prompt_tokens + usage.completion_tokens);
  w.EndObject();
}

}  // namespace

std::string BuildResponseBody(absl::string_view id, int64_t created_unix_seconds,
                              absl::string_view model, absl::string_view content,
                              const Usage& usage) {
  return WriteJson([&](JsonWriter& w) {
    auto str = [&w](absl::string_view s) { WriteJsonString(w, s); };
    w.StartObject();
    w.Key("id");
    str(absl::StrCat("resp_", id));
    w.Key("object");
    w.String("response");
    w.Key("created_at");
    w.Int64(created_unix_seconds);
    w.Key("status");
    w.String("completed");
    w.Key("model");
    str(model);
    w.Key("output");
    w.StartArray();
    w.StartObject();
    w.Key("type");
    w.String("reasoning");
    w.Key("id");
    str(absl::StrCat("rs_", id));
    w.Key("summary");
    w.StartArray();
    w.EndArray();
    w.EndObject();
    w.StartObject();
    w.Key("type");
    w.String("message");
    w.Key("id");
    str(absl::StrCat("msg_", id));
    w.Key("status");
    w.String("completed");
    w.Key("role");
    w.String("assistant");
    w.Key("content");
    w.StartArray();
    const size_t middle = MiddleCharBoundary(content);
    WriteOutputText(w, content.substr(0, middle));
    WriteOutputText(w, content.substr(middle));
    w.EndArray();
    w.EndObject();
    w.EndArray();
    w.Key("usage");
    WriteResponsesUsage(w, usage);
    w.EndObject();
  });
}

// ---------------------------------------------------------------------------------------------

Simulator::Simulator(SimulatorOptions options, const Clock* clock)
    : options_(std::move(options)),
      clock_(clock),
      rate_limiter_(options_.rate_limits, clock),
      prompt_cache_(options_.prompt_cache, clock),
      metrics_(InjectedFaultKinds()),
      batch_(options_.batch, clock, &metrics_, [this](const SimHttpRequest& chat) {
        return HandleChat(
            chat, /*policy=*/false,
            chat.path == "/v1/responses" ? GraderApi::kResponses : GraderApi::kChatCompletions);
      }) {}

SimAction Simulator::Handle(const SimHttpRequest& request) {
  SimAction action = Route(request);
  action.headers.emplace_back(kSimulatorHeader, "1");
  return action;
}

SimAction Simulator::Route(const SimHttpRequest& request) {
  const bool responses_path = request.path == "/v1/responses" || request.path == "/responses";
  const bool chat_path = request.path == "/v1/chat/completions" ||
                         request.path == "/chat/completions" || responses_path;
  SimAction action;
  if (chat_path && request.method == "POST") {
    return HandleChat(request, /*policy=*/false,
                      responses_path ? GraderApi::kResponses : GraderApi::kChatCompletions);
  }
  if (request.path == kPolicyChatPath && request.method == "POST") {
    return HandleChat(request, /*policy=*/true);
  }
  if (BatchService::Serves(request.path)) {
    if (std::string refused = Unauthorized(request); !refused.empty()) {
      action.status = 401;
      action.headers.emplace_back("Content-Type", kJsonType);
      action.body = BuildErrorBody(refused, "invalid_request_error", "invalid_api_key");
      return action;
    }
    return batch_.Handle(request);
  }
  if (request.method == "GET" && (request.path == "/v1/models" || request.path == "/models")) {
    // OpenAI's model list, authenticated like the grader requests: what a client's start-up
    // probe asks (llm/endpoint_preflight.h ProbeEndpoint). Not a grader request: not counted.
    action.headers.emplace_back("Content-Type", kJsonType);
    if (std::string refused = Unauthorized(request); !refused.empty()) {
      action.status = 401;
      action.body = BuildErrorBody(refused, "invalid_request_error", "invalid_api_key");
    } else {
      action.body = R"({"object":"list","data":[{"id":"hb-llm-sim","object":"model","created":0,)"
                    R"("owned_by":"hb-llm-sim"}]})";
    }
  } else if (request.method == "GET" && request.path == "/healthz") {
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
  metrics_.Response(status);
  action.log_line = WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("time");
    WriteJsonString(w,
                    absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", clock_->Now(), absl::UTCTimeZone()));
    w.Key("status");
    w.Int(status);
    w.Key("fault");
    WriteJsonString(w, fault);
    w.Key("latency_ms");
    WriteRawJson(w, JsonNumber(absl::ToDoubleMilliseconds(action.delay)), rapidjson::kNumberType);
    w.Key("prompt_tokens");
    w.Int64(prompt_tokens);
    w.Key("cached_tokens");
    w.Int64(cached_tokens);
    w.Key("verdict");
    if (verdict.has_value()) {
      w.Bool(*verdict);
    } else {
      w.Null();
    }
    w.EndObject();
  });
}

std::string Simulator::Unauthorized(const SimHttpRequest& request) const {
  if (!options_.api_key.empty() &&
      request.authorization != absl::StrCat("Bearer ", options_.api_key)) {
    return "Incorrect API key provided. The simulator was started with --api-key.";
  }
  for (const auto& [name, value] : options_.required_headers) {
    bool found = false;
    for (const auto& [got_name, got_value] : request.headers) {
      found = found || (absl::EqualsIgnoreCase(got_name, name) && got_value == value);
    }
    if (!found) {
      return absl::StrCat("Missing or wrong header ", name,
                          ": the simulator was started with --require-header ", name, "=...");
    }
  }
  return "";
}

SimAction Simulator::HandleChat(const SimHttpRequest& request, bool policy, GraderApi api) {
  metrics_.Request();
  SimAction action;
  action.is_chat = true;
  action.headers.emplace_back("Content-Type", kJsonType);
  const std::optional<ParsedChatRequest> parsed = AcceptChat(request, policy, api, action);
  if (!parsed.has_value()) return action;
  const std::string prompt = PromptText(*parsed);
  const int64_t prompt_tokens = EstimateTokens(prompt);
  if (!Admit(*parsed, prompt_tokens, action)) return action;

  const uint64_t seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
  const FaultKind fault = ChooseFault(options_.faults, options_.seed, seq);
  if (fault != FaultKind::kNone) metrics_.Fault(FaultKindName(fault));
  metrics_.PromptTokens(prompt_tokens);
  SetLatency(policy, seq, action);
  if (AnswerWithFault(fault, prompt_tokens, action)) return action;

  const absl::string_view fault_name = FaultKindName(fault);
  if (policy) return PolicyAction(std::move(action), *parsed, prompt, seq, fault_name);
  const bool met = SimulatedVerdict(LastUserMessage(*parsed));
  const std::string content = FaultReplyContent(fault, met, seq);
  Usage usage;
  action.body = GraderReplyBody(*parsed, prompt, seq, content, usage);
  Finish(action, fault_name, prompt_tokens,
         fault == FaultKind::kNone || fault == FaultKind::kFenced ? std::optional<bool>(met)
                                                                  : std::nullopt,
         usage.cached_tokens);
  return action;
}

std::optional<ParsedChatRequest> Simulator::AcceptChat(const SimHttpRequest& request, bool policy,
                                                       GraderApi api, SimAction& action) {
  if (std::string refused = Unauthorized(request); !refused.empty()) {
    Refuse(action, 401, BuildErrorBody(refused, "invalid_request_error", "invalid_api_key"));
    return std::nullopt;
  }
  absl::StatusOr<ParsedChatRequest> parsed = api == GraderApi::kResponses
                                                 ? ParseResponsesRequest(request.body)
                                                 : ParseChatRequest(request.body);
  if (!parsed.ok()) {
    Refuse(action, 400, BuildErrorBody(parsed.status().message(), "invalid_request_error"));
    return std::nullopt;
  }
  if (!policy) {
    if (std::string missing = MissingBodyKey(request.body, options_.required_body_keys);
        !missing.empty()) {
      Refuse(action, 400,
             BuildErrorBody(absl::StrCat("Missing required parameter: '", missing,
                                         "' (the simulator was started with --require-body-key ",
                                         missing, ")."),
                            "invalid_request_error", "missing_required_parameter"));
      return std::nullopt;
    }
  }
  if (policy && !PolicyServesModel(options_.policy_models, parsed->model)) {
    Refuse(action, 404,
           BuildErrorBody(ModelNotFoundMessage(parsed->model), "invalid_request_error",
                          "model_not_found"));
    return std::nullopt;
  }
  return *std::move(parsed);
}

void Simulator::Refuse(SimAction& action, int status, std::string body) {
  action.status = status;
  action.body = std::move(body);
  AddRateLimitHeaders(rate_limiter_.Peek(), action);
  Finish(action, "none", 0, std::nullopt, 0);
}

bool Simulator::Admit(const ParsedChatRequest& parsed, int64_t prompt_tokens, SimAction& action) {
  const RateLimitDecision limit = rate_limiter_.Acquire(prompt_tokens + parsed.max_tokens);
  AddRateLimitHeaders(limit, action);
  if (limit.admitted) return true;
  metrics_.RateLimited();
  action.status = 429;
  const bool too_large = limit.tokens_exceeded && options_.rate_limits.tpm > 0 &&
                         prompt_tokens + parsed.max_tokens > options_.rate_limits.tpm;
  action.body = BuildErrorBody(
      too_large
          ? absl::StrCat("Request too large: ", prompt_tokens + parsed.max_tokens,
                         " tokens requested, limit ", options_.rate_limits.tpm, " tokens per min.")
          : absl::StrCat(
                "Rate limit reached for ", limit.requests_exceeded ? "requests" : "tokens",
                ". Limit ", limit.requests_exceeded ? limit.limit_requests : limit.limit_tokens,
                " per min. Please try again in ", FormatResetDuration(limit.retry_after), "."),
      limit.requests_exceeded ? "requests" : "tokens", "rate_limit_exceeded");
  action.headers.emplace_back("retry-after", RetryAfterSeconds(limit.retry_after));
  action.headers.emplace_back("retry-after-ms", RetryAfterMs(limit.retry_after));
  Finish(action, "none", prompt_tokens, std::nullopt, 0);
  return false;
}

void Simulator::SetLatency(bool policy, uint64_t seq, SimAction& action) const {
  const double latency_ms =
      policy && options_.policy_latency_ms >= 0 ? options_.policy_latency_ms : options_.latency_ms;
  if (latency_ms <= 0) return;
  const double u = 2 * Uniform01(options_.seed, seq, kJitterStream) - 1;
  const double ms = std::max(0.0, latency_ms * (1 + options_.latency_jitter * u));
  action.delay = absl::Microseconds(static_cast<int64_t>(std::llround(ms * 1000)));
}

bool Simulator::AnswerWithFault(FaultKind fault, int64_t prompt_tokens, SimAction& action) {
  const absl::string_view fault_name = FaultKindName(fault);
  switch (fault) {
    case FaultKind::kReset:
      action.kind = SimAction::Kind::kReset;
      break;
    case FaultKind::kHang:
      action.kind = SimAction::Kind::kHang;
      action.delay = absl::InfiniteDuration();
      break;
    case FaultKind::k429: {
      const absl::Duration retry = absl::Milliseconds(options_.retry_after_ms);
      action.status = 429;
      action.delay = absl::ZeroDuration();
      action.body = BuildErrorBody("Rate limit reached (simulated fault). Please retry.",
                                   "requests", "rate_limit_exceeded");
      action.headers.emplace_back("retry-after", RetryAfterSeconds(retry));
      action.headers.emplace_back("retry-after-ms", RetryAfterMs(retry));
      break;
    }
    case FaultKind::k500:
      action.status = 500;
      action.body = BuildErrorBody(
          "The server had an error while processing your request "
          "(simulated fault).",
          "server_error");
      break;
    case FaultKind::k503:
      action.status = 503;
      action.body = BuildErrorBody("The engine is currently overloaded (simulated fault).",
                                   "server_error", "service_unavailable");
      break;
    default:
      return false;
  }
  Finish(action, fault_name, prompt_tokens, std::nullopt, 0);
  return true;
}

std::string Simulator::GraderReplyBody(const ParsedChatRequest& parsed, const std::string& prompt,
                                       uint64_t seq, absl::string_view content, Usage& usage) {
  usage.prompt_tokens = EstimateTokens(prompt);
  usage.reasoning_tokens = SimulatedReasoningTokens(parsed.reasoning_effort);
  usage.completion_tokens = EstimateTokens(content) + usage.reasoning_tokens;
  usage.cached_tokens = prompt_cache_.LookupAndStore(parsed.prompt_cache_key, prompt);
  metrics_.CompletionTokens(usage.completion_tokens);
  metrics_.CachedTokens(usage.cached_tokens);
  const int64_t now = absl::ToUnixSeconds(clock_->Now());
  if (parsed.api == GraderApi::kResponses) {
    return BuildResponseBody(absl::StrFormat("sim%016x", seq), now, parsed.model, content, usage);
  }
  return BuildCompletionBody(absl::StrFormat("chatcmpl-sim-%016x", seq), now, parsed.model, content,
                             usage);
}

SimAction Simulator::PolicyAction(SimAction action, const ParsedChatRequest& parsed,
                                  const std::string& prompt, uint64_t seq,
                                  absl::string_view fault_name) {
  // Content faults (malformed, nonobject, fenced) are grader-reply shapes: a policy's reply is
  // prose, so they leave it unchanged.
  const PolicyReply reply = SimulatedPolicyReply(parsed);
  Usage usage;
  usage.prompt_tokens = EstimateTokens(prompt);
  usage.completion_tokens = reply.completion_tokens;
  usage.cached_tokens = prompt_cache_.LookupAndStore(parsed.prompt_cache_key, prompt);
  metrics_.CompletionTokens(usage.completion_tokens);
  metrics_.CachedTokens(usage.cached_tokens);
  action.body = BuildCompletionBody(absl::StrFormat("chatcmpl-sim-%016x", seq),
                                    absl::ToUnixSeconds(clock_->Now()), parsed.model, reply.content,
                                    usage, reply.finish_reason);
  Finish(action, fault_name, usage.prompt_tokens, std::nullopt, usage.cached_tokens);
  return action;
}

}  // namespace hb::sim
