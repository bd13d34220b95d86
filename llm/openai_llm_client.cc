#include "llm/openai_llm_client.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "rapidjson/document.h"

namespace hb {
namespace {

constexpr size_t kMaxErrorText = 512;

std::string Scrub(std::string text, absl::string_view api_key) {
  if (!api_key.empty()) absl::StrReplaceAll({{api_key, "[redacted]"}}, &text);
  if (text.size() > kMaxErrorText) {
    text.resize(kMaxErrorText);
    text += "...";
  }
  return text;
}

// The backend's own explanation: error.message from an OpenAI-style error body, else the body.
std::string BackendMessage(const HttpResponse& response, absl::string_view api_key) {
  rapidjson::Document doc;
  if (ParseJson(response.body, doc).ok() && doc.IsObject()) {
    auto error = doc.FindMember("error");
    if (error != doc.MemberEnd()) {
      if (error->value.IsObject()) {
        auto message = error->value.FindMember("message");
        if (message != error->value.MemberEnd() && message->value.IsString()) {
          return Scrub(message->value.GetString(), api_key);
        }
      } else if (error->value.IsString()) {
        return Scrub(error->value.GetString(), api_key);
      }
    }
  }
  return Scrub(std::string(absl::StripAsciiWhitespace(response.body)), api_key);
}

std::optional<int64_t> IntHeader(const HttpResponse& response, absl::string_view name) {
  const std::string* value = response.Header(name);
  int64_t n = 0;
  if (value != nullptr && absl::SimpleAtoi(*value, &n)) return n;
  return std::nullopt;
}

std::string StatusLabel(const absl::StatusOr<HttpResponse>& result) {
  if (result.ok()) return absl::StrCat(result->status_code);
  switch (result.status().code()) {
    case absl::StatusCode::kDeadlineExceeded:
      return "timeout";
    case absl::StatusCode::kCancelled:
      return "cancelled";
    default:
      return "connection";
  }
}

// A token count: a whole number in [0, 1e12]. Anything else (negative, fractional, 1e300, a
// string) is not a count the endpoint can mean and reads as 0, so it cannot poison the totals
// (casting 1e300 to int64 is undefined and came out negative).
int64_t Int64Member(const rapidjson::Value& object, const char* name) {
  constexpr double kMaxCount = 1e12;
  if (!object.IsObject()) return 0;
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsNumber()) return 0;
  if (it->value.IsInt64()) {
    const int64_t n = it->value.GetInt64();
    return n >= 0 && n <= static_cast<int64_t>(kMaxCount) ? n : 0;
  }
  const double d = it->value.GetDouble();
  return d >= 0 && d <= kMaxCount && d == std::floor(d) ? static_cast<int64_t>(d) : 0;
}

// Whether object[name] is the string `value`.
bool JsonStringEquals(const rapidjson::Value& object, const char* name, absl::string_view value) {
  auto it = object.FindMember(name);
  return it != object.MemberEnd() && it->value.IsString() &&
         absl::string_view(it->value.GetString(), it->value.GetStringLength()) == value;
}

// A Go/absl-style duration header ("6m0s", "58.8s", "250ms", "1m"); also a bare number of
// seconds. std::nullopt when absent, unparsable or negative.
std::optional<absl::Duration> DurationHeader(const HttpResponse& response, absl::string_view name) {
  const std::string* value = response.Header(name);
  if (value == nullptr) return std::nullopt;
  absl::Duration d;
  double seconds = 0;
  if (absl::ParseDuration(*value, &d) && d >= absl::ZeroDuration()) return d;
  if (absl::SimpleAtod(*value, &seconds) && seconds >= 0) return absl::Seconds(seconds);
  return std::nullopt;
}

absl::Status Malformed(std::string message) {
  return WithAttemptOutcome(absl::UnavailableError(std::move(message)),
                            {FailureKind::kMalformedReply, std::nullopt});
}

}  // namespace

std::optional<absl::Duration> RetryAfterOf(const HttpResponse& response) {
  if (const std::string* ms = response.Header("retry-after-ms")) {
    double value = 0;
    if (absl::SimpleAtod(*ms, &value) && value >= 0) return absl::Milliseconds(value);
  }
  if (const std::string* s = response.Header("retry-after")) {
    double value = 0;
    // An HTTP-date form is rare for APIs and is ignored (the backoff applies).
    if (absl::SimpleAtod(*s, &value) && value >= 0) return absl::Seconds(value);
  }
  return std::nullopt;
}

namespace {

// A non-2xx answer as a status with its AttemptOutcome.
absl::Status HttpFailure(const HttpResponse& response, absl::string_view api_key) {
  const int code = response.status_code;
  std::string message =
      absl::StrCat("upstream HTTP ", code, ": ", BackendMessage(response, api_key));
  AttemptOutcome outcome{FailureKind::kOtherHttp4xx, RetryAfterOf(response)};
  absl::Status status;
  if (code == 408) {
    outcome.kind = FailureKind::kHttp408;
    status = absl::DeadlineExceededError(message);
  } else if (code == 409) {
    outcome.kind = FailureKind::kHttp409;
    status = absl::AbortedError(message);
  } else if (code == 429) {
    outcome.kind = FailureKind::kHttp429;
    status = absl::ResourceExhaustedError(message);
  } else if (code >= 500) {
    outcome.kind = FailureKind::kHttp5xx;
    status = absl::UnavailableError(message);
  } else if (code == 400) {
    outcome.kind = FailureKind::kHttp400;
    status = absl::InvalidArgumentError(message);
  } else if (code == 401) {
    outcome.kind = FailureKind::kHttp401;
    status = absl::UnauthenticatedError(message);
  } else if (code == 403) {
    outcome.kind = FailureKind::kHttp403;
    status = absl::PermissionDeniedError(message);
  } else if (code == 404) {
    outcome.kind = FailureKind::kHttp404;
    status = absl::NotFoundError(message);
  } else if (code >= 400) {
    status = absl::FailedPreconditionError(message);
  } else if (code >= 300 && code < 400) {
    // Redirects are never followed (the key must not travel to another host): a 3xx means
    // the base URL is wrong, which no retry fixes.
    const std::string* location = response.Header("location");
    status = absl::FailedPreconditionError(absl::StrCat(
        "upstream HTTP ", code, " redirect", location != nullptr ? " to " : "",
        location != nullptr ? *location : "", ": fix --llm-base-url (redirects are not followed)"));
  } else {
    // 1xx as a final answer: the endpoint is misbehaving; treat it as a server error.
    outcome.kind = FailureKind::kHttp5xx;
    status = absl::UnavailableError(message);
  }
  return WithAttemptOutcome(status, outcome);
}

// doc.usage's input, cached (in `<input>_details`) and output token counts, named as each API
// names them.
ChatUsage UsageOf(const rapidjson::Value& doc, const char* input, const char* output) {
  ChatUsage counts;
  auto usage = doc.FindMember("usage");
  if (usage == doc.MemberEnd() || !usage->value.IsObject()) return counts;
  counts.prompt_tokens = Int64Member(usage->value, input);
  counts.completion_tokens = Int64Member(usage->value, output);
  auto details = usage->value.FindMember(absl::StrCat(input, "_details").c_str());
  if (details != usage->value.MemberEnd()) {
    counts.cached_tokens = Int64Member(details->value, "cached_tokens");
  }
  return counts;
}

// Chat completions: usage.{prompt_tokens, prompt_tokens_details.cached_tokens,
// completion_tokens}; the text is choices[0].message.content (null content is retried, as the
// reference does).
absl::Status ReadChatCompletion(const rapidjson::Value& doc, ChatResult& result) {
  result.usage = UsageOf(doc, "prompt_tokens", "completion_tokens");
  auto choices = doc.FindMember("choices");
  if (choices == doc.MemberEnd() || !choices->value.IsArray() || choices->value.Empty() ||
      !choices->value[0].IsObject()) {
    return Malformed("upstream reply has no choices");
  }
  const rapidjson::Value& choice = choices->value[0];
  auto message = choice.FindMember("message");
  if (message == choice.MemberEnd() || !message->value.IsObject()) {
    return Malformed("upstream reply has no choices[0].message");
  }
  auto content = message->value.FindMember("content");
  if (content == message->value.MemberEnd() || !content->value.IsString()) {
    // The reference treats null content like any other exception: wait and retry.
    return Malformed("upstream reply has null content");
  }
  result.content.assign(content->value.GetString(), content->value.GetStringLength());
  auto finish = choice.FindMember("finish_reason");
  if (finish != choice.MemberEnd() && finish->value.IsString()) {
    result.finish_reason = finish->value.GetString();
  }
  return absl::OkStatus();
}

// The SDK's Response.output_text: every "output_text" part of every "message" item of
// `output`, joined with nothing between; "" when there is none (the verdict parser then
// retries, as the reference's grading loop does).
std::string ResponsesOutputText(const rapidjson::Value& output) {
  std::string text;
  for (const rapidjson::Value& item : output.GetArray()) {
    if (!item.IsObject() || !JsonStringEquals(item, "type", "message")) continue;
    auto content = item.FindMember("content");
    if (content == item.MemberEnd() || !content->value.IsArray()) continue;
    for (const rapidjson::Value& part : content->value.GetArray()) {
      if (!part.IsObject() || !JsonStringEquals(part, "type", "output_text")) continue;
      auto part_text = part.FindMember("text");
      if (part_text != part.MemberEnd() && part_text->value.IsString()) {
        text.append(part_text->value.GetString(), part_text->value.GetStringLength());
      }
    }
  }
  return text;
}

// Responses API: usage.{input_tokens, input_tokens_details.cached_tokens, output_tokens}
// (output_tokens includes the reasoning tokens, billed as output); finish_reason = `status`.
absl::Status ReadResponse(const rapidjson::Value& doc, ChatResult& result) {
  result.usage = UsageOf(doc, "input_tokens", "output_tokens");
  auto output = doc.FindMember("output");
  if (output == doc.MemberEnd() || !output->value.IsArray()) {
    return Malformed("upstream reply has no output list");
  }
  result.content = ResponsesOutputText(output->value);
  auto status = doc.FindMember("status");
  if (status != doc.MemberEnd() && status->value.IsString()) {
    result.finish_reason = status->value.GetString();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ChatResult> InterpretLlmResponse(const HttpResponse& response,
                                                absl::string_view api_key, GraderApi api) {
  const int code = response.status_code;
  if (code < 200 || code >= 300) return HttpFailure(response, api_key);
  // The reply's DOM lives in a buffer on this stack (a grader's reply is 1-2 KB of JSON; a larger
  // one spills into 16 KB chunks), not in rapidjson's default 64 KB chunk, which was malloc'd
  // and freed once per reply (and, above the fast bins, made malloc consolidate them).
  char pool_buffer[8192];
  rapidjson::MemoryPoolAllocator<> pool(pool_buffer, sizeof(pool_buffer), 16 * 1024);
  rapidjson::Document doc(&pool);
  if (absl::Status parsed = ParseJson(response.body, doc); !parsed.ok()) {
    return Malformed(absl::StrCat("upstream reply is not valid JSON: ", parsed.message()));
  }
  if (!doc.IsObject()) return Malformed("upstream reply is not a JSON object");
  ChatResult result;
  result.http_status = code;
  result.latency = response.latency;
  auto model = doc.FindMember("model");
  if (model != doc.MemberEnd() && model->value.IsString()) result.model = model->value.GetString();
  result.rate_limit.limit_requests = IntHeader(response, "x-ratelimit-limit-requests");
  result.rate_limit.remaining_requests = IntHeader(response, "x-ratelimit-remaining-requests");
  result.rate_limit.limit_tokens = IntHeader(response, "x-ratelimit-limit-tokens");
  result.rate_limit.remaining_tokens = IntHeader(response, "x-ratelimit-remaining-tokens");
  result.rate_limit.reset_requests = DurationHeader(response, "x-ratelimit-reset-requests");
  result.rate_limit.reset_tokens = DurationHeader(response, "x-ratelimit-reset-tokens");
  result.simulated = response.Header(kSimulatorHeader) != nullptr;
  HB_RETURN_IF_ERROR(api == GraderApi::kResponses ? ReadResponse(doc, result)
                                                  : ReadChatCompletion(doc, result));
  return result;
}

absl::StatusOr<ChatResult> InterpretChatResponse(const HttpResponse& response,
                                                 absl::string_view api_key) {
  return InterpretLlmResponse(response, api_key, GraderApi::kChatCompletions);
}

OpenAiLlmClient::OpenAiLlmClient(HttpClient& http, OpenAiLlmClientOptions options)
    : http_(http),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : Clock::Real()),
      url_(absl::StrCat(absl::StripSuffix(options_.base_url, "/"), GraderApiPath(options_.api))) {}

LlmClient::CallId OpenAiLlmClient::Complete(ChatRequest request, ChatCallback done) {
  HttpRequest http_request;
  http_request.url = url_;
  http_request.headers.emplace_back("Content-Type", "application/json");
  http_request.headers.emplace_back("Accept", "application/json");
  if (!options_.api_key.empty()) {
    http_request.headers.emplace_back("Authorization", absl::StrCat("Bearer ", options_.api_key));
  }
  for (const auto& header : options_.headers) http_request.headers.push_back(header);
  if (request.body_parts.empty()) {
    http_request.body = std::move(request.body);
  } else {
    http_request.body_parts.reserve(request.body_parts.size());
    for (auto& part : request.body_parts) {
      http_request.body_parts.push_back(HttpBodyPart::Shared(std::move(part)));
    }
  }
  http_request.timeout = request.timeout;
  LlmMetrics* metrics = options_.metrics;
  if (metrics != nullptr) metrics->UpstreamStarted();
  const absl::Time start = clock_.Now();
  return http_.Post(std::move(http_request), [this, metrics, start, done = std::move(done)](
                                                 absl::StatusOr<HttpResponse> response) mutable {
    if (metrics != nullptr) metrics->UpstreamFinished(StatusLabel(response), clock_.Now() - start);
    if (!response.ok()) {
      absl::Status status = response.status();
      AttemptOutcome outcome = AttemptOutcomeOf(status);
      if (status.code() == absl::StatusCode::kDeadlineExceeded) {
        outcome.kind = FailureKind::kTimeout;
      } else if (status.code() == absl::StatusCode::kFailedPrecondition ||
                 status.code() == absl::StatusCode::kInvalidArgument) {
        // TLS verification or a bad URL: a configuration problem, never retried.
        outcome.kind = FailureKind::kOtherHttp4xx;
      }
      done(WithAttemptOutcome(
          ScrubHeaderValues(
              absl::Status(status.code(), Scrub(std::string(status.message()), options_.api_key))),
          outcome));
      return;
    }
    absl::StatusOr<ChatResult> result =
        InterpretLlmResponse(*response, options_.api_key, options_.api);
    if (!result.ok()) result = ScrubHeaderValues(result.status());
    if (metrics != nullptr) {
      if (result.ok()) {
        metrics->AddTokens(result->usage.prompt_tokens, result->usage.cached_tokens,
                           result->usage.completion_tokens);
      }
      if (auto v = IntHeader(*response, "x-ratelimit-remaining-requests")) {
        metrics->SetRateLimitRemaining("requests", static_cast<double>(*v));
      }
      if (auto v = IntHeader(*response, "x-ratelimit-remaining-tokens")) {
        metrics->SetRateLimitRemaining("tokens", static_cast<double>(*v));
      }
    }
    done(std::move(result));
  });
}

void OpenAiLlmClient::Cancel(CallId id) { http_.Cancel(id); }

absl::Status OpenAiLlmClient::ScrubHeaderValues(absl::Status status) const {
  std::string message(status.message());
  bool changed = false;
  for (const auto& [name, value] : options_.headers) {
    if (value.empty()) continue;
    changed = absl::StrReplaceAll({{value, "[redacted]"}}, &message) > 0 || changed;
  }
  if (!changed) return status;
  absl::Status scrubbed(status.code(), message);
  status.ForEachPayload([&scrubbed](absl::string_view url, const absl::Cord& payload) {
    scrubbed.SetPayload(url, payload);
  });
  return scrubbed;
}

}  // namespace hb
