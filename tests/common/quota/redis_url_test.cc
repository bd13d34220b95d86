#include "common/quota/redis_url.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(RedisUrlTest, TcpWithPasswordAndDatabase) {
  absl::StatusOr<RedisEndpoint> e = ParseRedisUrl("redis://:s3cret@redis.quota:6380/2");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host, "redis.quota");
  EXPECT_EQ(e->port, 6380);
  EXPECT_EQ(e->username, "");
  EXPECT_EQ(e->password, "s3cret");
  EXPECT_EQ(e->db, 2);
  EXPECT_EQ(RedisEndpointName(*e), "redis://redis.quota:6380/2");
}

TEST(RedisUrlTest, DefaultsAndUserAndIpv6) {
  absl::StatusOr<RedisEndpoint> e = ParseRedisUrl("redis://127.0.0.1");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->port, 6379);
  EXPECT_EQ(e->db, 0);
  e = ParseRedisUrl("redis://hb:pw@[::1]:7000");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 7000);
  EXPECT_EQ(e->username, "hb");
  EXPECT_EQ(e->password, "pw");
}

TEST(RedisUrlTest, UnixSocket) {
  absl::StatusOr<RedisEndpoint> e = ParseRedisUrl("unix:///run/redis/redis.sock?db=3");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->unix_path, "/run/redis/redis.sock");
  EXPECT_EQ(e->db, 3);
  EXPECT_EQ(RedisEndpointName(*e), "unix:///run/redis/redis.sock?db=3");
}

TEST(RedisUrlTest, ErrorsSayWhatIsWrongAndNeverThePassword) {
  EXPECT_THAT(ParseRedisUrl("http://x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown scheme")));
  EXPECT_THAT(ParseRedisUrl("rediss://x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("TLS")));
  EXPECT_THAT(ParseRedisUrl("redis://:topsecret@host:99999"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("port"), Not(HasSubstr("topsecret")))));
  EXPECT_THAT(ParseRedisUrl("redis://:topsecret@host/x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("database"), Not(HasSubstr("topsecret")))));
  EXPECT_THAT(ParseRedisUrl("unix://relative.sock"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absolute")));
  EXPECT_THAT(ParseRedisUrl("redis://:pw@"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no host")));
}

}  // namespace
}  // namespace hb
