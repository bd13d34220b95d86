#include "grader/grader_info.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
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
