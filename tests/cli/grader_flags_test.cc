#include "cli/grader_flags.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb::cli {
namespace {

using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// The grader group on a program of its own, parsed from `args`.
class GraderFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("OPENAI_API_KEY"); }

  absl::StatusOr<GraderStackOptions> Resolve(std::vector<std::string> args) {
    AddGraderFlags(program_.root(), &flags_);
    absl::StatusOr<Parsed> parsed = program_.Parse(std::move(args));
    if (!parsed.ok()) return parsed.status();
    return ResolveGraderFlags(flags_);
  }

  Program program_{"test", "a test program"};
  GraderFlags flags_;
};

TEST_F(GraderFlagsTest, DefaultsAreTheReferencesSettings) {
  HB_ASSERT_OK_AND_ASSIGN(GraderStackOptions options, Resolve({}));
  EXPECT_EQ(options.settings.model, "gpt-4.1-2025-04-14");
  EXPECT_EQ(options.settings.temperature, 0.5);
  EXPECT_EQ(options.settings.max_tokens, 2048);
  EXPECT_EQ(options.llm.base_url, "https://api.openai.com/v1");
  EXPECT_FALSE(options.llm.base_url_given);
  EXPECT_EQ(options.llm.api_key, "");
}

// --grader-template's default never depends on the working directory: every place it is looked
// for is absolute, and the path resolved without the flag is one of them.
TEST_F(GraderFlagsTest, TheDefaultTemplateIsNeverRelativeToTheWorkingDirectory) {
  const std::vector<std::string> defaults = DefaultGraderTemplatePaths();
  ASSERT_EQ(defaults.size(), 3u);
  for (const std::string& path : defaults) EXPECT_EQ(path.front(), '/') << path;
  EXPECT_THAT(defaults[0], HasSubstr("/share/healthbench/grader_template.txt"));
  EXPECT_EQ(defaults[1], "/usr/share/healthbench/grader_template.txt");
  EXPECT_EQ(defaults[2], hb::testing::SourceDir() + "/data/grader_template.txt");
  HB_ASSERT_OK_AND_ASSIGN(GraderStackOptions options, Resolve({}));
  EXPECT_THAT(defaults, ::testing::Contains(options.template_path));
}

TEST_F(GraderFlagsTest, AGivenTemplateIsTakenAsGiven) {
  HB_ASSERT_OK_AND_ASSIGN(GraderStackOptions options, Resolve({"--grader-template=t.txt"}));
  EXPECT_EQ(options.template_path, "t.txt");
}

TEST_F(GraderFlagsTest, FlagsFillTheStackOptions) {
  HB_ASSERT_OK_AND_ASSIGN(
      GraderStackOptions options,
      Resolve({"--llm-base-url=http://127.0.0.1:9/v1", "--llm-model=m", "--llm-temperature=0",
               "--llm-max-tokens=16", "--max-attempts=2", "--attempt-timeout=500ms",
               "--max-rubric-items=7", "--verdict-cache=/tmp/v.sqlite"}));
  EXPECT_EQ(options.llm.base_url, "http://127.0.0.1:9/v1");
  EXPECT_TRUE(options.llm.base_url_given);
  EXPECT_EQ(options.settings.model, "m");
  EXPECT_EQ(options.settings.temperature, 0);
  EXPECT_EQ(options.settings.max_tokens, 16);
  EXPECT_EQ(options.retry.max_attempts, 2);
  EXPECT_EQ(options.llm.attempt_timeout, absl::Milliseconds(500));
  EXPECT_EQ(options.retry.min_attempt_time, absl::Milliseconds(500));  // completed
  EXPECT_EQ(options.limits.max_rubric_items, 7u);
  EXPECT_EQ(options.verdict_cache_path, "/tmp/v.sqlite");
}

TEST_F(GraderFlagsTest, ExtraBodyIsMadeCanonicalAndHeadersAreParsed) {
  HB_ASSERT_OK_AND_ASSIGN(GraderStackOptions options,
                          Resolve({"--llm-extra-body", R"({ "guided_json": {"type": "object"} })",
                                   "--llm-header", "api-key=k1", "--llm-header=X-Team=a=b"}));
  EXPECT_EQ(options.settings.extra_body, R"({"guided_json":{"type":"object"}})");
  ASSERT_EQ(options.settings.headers.size(), 2u);
  EXPECT_EQ(options.settings.headers[0].name, "api-key");
  EXPECT_EQ(options.settings.headers[0].value, "k1");
  EXPECT_EQ(options.settings.headers[1].name, "X-Team");
  EXPECT_EQ(options.settings.headers[1].value, "a=b");
}

TEST_F(GraderFlagsTest, BadExtraBodyAndHeadersAreRefusedNamingTheFlag) {
  EXPECT_THAT(Resolve({"--llm-extra-body=\"x\""}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--llm-extra-body must be a JSON object")));
  GraderFlags other;
  Program program("other", "");
  AddGraderFlags(program.root(), &other);
  ASSERT_TRUE(program.Parse({"--llm-extra-body={\"messages\":[]}"}).ok());
  EXPECT_THAT(ResolveGraderFlags(other), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("--llm-extra-body sets 'messages'")));
  GraderFlags third;
  Program program3("third", "");
  AddGraderFlags(program3.root(), &third);
  ASSERT_TRUE(program3.Parse({"--llm-header=api-key=SECRET\nX: y"}).ok());
  absl::StatusOr<GraderStackOptions> refused = ResolveGraderFlags(third);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("--llm-header api-key: the value contains a CR, LF")));
  EXPECT_THAT(refused.status().ToString(), Not(HasSubstr("SECRET")));
}

TEST_F(GraderFlagsTest, TheKeyComesFromTheFileTrimmedElseTheEnvironment) {
  const std::string path = ::hb::testing::MakeTempDir() + "/key";
  std::ofstream(path) << "  sk-from-file \n";
  ::setenv("OPENAI_API_KEY", "sk-from-env", 1);
  HB_ASSERT_OK_AND_ASSIGN(GraderStackOptions options, Resolve({"--llm-api-key-file=" + path}));
  EXPECT_EQ(options.llm.api_key, "sk-from-file");
  GraderFlags other;
  Program program("other", "");
  AddGraderFlags(program.root(), &other);
  ASSERT_TRUE(program.Parse({}).ok());
  HB_ASSERT_OK_AND_ASSIGN(options, ResolveGraderFlags(other));
  EXPECT_EQ(options.llm.api_key, "sk-from-env");
}

TEST_F(GraderFlagsTest, AnUnreadableKeyFileNamesTheFlagAndPathNeverAKey) {
  EXPECT_THAT(Resolve({"--llm-api-key-file=/nonexistent/key"}),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("--llm-api-key-file"), HasSubstr("/nonexistent/key"))));
}

TEST_F(GraderFlagsTest, InvalidValuesNameTheFlag) {
  EXPECT_THAT(Resolve({"--max-attempts=0"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--max-attempts")));
}

TEST(CheckUpstreamFlagsAreEmbeddedTest, OnlyTheProcessThatCallsUpstreamKeepsACache) {
  GraderStackOptions options;
  EXPECT_TRUE(CheckUpstreamFlagsAreEmbedded("dns:///graders:50051", options).ok());
  options.verdict_cache_path = "/tmp/v.sqlite";
  EXPECT_TRUE(CheckUpstreamFlagsAreEmbedded(kEmbeddedGrader, options).ok());
  EXPECT_THAT(CheckUpstreamFlagsAreEmbedded("dns:///graders:50051", options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--verdict-cache"), HasSubstr("hb-grader replicas"),
                             Not(HasSubstr("/tmp/v.sqlite")))));
}

TEST(CheckUpstreamFlagsAreEmbeddedTest, TheFleetQuotaBelongsToTheProcessThatCallsUpstream) {
  GraderStackOptions options;
  options.quota.redis_url = "redis://:pw@redis:6379";
  EXPECT_TRUE(CheckUpstreamFlagsAreEmbedded(kEmbeddedGrader, options).ok());
  EXPECT_THAT(CheckUpstreamFlagsAreEmbedded("dns:///graders:50051", options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--quota-redis"), HasSubstr("hb-grader replicas"),
                             Not(HasSubstr("pw")))));
}

}  // namespace
}  // namespace hb::cli
