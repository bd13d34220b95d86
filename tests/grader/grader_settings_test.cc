// The grader's API choice (simple-evals PR #108's routing) and the settings it refuses.
#include "grader/grader_settings.h"

#include <cmath>
#include <string>

#include "common/base/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

GraderSettings Model(const std::string& model, const std::string& effort = "") {
  GraderSettings settings;
  settings.model = model;
  settings.reasoning_effort = effort;
  return settings;
}

TEST(ResolveGraderApiTest, AutoFollowsTheReferenceRoutingList) {
  // Every model of PR #108's _RESPONSES_API_GRADER_MODELS goes to the Responses API.
  for (const char* model : {"gpt-5.5-2026-04-23", "gpt-5.4-2026-03-05", "gpt-5.4-mini-2026-03-17",
                            "o3-2025-04-16", "o4-mini-2025-04-16", "o1-pro"}) {
    EXPECT_EQ(ResolveGraderApi(GraderApiChoice::kAuto, Model(model)), GraderApi::kResponses)
        << model;
  }
  EXPECT_EQ(ResolveGraderApi(GraderApiChoice::kAuto, Model("gpt-4.1-2025-04-14")),
            GraderApi::kChatCompletions);
  // An effort sends any model to the Responses API; an explicit choice wins.
  EXPECT_EQ(ResolveGraderApi(GraderApiChoice::kAuto, Model("my-model", "low")),
            GraderApi::kResponses);
  EXPECT_EQ(ResolveGraderApi(GraderApiChoice::kChat, Model("gpt-5.4-2026-03-05")),
            GraderApi::kChatCompletions);
  EXPECT_EQ(ResolveGraderApi(GraderApiChoice::kResponses, Model("gpt-4.1")), GraderApi::kResponses);
}

TEST(ResolveGraderSettingsTest, RefusesChatOnlySettingsForAResponsesGrader) {
  GraderSettings settings = Model("gpt-5.4-2026-03-05", "low");
  EXPECT_THAT(ResolveGraderSettings(GraderApiChoice::kAuto, /*temperature_given=*/true,
                                    /*max_tokens_given=*/false, settings),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--llm-temperature cannot be used with the grader "
                                       "gpt-5.4-2026-03-05"),
                             HasSubstr("Responses API"), HasSubstr("--llm-api=chat"))));
  EXPECT_THAT(ResolveGraderSettings(GraderApiChoice::kAuto, false, true, settings),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--llm-max-tokens")));
  HB_EXPECT_OK(ResolveGraderSettings(GraderApiChoice::kAuto, false, false, settings));
  EXPECT_EQ(settings.api, GraderApi::kResponses);
  // The same flags are fine on chat completions.
  GraderSettings chat = Model("gpt-5.4-2026-03-05");
  HB_EXPECT_OK(ResolveGraderSettings(GraderApiChoice::kChat, true, true, chat));
  EXPECT_EQ(chat.api, GraderApi::kChatCompletions);
}

TEST(ValidateGraderSettingsTest, EffortIsLowMediumOrHighAndOnlyOnResponses) {
  GraderSettings settings = Model("gpt-5.4", "extreme");
  settings.api = GraderApi::kResponses;
  EXPECT_THAT(ValidateGraderSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--llm-reasoning-effort must be low, medium or high, got "
                                 "'extreme'")));
  settings.reasoning_effort = "medium";
  HB_EXPECT_OK(ValidateGraderSettings(settings));
  settings.api = GraderApi::kChatCompletions;
  EXPECT_THAT(
      ValidateGraderSettings(settings),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("only through the Responses API")));
}

// Values every OpenAI-compatible API refuses are refused here, at start, naming the flag: sent
// upstream they would fail every request with a 400 that reads like a bad key.
TEST(ValidateGraderSettingsTest, TemperatureAndMaxTokensTheUpstreamWouldRefuse) {
  GraderSettings settings;
  HB_EXPECT_OK(ValidateGraderSettings(settings));
  for (double t : {0.0, 2.0}) {
    settings.temperature = t;
    HB_EXPECT_OK(ValidateGraderSettings(settings)) << t;
  }
  for (double t : {9.0, -0.1, 2.0001, std::nan("")}) {
    settings.temperature = t;
    EXPECT_THAT(ValidateGraderSettings(settings),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("--llm-temperature must be in [0, 2]")))
        << t;
  }
  settings.temperature = 9;
  EXPECT_THAT(ValidateGraderSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 9: the upstream would "
                                                                     "refuse every request")));
  settings.temperature = 0.5;
  settings.max_tokens = kMaxGraderMaxTokens;
  HB_EXPECT_OK(ValidateGraderSettings(settings));
  settings.max_tokens = kMaxGraderMaxTokens + 1;
  EXPECT_THAT(ValidateGraderSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--llm-max-tokens must be at most 1000000, got 1000001")));
  settings.max_tokens = 0;
  EXPECT_THAT(
      ValidateGraderSettings(settings),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--llm-max-tokens must be positive")));
}

TEST(GraderApiChoiceTest, ParsesAndUnparsesTheFlag) {
  GraderApiChoice choice = GraderApiChoice::kAuto;
  std::string error;
  EXPECT_TRUE(AbslParseFlag("responses", &choice, &error));
  EXPECT_EQ(choice, GraderApiChoice::kResponses);
  EXPECT_EQ(AbslUnparseFlag(choice), "responses");
  EXPECT_FALSE(AbslParseFlag("completions", &choice, &error));
  EXPECT_EQ(error, "expected auto, chat or responses, got 'completions'");
}

TEST(ValidateGraderSettingsTest, ExtraBodyIsAnObjectThatOverridesNothingFidelityFixes) {
  GraderSettings settings;
  settings.extra_body = R"({"guided_json":{"type":"object"},"top_k":5})";
  HB_EXPECT_OK(ValidateGraderSettings(settings));
  settings.extra_body = "[1]";
  EXPECT_THAT(ValidateGraderSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--llm-extra-body must be a JSON object, e.g. "
                                 "'{\"response_format\":{\"type\":\"json_object\"}}', got array")));
  settings.extra_body = "{";
  EXPECT_THAT(ValidateGraderSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--llm-extra-body is not valid JSON: ")));
  const struct {
    const char* body;
    GraderApi api;
    const char* effort;
    const char* message;
  } refused[] = {
      {R"({"model":"x"})", GraderApi::kChatCompletions, "",
       "--llm-extra-body sets 'model': the grader model is --llm-model; remove it"},
      {R"({"messages":[]})", GraderApi::kChatCompletions, "",
       "--llm-extra-body sets 'messages': the grader prompt is the reference's (the template "
       "with the conversation and the rubric item), never replaced; remove it"},
      {R"({"input":"x"})", GraderApi::kResponses, "", "--llm-extra-body sets 'input'"},
      {R"({"stream":true})", GraderApi::kChatCompletions, "",
       "--llm-extra-body sets 'stream': the grader reads one JSON reply"},
      {R"({"temperature":0})", GraderApi::kChatCompletions, "",
       "--llm-extra-body sets 'temperature': the body already has it: use --llm-temperature"},
      {R"({"max_tokens":9})", GraderApi::kChatCompletions, "", "use --llm-max-tokens"},
      {R"({"reasoning":{}})", GraderApi::kResponses, "low", "use --llm-reasoning-effort"},
      {R"({"prompt_cache_key":"k"})", GraderApi::kResponses, "", "--prompt-cache-key"},
      {R"({"top_k":1,"top_k":2})", GraderApi::kChatCompletions, "",
       "--llm-extra-body sets 'top_k' twice; give each key once"},
  };
  for (const auto& c : refused) {
    GraderSettings s;
    s.api = c.api;
    s.reasoning_effort = c.effort;
    s.extra_body = c.body;
    EXPECT_THAT(ValidateGraderSettings(s),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.body;
  }
  // Keys the body of this API does not have are the user's: temperature on the Responses API
  // (which sends none), reasoning without an effort.
  GraderSettings responses;
  responses.api = GraderApi::kResponses;
  responses.extra_body = R"({"temperature":0,"reasoning":{"summary":"auto"}})";
  HB_EXPECT_OK(ValidateGraderSettings(responses));
}

TEST(CanonicalExtraBodyTest, CompactInTheGivenOrder) {
  EXPECT_THAT(CanonicalExtraBody(" { \"b\" : [1, 2.5] ,\n \"a\": {} } "),
              ::hb::testing::IsOkAndHolds(std::string(R"({"b":[1,2.5],"a":{}})")));
  EXPECT_THAT(CanonicalExtraBody(""), ::hb::testing::IsOkAndHolds(std::string()));
  EXPECT_THAT(CanonicalExtraBody("3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a JSON object")));
}

TEST(ParseGraderHeaderTest, NameEqualsValueWithAValidNameAndNoLineBreaks) {
  absl::StatusOr<GraderHeader> header = ParseGraderHeader("api-key=a=b c");
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->name, "api-key");
  EXPECT_EQ(header->value, "a=b c");
  EXPECT_EQ(header->value_sha256, Sha256Hex("a=b c"));
  EXPECT_THAT(ParseGraderHeader("api-key"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--llm-header expects NAME=VALUE (e.g. --llm-header=api-key=KEY), got no "
                       "'='"));
  EXPECT_THAT(ParseGraderHeader("bad name=x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--llm-header name 'bad name' is not an HTTP header name: use letters, "
                       "digits and !#$%&'*+-.^_`|~ only"));
  EXPECT_THAT(ParseGraderHeader("=x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--llm-header name ''")));
  EXPECT_THAT(ParseGraderHeader("X-A=secret\r\nX-B: y"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--llm-header X-A: the value contains a CR, LF or NUL byte, which would "
                       "end the header early; remove it"));
  EXPECT_THAT(ParseGraderHeader("authorization=Bearer x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("give the key with --llm-api-key-file")));
  EXPECT_THAT(ParseGraderHeader("Content-Length=3"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--llm-header Content-Length is set by the HTTP client for every "
                       "request; remove it"));
  EXPECT_THAT(ParseGraderHeaders({"api-key=a", "API-KEY=b"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--llm-header API-KEY is given twice; give each header once"));
}

TEST(ParseGraderHeaderTest, ReportsShowNamesOnlyAndTheIdentityHashesValues) {
  absl::StatusOr<std::vector<GraderHeader>> headers =
      ParseGraderHeaders({"X-Team=t", "api-key=SECRET"});
  ASSERT_TRUE(headers.ok()) << headers.status();
  EXPECT_EQ(RedactedHeaders(*headers), "X-Team: [redacted], api-key: [redacted]");
  EXPECT_EQ(HeadersIdentity(*headers),
            "api-key:" + Sha256Hex("SECRET") + ",x-team:" + Sha256Hex("t"));
  EXPECT_EQ(HeadersIdentity({}), "");
  EXPECT_EQ(WireHeaders(*headers), (std::vector<std::pair<std::string, std::string>>{
                                       {"X-Team", "t"}, {"api-key", "SECRET"}}));
}

}  // namespace
}  // namespace hb
