#include "grader/grader_info.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grader/grader_settings.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOk;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ReplicaInfo Replica(const std::string& name, const GraderSettings& settings,
                    const std::string& base_url = "https://api.openai.com/v1",
                    const std::string& version = "0.1.0") {
  return {name, MakeGraderInfo(settings, "sha-t", base_url, version)};
}

TEST(GraderInfoTest, MakeGraderInfoCarriesTheSettingsAndRedactsTheUrl) {
  GraderSettings settings;
  settings.model = "m";
  settings.temperature = 0.25;
  settings.max_tokens = 77;
  const auto info = MakeGraderInfo(settings, "sha-t", "https://u:pw@h:1/v1?key=k", "9.9");
  EXPECT_EQ(info.model(), "m");
  EXPECT_EQ(info.temperature(), 0.25);
  EXPECT_EQ(info.max_tokens(), 77);
  EXPECT_EQ(info.system_message(), "You are a helpful assistant.");
  EXPECT_EQ(info.template_sha256(), "sha-t");
  EXPECT_EQ(info.upstream_base_url(), "https://[redacted]@h:1/v1?key=[redacted]");
  EXPECT_EQ(info.version(), "9.9");
  const GraderSettings back = SettingsOf(info);
  EXPECT_EQ(back.model, "m");
  EXPECT_EQ(back.temperature, 0.25);
  EXPECT_EQ(back.max_tokens, 77);
  EXPECT_EQ(back.system_message, settings.system_message);
}

TEST(GraderInfoTest, ReplicasThatChangeAVerdictDifferentlyAreRefused) {
  GraderSettings hotter;
  hotter.temperature = 1.0;
  EXPECT_THAT(CheckGradersAgree({Replica("a", {}), Replica("b", {}), Replica("c", hotter)}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("graders disagree on temperature: replica a has '0.5', replica c "
                                 "has '1'; their verdicts would not be comparable: start every "
                                 "hb-grader replica with the same --llm-temperature")));
  ReplicaInfo other_template = Replica("b", {});
  other_template.info.set_template_sha256("sha-u");
  EXPECT_THAT(CheckGradersAgree({Replica("a", {}), other_template}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("disagree on template_sha256: replica a has 'sha-t', replica b "
                                 "has 'sha-u'")));
}

TEST(GraderInfoTest, UpstreamAndVersionDifferencesOnlyWarn) {
  std::vector<std::string> warnings;
  EXPECT_THAT(CheckGradersAgree({Replica("a", {}), Replica("b", {}, "https://eu.example/v1", "0.2"),
                                 Replica("c", {})},
                                &warnings),
              IsOk());
  EXPECT_THAT(warnings,
              ElementsAre("graders disagree on upstream_base_url: replica a has "
                          "'https://api.openai.com/v1', replica b has 'https://eu.example/v1'",
                          "graders disagree on version: replica a has '0.1.0', replica b has "
                          "'0.2'"));
  EXPECT_THAT(CheckGradersAgree({}), IsOk());
}

}  // namespace
}  // namespace hb

namespace hb {
namespace {

GraderSettings ProfessionalSettings() {
  GraderSettings settings;
  settings.model = kProfessionalGraderModel;
  settings.api = GraderApi::kResponses;
  settings.reasoning_effort = kProfessionalReasoningEffort;
  return settings;
}

// --professional (or a --llm-* flag) against a gRPC grader: what the replicas report must be
// what the command line asked for, else the run refuses before grading, naming the field.
TEST(GraderInfoTest, ARemoteGraderMustGradeWithWhatTheCommandLineAskedFor) {
  const std::vector<ExpectedGraderField> professional = ExpectedGraderFields(
      ProfessionalSettings(), {"model", "api", "reasoning_effort", "extra_body"}, "--professional");
  ASSERT_EQ(professional.size(), 4u);
  EXPECT_EQ(professional[1].value, "responses");
  EXPECT_EQ(professional[3].value, "");  // no extra body: not listed
  const auto info = [](const GraderSettings& settings) {
    return MakeGraderInfo(settings, "sha-t", "https://api.openai.com/v1", "0.1.0");
  };
  HB_EXPECT_OK(CheckGraderIsExpected(professional, info(ProfessionalSettings()), "ipv4:h:1"));
  EXPECT_THAT(CheckGraderIsExpected(professional, info(GraderSettings{}), "ipv4:h:1"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "--professional asks for a grader with model 'gpt-5.4-2026-03-05', but the "
                       "hb-grader replicas at ipv4:h:1 grade with model 'gpt-4.1-2025-04-14' "
                       "(GetInfo); nothing was graded: start every replica with "
                       "--llm-model=gpt-5.4-2026-03-05, or grade with --grader embedded"));
  GraderSettings chat = ProfessionalSettings();
  chat.api = GraderApi::kChatCompletions;
  chat.reasoning_effort = "";
  EXPECT_THAT(CheckGraderIsExpected(professional, info(chat), "ipv4:h:1"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("with api 'responses', but the hb-grader replicas at ipv4:h:1 "
                                 "grade with api 'chat' (GetInfo); nothing was graded: start "
                                 "every replica with --llm-api=responses")));
  GraderSettings medium = ProfessionalSettings();
  medium.reasoning_effort = "medium";
  EXPECT_THAT(
      CheckGraderIsExpected(professional, info(medium), "ipv4:h:1"),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--llm-reasoning-effort=low")));
  GraderSettings extra = ProfessionalSettings();
  extra.extra_body = R"({"x":1})";
  EXPECT_THAT(CheckGraderIsExpected(professional, info(extra), "ipv4:h:1"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("with extra_body none, but the hb-grader replicas at ipv4:h:1 "
                                 "grade with extra_body '{\"x\":1}'")));
  GraderSettings cold;
  cold.temperature = 0;
  EXPECT_THAT(
      CheckGraderIsExpected(ExpectedGraderFields(cold, {"temperature"}, "--llm-temperature"),
                            info(GraderSettings{}), "dns:///g:1"),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("--llm-temperature asks for a grader with temperature '0', but "
                         "the hb-grader replicas at dns:///g:1 grade with temperature "
                         "'0.5'")));
  HB_EXPECT_OK(CheckGraderIsExpected({}, info(GraderSettings{}), "dns:///g:1"));
}

}  // namespace
}  // namespace hb
