#include "grader_service/grader_server_options.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

TEST(CompleteGraderServerOptionsTest, DerivesTheReceiveLimitFromTheStacksLimits) {
  HB_ASSERT_OK_AND_ASSIGN(GraderServerOptions options,
                          CompleteGraderServerOptions(GraderServerOptions{}));
  EXPECT_EQ(options.max_receive_message_bytes, 8 << 20);  // twice the default max_prompt_bytes
  GraderServerOptions small;
  small.limits.max_prompt_bytes = 1000;
  small.limits.max_message_bytes = 5000;
  HB_ASSERT_OK_AND_ASSIGN(options, CompleteGraderServerOptions(small));
  EXPECT_EQ(options.max_receive_message_bytes, 5000 + (1 << 20));  // at least a message + 1 MiB
}

TEST(CompleteGraderServerOptionsTest, ChecksTheStackHalfThenTheServerHalf) {
  GraderServerOptions options;
  options.retry.max_attempts = 0;
  options.max_concurrent_rpcs = -1;
  EXPECT_THAT(CompleteGraderServerOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--max-attempts")));
  options.retry.max_attempts = 3;
  EXPECT_THAT(CompleteGraderServerOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--max-concurrent-rpcs")));
  options.max_concurrent_rpcs = 0;
  options.default_deadline = absl::ZeroDuration();
  EXPECT_THAT(CompleteGraderServerOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--default-deadline")));
}

TEST(CompleteGraderServerOptionsTest, KeepsTheServerFields) {
  GraderServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.max_upstream_queue = 7;
  options.reflection = true;
  options.llm.attempt_timeout = absl::Milliseconds(500);
  HB_ASSERT_OK_AND_ASSIGN(GraderServerOptions complete, CompleteGraderServerOptions(options));
  EXPECT_EQ(complete.listen_address, "127.0.0.1:0");
  EXPECT_EQ(complete.max_upstream_queue, 7);
  EXPECT_TRUE(complete.reflection);
  EXPECT_EQ(complete.retry.min_attempt_time, absl::Milliseconds(500));  // the stack half, completed
}

}  // namespace
}  // namespace hb
