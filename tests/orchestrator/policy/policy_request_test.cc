// The exact bytes of policy requests in both input modes, and the settings validation.
#include "orchestrator/policy/policy_request.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

const std::vector<Message> kMultiTurn = {
    {"user", "I have a headache."}, {"assistant", "Since when?"}, {"user", "Two \"days\"."}};

TEST(PolicyRequestTest, MessagesModeSendsTheTaskMessagesAndOnlyTheSettingsGiven) {
  PolicyRequestSettings settings;
  settings.model = "ckpt-1";
  EXPECT_EQ(BuildPolicyRequestBody(settings, kMultiTurn),
            R"({"model":"ckpt-1","messages":[{"role":"user","content":"I have a headache."},)"
            R"({"role":"assistant","content":"Since when?"},)"
            R"({"role":"user","content":"Two \"days\"."}]})");
  settings.system_prompt = "Be brief.";
  settings.temperature = 1;
  settings.max_tokens = 512;
  settings.extra_body = R"({"reasoning_effort":"low","top_p":0.9})";
  ASSERT_TRUE(ValidatePolicyRequestSettings(settings).ok());
  EXPECT_EQ(BuildPolicyRequestBody(settings, {{"user", "Hi"}}),
            R"({"model":"ckpt-1","messages":[{"role":"system","content":"Be brief."},)"
            R"({"role":"user","content":"Hi"}],"temperature":1.0,"max_tokens":512,)"
            R"("reasoning_effort":"low","top_p":0.9})");
}

TEST(PolicyRequestTest, PromptTextModeSendsTheSeedRenderingAsOneUserMessage) {
  PolicyRequestSettings settings;
  settings.model = "m";
  settings.input = PolicyInput::kPromptText;
  EXPECT_EQ(BuildPolicyRequestBody(settings, kMultiTurn),
            R"({"model":"m","messages":[{"role":"user","content":"Continue the conversation )"
            R"(below by writing the assistant's reply to the final user message.\n\n)"
            R"(user: I have a headache.\n\nassistant: Since when?\n\nuser: Two \"days\"."}]})");
  // A single-turn task is its content verbatim, as hb-env and `tasks` show it.
  EXPECT_EQ(BuildPolicyRequestBody(settings, {{"user", "Hi"}}),
            R"({"model":"m","messages":[{"role":"user","content":"Hi"}]})");
}

TEST(PolicyRequestTest, RejectsBadSettingsNamingTheFlag) {
  PolicyRequestSettings settings;
  EXPECT_THAT(ValidatePolicyRequestSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--policy-model")));
  settings.model = "m";
  settings.extra_body = "[1]";
  EXPECT_THAT(ValidatePolicyRequestSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a JSON object")));
  settings.extra_body = R"({"messages":[]})";
  EXPECT_THAT(ValidatePolicyRequestSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'messages'")));
  settings.extra_body = "{";
  EXPECT_THAT(ValidatePolicyRequestSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
  settings.extra_body.clear();
  settings.temperature = 3;
  EXPECT_THAT(ValidatePolicyRequestSettings(settings),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--policy-temperature")));
  PolicyInput input;
  EXPECT_THAT(ParsePolicyInput("text", &input),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--policy-input")));
}

TEST(PolicyRequestTest, FingerprintChangesWithEverySetting) {
  PolicyRequestSettings a;
  a.model = "m";
  PolicyRequestSettings b = a;
  b.max_tokens = 10;
  PolicyRequestSettings c = a;
  c.input = PolicyInput::kPromptText;
  PolicyRequestSettings d = a;
  d.system_prompt = "";
  EXPECT_NE(PolicySettingsFingerprint(a), PolicySettingsFingerprint(b));
  EXPECT_NE(PolicySettingsFingerprint(a), PolicySettingsFingerprint(c));
  EXPECT_NE(PolicySettingsFingerprint(a), PolicySettingsFingerprint(d));
  EXPECT_EQ(PolicySettingsFingerprint(a), PolicySettingsFingerprint(a));
}

}  // namespace
}  // namespace hb
