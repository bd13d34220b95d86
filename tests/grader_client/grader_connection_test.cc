#include "grader_client/grader_connection.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ParseGraderTargetTest, EmbeddedOrAGrpcTarget) {
  HB_ASSERT_OK_AND_ASSIGN(GraderTarget embedded, ParseGraderTarget("embedded"));
  EXPECT_TRUE(embedded.embedded());
  HB_ASSERT_OK_AND_ASSIGN(GraderTarget remote, ParseGraderTarget("dns:///grader-headless:50051"));
  EXPECT_EQ(remote.kind, GraderTarget::Kind::kRemote);
  EXPECT_EQ(remote.address, "dns:///grader-headless:50051");
  EXPECT_THAT(ParseGraderTarget(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--grader is empty")));
}

// A gRPC target with no replica listening fails at once, not after 3 x --row-timeout per row.
TEST(ConnectGraderTest, RejectsATargetWithNoReplicaReachable) {
  GraderConnectOptions options;
  options.target = GraderTarget{GraderTarget::Kind::kRemote, "ipv4:127.0.0.1:1"};
  options.ready_timeout = absl::Milliseconds(300);
  EXPECT_THAT(ConnectGrader(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no hb-grader replica reachable at ipv4:127.0.0.1:1 within "
                                 "300ms: ")));
}

// The embedded grader's own errors pass through (here: no template at the path).
TEST(ConnectGraderTest, AnEmbeddedGraderThatCannotStartSaysWhy) {
  GraderConnectOptions options;
  options.stack.template_path = "/nonexistent/grader_template.txt";
  EXPECT_THAT(ConnectGrader(options),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/grader_template.txt")));
}

}  // namespace
}  // namespace hb
