// OpenAiLlmClient over a FakeHttpClient: the request it sends, how every HTTP status maps to a
// code and an AttemptOutcome, reply parsing (null content, usage, rate-limit headers), and that
// the API key never leaks into statuses or metrics.
#include "llm/openai_llm_client.h"

#include <optional>
#include <sstream>
#include <string>

// The client reports through LlmMetrics; the grader's Prometheus implementation reads it back.
#include "gmock/gmock.h"
#include "grader/grader_metrics.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "tests/testing/fake_http_client.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::FakeHttpClient;
using ::hb::testing::IsOkAndHolds;
using ::hb::testing::MakeHttpResponse;
using ::hb::testing::StatusIs;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

constexpr char kKey[] = "sk-test-SECRET";

constexpr char kCompletion[] = R"({
  "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1-2025-04-14",
  "choices": [{"index": 0, "message": {"role": "assistant",
               "content": "{\"criteria_met\": true}"}, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 1200, "completion_tokens": 40,
            "prompt_tokens_details": {"cached_tokens": 1024}}})";

class OpenAiLlmClientTest : public ::testing::Test {
 protected:
  OpenAiLlmClientTest() {
    OpenAiLlmClientOptions options;
    options.base_url = "http://upstream.test/v1/";
    options.api_key = kKey;
    options.metrics = &metrics_;
    client_ = std::make_unique<OpenAiLlmClient>(http_, options);
  }

  // Runs one call answered with `response`.
  absl::StatusOr<ChatResult> Call(absl::StatusOr<HttpResponse> response) {
    std::optional<absl::StatusOr<ChatResult>> out;
    ChatRequest request;
    request.body = R"({"model":"m"})";
    request.timeout = absl::Seconds(7);
    client_->Complete(request, [&out](absl::StatusOr<ChatResult> r) { out = std::move(r); });
    EXPECT_TRUE(http_.RespondNext(std::move(response)));
    EXPECT_TRUE(out.has_value());
    return *out;
  }

  std::string MetricsText() {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    return out.str();
  }

  FakeHttpClient http_;
  prometheus::Registry registry_;
  GraderMetrics metrics_{registry_};
  std::unique_ptr<OpenAiLlmClient> client_;
};

TEST_F(OpenAiLlmClientTest, SendsTheBodyToChatCompletionsWithTheBearerKey) {
  HB_ASSERT_OK_AND_ASSIGN(ChatResult result, Call(MakeHttpResponse(200, kCompletion)));
  ASSERT_EQ(http_.requests().size(), 1u);
  const HttpRequest sent = http_.requests()[0];
  EXPECT_EQ(sent.url, "http://upstream.test/v1/chat/completions");
  EXPECT_EQ(sent.body, R"({"model":"m"})");
  EXPECT_EQ(sent.timeout, absl::Seconds(7));
  EXPECT_THAT(sent.headers, Contains(Pair("Authorization", "Bearer sk-test-SECRET")));
  EXPECT_THAT(sent.headers, Contains(Pair("Content-Type", "application/json")));
  EXPECT_EQ(result.content, R"({"criteria_met": true})");
  EXPECT_EQ(result.model, "gpt-4.1-2025-04-14");
  EXPECT_EQ(result.usage.prompt_tokens, 1200);
  EXPECT_EQ(result.usage.cached_tokens, 1024);
  EXPECT_EQ(result.usage.completion_tokens, 40);
  EXPECT_EQ(result.http_status, 200);
  EXPECT_EQ(metrics_.UpstreamCalls("200"), 1);
  EXPECT_EQ(metrics_.Tokens("cached"), 1024);
  EXPECT_EQ(metrics_.UpstreamInFlight(), 0);
}

// A Responses API reply: a reasoning item, then a message whose text comes in two
// output_text parts (plus a refusal part and a non-message item that must be ignored).
constexpr char kResponse[] = R"({
  "id": "resp_1", "object": "response", "model": "gpt-5.4-2026-03-05", "status": "completed",
  "output": [
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "no"}]},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "{\"criteria_met\": ", "annotations": []},
                 {"type": "refusal", "refusal": "ignored"},
                 {"type": "output_text", "text": "true}", "annotations": []}]},
    {"type": "function_call", "content": [{"type": "output_text", "text": "ignored"}]}],
  "usage": {"input_tokens": 1500, "input_tokens_details": {"cached_tokens": 1280},
            "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 256},
            "total_tokens": 1800}})";

TEST_F(OpenAiLlmClientTest, ResponsesApiJoinsEveryOutputTextPartOfEveryMessage) {
  OpenAiLlmClientOptions options;
  options.base_url = "http://upstream.test/v1";
  options.metrics = &metrics_;
  options.api = GraderApi::kResponses;
  OpenAiLlmClient responses(http_, options);
  std::optional<absl::StatusOr<ChatResult>> out;
  responses.Complete(ChatRequest{}, [&out](absl::StatusOr<ChatResult> r) { out = std::move(r); });
  ASSERT_TRUE(http_.RespondNext(MakeHttpResponse(200, kResponse)));
  EXPECT_EQ(http_.requests()[0].url, "http://upstream.test/v1/responses");
  ASSERT_TRUE(out.has_value());
  HB_ASSERT_OK_AND_ASSIGN(ChatResult result, *out);
  EXPECT_EQ(result.content, R"({"criteria_met": true})");
  EXPECT_EQ(result.model, "gpt-5.4-2026-03-05");
  EXPECT_EQ(result.finish_reason, "completed");
  // Reasoning tokens are output tokens.
  EXPECT_EQ(result.usage.prompt_tokens, 1500);
  EXPECT_EQ(result.usage.cached_tokens, 1280);
  EXPECT_EQ(result.usage.completion_tokens, 300);
  EXPECT_EQ(metrics_.Tokens("cached"), 1280);
}

TEST_F(OpenAiLlmClientTest, ResponsesApiEdgeCases) {
  const auto interpret = [](const std::string& body) {
    return InterpretLlmResponse(MakeHttpResponse(200, body), "", GraderApi::kResponses);
  };
  // Two message items: both count, in order, joined with nothing.
  EXPECT_THAT(interpret(R"({"output": [
      {"type": "message", "content": [{"type": "output_text", "text": "a"}]},
      {"type": "message", "content": [{"type": "output_text", "text": "b"}]}]})"),
              IsOkAndHolds(Field(&ChatResult::content, "ab")));
  // No text at all is "" (the SDK's output_text), not an error: the verdict parser retries.
  EXPECT_THAT(interpret(R"({"output": [{"type": "reasoning", "summary": []}]})"),
              IsOkAndHolds(Field(&ChatResult::content, "")));
  EXPECT_THAT(interpret(R"({"output": null})"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no output list")));
  // A chat completion read as a response has no output; errors map exactly as for chat.
  EXPECT_THAT(interpret(kCompletion),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no output list")));
  EXPECT_THAT(InterpretLlmResponse(MakeHttpResponse(429, "{}"), "", GraderApi::kResponses),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("upstream HTTP 429")));
}

TEST_F(OpenAiLlmClientTest, NoKeyNoAuthorizationHeader) {
  OpenAiLlmClient keyless(http_,
                          OpenAiLlmClientOptions{"http://local:8000/v1", "", nullptr, nullptr});
  keyless.Complete(ChatRequest{}, [](absl::StatusOr<ChatResult>) {});
  ASSERT_EQ(http_.requests().size(), 1u);
  const std::vector<HttpRequest> sent = http_.requests();
  for (const auto& [name, value] : sent[0].headers) EXPECT_NE(name, "Authorization");
  EXPECT_EQ(http_.requests()[0].url, "http://local:8000/v1/chat/completions");
}

TEST_F(OpenAiLlmClientTest, MapsEveryHttpStatus) {
  struct Case {
    int status;
    absl::StatusCode code;
    FailureKind kind;
  };
  const Case cases[] = {
      {400, absl::StatusCode::kInvalidArgument, FailureKind::kHttp400},
      {401, absl::StatusCode::kUnauthenticated, FailureKind::kHttp401},
      {403, absl::StatusCode::kPermissionDenied, FailureKind::kHttp403},
      {404, absl::StatusCode::kNotFound, FailureKind::kHttp404},
      {408, absl::StatusCode::kDeadlineExceeded, FailureKind::kHttp408},
      {409, absl::StatusCode::kAborted, FailureKind::kHttp409},
      {413, absl::StatusCode::kFailedPrecondition, FailureKind::kOtherHttp4xx},
      {429, absl::StatusCode::kResourceExhausted, FailureKind::kHttp429},
      {500, absl::StatusCode::kUnavailable, FailureKind::kHttp5xx},
      {503, absl::StatusCode::kUnavailable, FailureKind::kHttp5xx},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ChatResult> result = Call(
        MakeHttpResponse(c.status, R"({"error": {"message": "backend says no", "type": "x"}})"));
    EXPECT_THAT(
        result,
        StatusIs(c.code, HasSubstr(absl::StrCat("upstream HTTP ", c.status, ": backend says no"))))
        << c.status;
    EXPECT_EQ(AttemptOutcomeOf(result.status()).kind, c.kind) << c.status;
    EXPECT_EQ(metrics_.UpstreamCalls(absl::StrCat(c.status)), 1) << c.status;
  }
}

TEST_F(OpenAiLlmClientTest, ARedirectIsAFinalConfigurationError) {
  HttpResponse response = MakeHttpResponse(301, "");
  response.headers.emplace_back("location", "https://elsewhere.test/v1/chat/completions");
  absl::StatusOr<ChatResult> result = Call(response);
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr("upstream HTTP 301 redirect to "
                                         "https://elsewhere.test/v1/chat/completions: fix "
                                         "--llm-base-url")));
  EXPECT_FALSE(IsRetryable(AttemptOutcomeOf(result.status()).kind));
}

TEST_F(OpenAiLlmClientTest, AbsurdTokenCountsReadAsZeroNotNegative) {
  absl::StatusOr<ChatResult> result = Call(MakeHttpResponse(200, R"({
    "model": "m", "choices": [{"message": {"content": "{}"}}],
    "usage": {"prompt_tokens": 1e300, "completion_tokens": -5,
              "prompt_tokens_details": {"cached_tokens": 2.5}}})"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->usage.prompt_tokens, 0);
  EXPECT_EQ(result->usage.completion_tokens, 0);
  EXPECT_EQ(result->usage.cached_tokens, 0);
}

TEST_F(OpenAiLlmClientTest, ExtractsRetryAfterMillisecondsFirst) {
  absl::StatusOr<ChatResult> both =
      Call(MakeHttpResponse(429, "slow down", {{"retry-after", "2"}, {"retry-after-ms", "1500"}}));
  EXPECT_EQ(AttemptOutcomeOf(both.status()).retry_after, absl::Milliseconds(1500));
  absl::StatusOr<ChatResult> seconds = Call(MakeHttpResponse(503, "", {{"retry-after", "3"}}));
  EXPECT_EQ(AttemptOutcomeOf(seconds.status()).retry_after, absl::Seconds(3));
  absl::StatusOr<ChatResult> none = Call(MakeHttpResponse(429, ""));
  EXPECT_EQ(AttemptOutcomeOf(none.status()).retry_after, std::nullopt);
  EXPECT_THAT(both, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("slow down")));
}

TEST_F(OpenAiLlmClientTest, NullContentAndBrokenBodiesAreRetryableMalformedReplies) {
  const char* bodies[] = {
      R"({"model": "m", "choices": [{"message": {"role": "assistant", "content": null}}]})",
      R"({"model": "m", "choices": []})",
      R"(not json)",
      R"([1, 2])",
  };
  const char* messages[] = {"null content", "no choices", "not valid JSON", "not a JSON object"};
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<ChatResult> result = Call(MakeHttpResponse(200, bodies[i]));
    EXPECT_THAT(result, StatusIs(absl::StatusCode::kUnavailable, HasSubstr(messages[i]))) << i;
    EXPECT_EQ(AttemptOutcomeOf(result.status()).kind, FailureKind::kMalformedReply) << i;
  }
}

// A hostile upstream body nested 200,000 levels deep is a clear malformed reply, not a stack
// overflow.
TEST_F(OpenAiLlmClientTest, ADeeplyNestedBodyIsAMalformedReplyNotACrash) {
  absl::StatusOr<ChatResult> result = Call(MakeHttpResponse(200, std::string(200000, '[')));
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kUnavailable,
                               HasSubstr("upstream reply is not valid JSON: nesting deeper than "
                                         "64 levels at offset 64")));
  EXPECT_EQ(AttemptOutcomeOf(result.status()).kind, FailureKind::kMalformedReply);
  // The same body on an error reply falls back to the (scrubbed, truncated) body text.
  absl::StatusOr<ChatResult> error = Call(MakeHttpResponse(500, std::string(200000, '[')));
  EXPECT_THAT(error, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("[[[")));
}

TEST_F(OpenAiLlmClientTest, ReadsRateLimitHeaders) {
  HB_ASSERT_OK_AND_ASSIGN(ChatResult result,
                          Call(MakeHttpResponse(200, kCompletion,
                                                {{"x-ratelimit-limit-requests", "500"},
                                                 {"x-ratelimit-remaining-requests", "499"},
                                                 {"x-ratelimit-remaining-tokens", "29000"}})));
  EXPECT_EQ(result.rate_limit.limit_requests, 500);
  EXPECT_EQ(result.rate_limit.remaining_requests, 499);
  EXPECT_EQ(result.rate_limit.remaining_tokens, 29000);
  EXPECT_EQ(result.rate_limit.limit_tokens, std::nullopt);
  EXPECT_THAT(MetricsText(), HasSubstr("hb_grader_ratelimit_remaining{resource=\"requests\"} 499"));
  EXPECT_EQ(result.rate_limit.reset_requests, std::nullopt);
}

// hb-llm-sim's header marks the reply simulated; a reply without it is not.
TEST_F(OpenAiLlmClientTest, TheSimulatorHeaderMarksTheReplySimulated) {
  HB_ASSERT_OK_AND_ASSIGN(ChatResult sim,
                          Call(MakeHttpResponse(200, kCompletion, {{"x-hb-llm-sim", "1"}})));
  EXPECT_TRUE(sim.simulated);
  HB_ASSERT_OK_AND_ASSIGN(ChatResult model, Call(MakeHttpResponse(200, kCompletion)));
  EXPECT_FALSE(model.simulated);
}

TEST_F(OpenAiLlmClientTest, ReadsRateLimitResetDurations) {
  HB_ASSERT_OK_AND_ASSIGN(ChatResult result,
                          Call(MakeHttpResponse(200, kCompletion,
                                                {{"x-ratelimit-reset-requests", "58.8s"},
                                                 {"x-ratelimit-reset-tokens", "6m0s"}})));
  EXPECT_EQ(result.rate_limit.reset_requests, absl::Milliseconds(58800));
  EXPECT_EQ(result.rate_limit.reset_tokens, absl::Minutes(6));
  HB_ASSERT_OK_AND_ASSIGN(ChatResult other,
                          Call(MakeHttpResponse(200, kCompletion,
                                                {{"x-ratelimit-reset-requests", "250ms"},
                                                 {"x-ratelimit-reset-tokens", "soon"}})));
  EXPECT_EQ(other.rate_limit.reset_requests, absl::Milliseconds(250));
  EXPECT_EQ(other.rate_limit.reset_tokens, std::nullopt);
}

TEST_F(OpenAiLlmClientTest, TransportFailuresKeepTheirCodes) {
  absl::StatusOr<ChatResult> refused = Call(absl::UnavailableError("Couldn't connect"));
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("connect")));
  EXPECT_EQ(AttemptOutcomeOf(refused.status()).kind, FailureKind::kConnection);
  absl::StatusOr<ChatResult> timeout = Call(absl::DeadlineExceededError("Timeout was reached"));
  EXPECT_EQ(AttemptOutcomeOf(timeout.status()).kind, FailureKind::kTimeout);
  absl::StatusOr<ChatResult> tls = Call(absl::FailedPreconditionError("SSL peer certificate"));
  EXPECT_FALSE(IsRetryable(AttemptOutcomeOf(tls.status()).kind));
  EXPECT_EQ(metrics_.UpstreamCalls("connection"), 2);
  EXPECT_EQ(metrics_.UpstreamCalls("timeout"), 1);
}

TEST_F(OpenAiLlmClientTest, CancelReachesTheHttpClient) {
  std::optional<absl::StatusOr<ChatResult>> out;
  LlmClient::CallId id = client_->Complete(
      ChatRequest{}, [&out](absl::StatusOr<ChatResult> r) { out = std::move(r); });
  client_->Cancel(id);
  ASSERT_TRUE(out.has_value());
  EXPECT_THAT(*out, StatusIs(absl::StatusCode::kCancelled, HasSubstr("cancelled")));
  EXPECT_EQ(http_.cancelled().size(), 1u);
}

TEST_F(OpenAiLlmClientTest, TheApiKeyNeverLeaks) {
  // Backends echo keys in error messages; a hostile or buggy one might echo all of it.
  std::vector<absl::StatusOr<ChatResult>> results;
  results.push_back(Call(MakeHttpResponse(
      401, R"({"error": {"message": "Incorrect API key provided: sk-test-SECRET."}})")));
  results.push_back(Call(MakeHttpResponse(500, "upstream saw Bearer sk-test-SECRET")));
  results.push_back(Call(absl::UnavailableError("proxy rejected sk-test-SECRET")));
  for (const auto& r : results) {
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), Not(HasSubstr(kKey)));
    EXPECT_THAT(r.status().ToString(), Not(HasSubstr(kKey)));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("[redacted]"));
  }
  EXPECT_THAT(MetricsText(), Not(HasSubstr("SECRET")));
}

}  // namespace
}  // namespace hb

namespace hb {
namespace {

// --llm-header: every request carries the extra headers after the client's own, and a value
// (Azure's api-key is a secret) an upstream echoes never reaches a status.
TEST(OpenAiLlmClientHeadersTest, ExtraHeadersReachEveryRequestAndTheirValuesNeverLeak) {
  FakeHttpClient http;
  OpenAiLlmClientOptions options;
  options.base_url = "http://judge.test/v1";
  options.headers = {{"api-key", "azure-SECRET-value"}, {"X-Team", "grading"}};
  OpenAiLlmClient client(http, options);
  std::optional<absl::StatusOr<ChatResult>> out;
  ChatRequest request;
  request.body = R"({"model":"m"})";
  client.Complete(request, [&out](absl::StatusOr<ChatResult> r) { out = std::move(r); });
  ASSERT_TRUE(http.RespondNext(MakeHttpResponse(
      403, R"({"error": {"message": "api-key azure-SECRET-value is not valid"}})")));
  ASSERT_EQ(http.requests().size(), 1u);
  EXPECT_THAT(http.requests()[0].headers, Contains(Pair("api-key", "azure-SECRET-value")));
  EXPECT_THAT(http.requests()[0].headers, Contains(Pair("X-Team", "grading")));
  ASSERT_TRUE(out.has_value());
  EXPECT_THAT(*out, StatusIs(absl::StatusCode::kPermissionDenied,
                             HasSubstr("upstream HTTP 403: api-key [redacted] is not valid")));
  EXPECT_THAT(out->status().ToString(), Not(HasSubstr("SECRET")));
  // The outcome payload survives the scrubbing.
  EXPECT_EQ(AttemptOutcomeOf(out->status()).kind, FailureKind::kHttp403);
}

}  // namespace
}  // namespace hb
