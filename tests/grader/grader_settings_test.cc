// The grader's API choice (simple-evals PR #108's routing) and the settings it refuses.
#include "grader/grader_settings.h"

#include <string>

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

TEST(GraderApiChoiceTest, ParsesAndUnparsesTheFlag) {
  GraderApiChoice choice = GraderApiChoice::kAuto;
  std::string error;
  EXPECT_TRUE(AbslParseFlag("responses", &choice, &error));
  EXPECT_EQ(choice, GraderApiChoice::kResponses);
  EXPECT_EQ(AbslUnparseFlag(choice), "responses");
  EXPECT_FALSE(AbslParseFlag("completions", &choice, &error));
  EXPECT_EQ(error, "expected auto, chat or responses, got 'completions'");
}

}  // namespace
}  // namespace hb
