#include "common/rpc/grpc_status.h"

#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "common/retry/retry_status.h"
#include "gmock/gmock.h"
#include "google/rpc/status.pb.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::UnorderedElementsAre;

TEST(GrpcStatusTest, CodeAndMessagePassThroughBothWays) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  const grpc::Status wire = ToGrpcStatus(absl::PermissionDeniedError("no key"));
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(wire.error_message(), "no key");
  EXPECT_EQ(wire.error_details(), "");  // nothing to carry
  EXPECT_THAT(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")),
              StatusIs(absl::StatusCode::kUnavailable, "down"));
}

TEST(GrpcStatusTest, TheRetryDelayTravelsAsAGoogleRpcStatusDetail) {
  absl::Status status = absl::ResourceExhaustedError("rate limited");
  SetRetryDelay(status, absl::Milliseconds(1500));
  const grpc::Status wire = ToGrpcStatus(status);
  google::rpc::Status details;
  ASSERT_TRUE(details.ParseFromString(wire.error_details()));
  EXPECT_EQ(details.code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(details.message(), "rate limited");
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), kRetryInfoTypeUrl);

  const absl::Status back = FromGrpcStatus(wire);
  EXPECT_THAT(back, StatusIs(absl::StatusCode::kResourceExhausted, "rate limited"));
  EXPECT_EQ(RetryDelay(back), absl::Milliseconds(1500));
}

TEST(GrpcStatusTest, TheServerBusyMarkTravelsBesideTheRetryDelay) {
  absl::Status busy = absl::ResourceExhaustedError("server busy");
  SetRetryDelay(busy, absl::Seconds(1));
  MarkServerBusy(busy);
  const grpc::Status wire = ToGrpcStatus(busy);
  google::rpc::Status details;
  ASSERT_TRUE(details.ParseFromString(wire.error_details()));
  std::vector<std::string> type_urls;
  for (const google::protobuf::Any& any : details.details()) type_urls.push_back(any.type_url());
  EXPECT_THAT(type_urls,
              UnorderedElementsAre(std::string(kRetryInfoTypeUrl), std::string(kErrorInfoTypeUrl)));

  const absl::Status back = FromGrpcStatus(wire);
  EXPECT_THAT(back, StatusIs(absl::StatusCode::kResourceExhausted, "server busy"));
  EXPECT_TRUE(IsServerBusy(back));
  EXPECT_EQ(RetryDelay(back), absl::Seconds(1));
}

TEST(GrpcStatusTest, AnUnmarkedResourceExhaustedIsNotServerBusyAfterTheTrip) {
  absl::Status upstream = absl::ResourceExhaustedError("http_429");
  SetRetryDelay(upstream, absl::Seconds(45));
  EXPECT_FALSE(IsServerBusy(FromGrpcStatus(ToGrpcStatus(upstream))));
}

TEST(GrpcStatusTest, GarbledDetailsKeepTheCodeAndMessage) {
  const absl::Status back =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::INTERNAL, "boom", "\xff\xff garbage"));
  EXPECT_THAT(back, StatusIs(absl::StatusCode::kInternal, "boom"));
  EXPECT_EQ(RetryDelay(back), std::nullopt);
}

}  // namespace
}  // namespace hb
