#include "grader_client/grader_connection.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ParseGraderTargetTest, EmbeddedOrAGrpcTarget) {
  HB_ASSERT_OK_AND_ASSIGN(GraderTarget embedded, ParseGraderTarget("embedded"));
  EXPECT_TRUE(embedded.embedded());
  HB_ASSERT_OK_AND_ASSIGN(GraderTarget remote, ParseGraderTarget("dns:///grader-headless:50051"));
  EXPECT_EQ(remote.kind, GraderTarget::Kind::kRemote);
  EXPECT_EQ(remote.address, "dns:///grader-headless:50051");
  EXPECT_THAT(ParseGraderTarget(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--grader is empty")));
  for (const char* target :
       {"ipv4:127.0.0.1:50051,127.0.0.1:50052", "127.0.0.1:50051", "grader:50051", "[::1]:50051",
        "ipv6:[::1]:50051", "unix:/run/hb/grader.sock", "DNS:///grader:1"}) {
    HB_EXPECT_OK(ParseGraderTarget(target).status()) << target;
  }
}

// An OpenAI-compatible URL given to --grader is refused at once, pointing at --llm-base-url,
// instead of waiting --grader-ready-timeout for a gRPC replica that is not there.
TEST(ParseGraderTargetTest, AnHttpUrlOrNoTargetIsRefusedNamingLlmBaseUrl) {
  EXPECT_THAT(ParseGraderTarget("http://127.0.0.1:9/v1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--grader 'http://127.0.0.1:9/v1' is an HTTP URL, not an "
                                 "hb-grader gRPC target: give 'embedded', or the gRPC target")));
  EXPECT_THAT(ParseGraderTarget("HTTPS://api.openai.com/v1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("An OpenAI-compatible URL goes in --llm-base-url")));
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"grpc://grader:50051", "has scheme 'grpc', which gRPC does not resolve"},
      {"grader-headless", "is not a gRPC target (no scheme, no HOST:PORT)"},
      {"grader:port", "is not a gRPC target"},
      {"grader:70000", "is not a gRPC target"},
      {"ipv4:", "names no address after its scheme"},
      {"dns:///", "names no address after its scheme"},
      {"127.0.0.1:50051 ", "contains white space"},
  };
  for (const auto& [target, why] : refused) {
    EXPECT_THAT(
        ParseGraderTarget(target),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr("--grader '" + target + "' " + why), HasSubstr("--llm-base-url"))))
        << target;
  }
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
