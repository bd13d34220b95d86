// GraderStack with --quota-redis: the start-up check against a real redis-server (reachable,
// refusing, absent) and the degraded gauge on the stack's registry.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "grader/grader_stack.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::RedisServer;
using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

GraderStackOptions Options(const std::string& redis_url) {
  GraderStackOptions options;
  options.template_path = hb::testing::ReferenceTemplatePath();
  options.llm.base_url = "http://127.0.0.1:9/v1";
  options.quota.redis_url = redis_url;
  if (!redis_url.empty()) options.quota.rpm = 600;
  return options;
}

std::string Metrics(const GraderStack& stack) {
  return prometheus::TextSerializer().Serialize(stack.registry()->Collect());
}

TEST(GraderStackQuotaTest, StartsOnAReachableRedisWithTheGaugeAtZero) {
  absl::StatusOr<std::unique_ptr<RedisServer>> redis = RedisServer::Start("pw-1");
  ASSERT_TRUE(redis.ok()) << redis.status();
  GraderStackOptions options = Options((*redis)->url());
  options.quota.redis_password = "pw-1";
  absl::StatusOr<std::unique_ptr<GraderStack>> stack = GraderStack::Start(options);
  ASSERT_TRUE(stack.ok()) << stack.status();
  EXPECT_THAT(Metrics(**stack), HasSubstr("hb_grader_quota_degraded 0"));
}

TEST(GraderStackQuotaTest, RefusedPasswordAndAbsentRedisStopTheStart) {
  absl::StatusOr<std::unique_ptr<RedisServer>> redis = RedisServer::Start("pw-1");
  ASSERT_TRUE(redis.ok()) << redis.status();
  GraderStackOptions options = Options((*redis)->url());
  options.quota.redis_password = "not-pw-1";
  EXPECT_THAT(GraderStack::Start(options),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       AllOf(HasSubstr("--quota-redis"), Not(HasSubstr("not-pw-1")))));
  EXPECT_THAT(GraderStack::Start(Options("unix://" + hb::testing::MakeTempDir() + "/no.sock")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("--quota-redis: cannot reach Redis")));
}

TEST(GraderStackQuotaTest, WithoutQuotaThereIsNoGauge) {
  absl::StatusOr<std::unique_ptr<GraderStack>> stack = GraderStack::Start(Options(""));
  ASSERT_TRUE(stack.ok()) << stack.status();
  EXPECT_THAT(Metrics(**stack), Not(HasSubstr("hb_grader_quota_degraded")));
}

}  // namespace
}  // namespace hb
