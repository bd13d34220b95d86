#include "grader/grader_stack_options.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

LlmOptions Llm(const std::string& base_url, bool given, const std::string& key = "sk-SECRET") {
  LlmOptions llm;
  llm.base_url = base_url;
  llm.base_url_given = given;
  llm.api_key = key;
  return llm;
}

TEST(ApiKeyWarningsTest, AKeyGoingToTheDefaultUrlImplicitlyIsWarnedAbout) {
  EXPECT_THAT(ApiKeyWarnings(Llm(LlmOptions{}.base_url, /*given=*/false)),
              ElementsAre("the API key ($OPENAI_API_KEY or --llm-api-key-file) goes to "
                          "https://api.openai.com/v1, the default --llm-base-url: pass "
                          "--llm-base-url to choose the endpoint explicitly"));
  EXPECT_THAT(ApiKeyWarnings(Llm(LlmOptions{}.base_url, /*given=*/true)), IsEmpty());
}

TEST(ApiKeyWarningsTest, AKeyOverPlainHttpToAnotherHostIsWarnedAbout) {
  const std::vector<std::string> warnings =
      ApiKeyWarnings(Llm("http://user:pw@vllm.internal:8000/v1", /*given=*/true));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "the API key goes over plain http:// to http://[redacted]@vllm.internal:8000/v1, "
            "readable by anyone on the path: use https://");
  for (const char* local : {"http://127.0.0.1:8000/v1", "http://localhost:8000/v1",
                            "http://[::1]:8000/v1", "https://vllm.internal/v1"}) {
    EXPECT_THAT(ApiKeyWarnings(Llm(local, /*given=*/true)), IsEmpty()) << local;
  }
}

TEST(ApiKeyWarningsTest, NoKeyNoWarningAndTheKeyIsNeverInOne) {
  EXPECT_THAT(ApiKeyWarnings(Llm("http://vllm.internal/v1", false, "")), IsEmpty());
  for (const std::string& w : ApiKeyWarnings(Llm("http://vllm.internal/v1", false))) {
    EXPECT_THAT(w, Not(HasSubstr("SECRET")));
  }
}

// The upstream's preflight names the grader flags and whether the URL is the default.
TEST(LlmEndpointTest, NamesTheGraderFlagsAndTheKeySource) {
  const EndpointPreflight implicit = LlmEndpoint(Llm(LlmOptions{}.base_url, false, ""));
  EXPECT_EQ(implicit.base_url, "https://api.openai.com/v1");
  EXPECT_FALSE(implicit.has_api_key);
  EXPECT_TRUE(implicit.url_is_default);
  EXPECT_EQ(implicit.url_flag, "--llm-base-url");
  EXPECT_EQ(implicit.key_source, "$OPENAI_API_KEY or --llm-api-key-file");
  const EndpointPreflight given = LlmEndpoint(Llm("http://127.0.0.1:9/v1", true));
  EXPECT_TRUE(given.has_api_key);
  EXPECT_FALSE(given.url_is_default);
  // Azure OpenAI takes its key in an --llm-header (api-key), with no bearer token.
  const EndpointPreflight azure = LlmEndpoint(Llm("https://x.openai.azure.com/openai", true, ""),
                                              {GraderHeader{"api-key", "k", "sha"}});
  EXPECT_TRUE(azure.has_api_key);
  HB_EXPECT_OK(PreflightEndpoint(azure, [](const std::string&) { return absl::OkStatus(); }));
  EXPECT_FALSE(PreflightEndpoint(LlmEndpoint(Llm("https://x.openai.azure.com/openai", true, "")),
                                 [](const std::string&) { return absl::OkStatus(); })
                   .ok());
}

TEST(CheckQuotaSettingsTest, NamesTheFlagAndNeverEchoesTheUrl) {
  QuotaSettings quota;
  EXPECT_TRUE(CheckQuotaSettings(quota).ok());
  quota.rpm = 3000;
  EXPECT_THAT(CheckQuotaSettings(quota), testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                           HasSubstr("need --quota-redis")));
  quota.redis_url = "redis://:hunter2@redis:0";
  EXPECT_THAT(CheckQuotaSettings(quota),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("--quota-redis: "), Not(HasSubstr("hunter2")))));
  quota.redis_url = "unix:///run/redis.sock";
  EXPECT_TRUE(CheckQuotaSettings(quota).ok());
  quota.fallback_share = 0;
  EXPECT_THAT(CheckQuotaSettings(quota), testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                           HasSubstr("--quota-fallback-share")));
  quota.fallback_share = 0.5;
  quota.tpm = -1;
  EXPECT_THAT(CheckQuotaSettings(quota),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--quota-tpm")));
}

}  // namespace
}  // namespace hb
