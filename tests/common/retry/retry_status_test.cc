#include "common/retry/retry_status.h"

#include "absl/strings/cord.h"
#include "gmock/gmock.h"
#include "google/rpc/error_details.pb.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

TEST(RetryStatusTest, TheDelayRoundTripsAsAStandardRetryInfoPayload) {
  absl::Status status = absl::ResourceExhaustedError("rate limited");
  SetRetryDelay(status, absl::Milliseconds(45250));
  EXPECT_EQ(RetryDelay(status), absl::Milliseconds(45250));
  EXPECT_EQ(status.message(), "rate limited");
  const absl::optional<absl::Cord> payload =
      status.GetPayload("type.googleapis.com/google.rpc.RetryInfo");
  ASSERT_TRUE(payload.has_value());
  google::rpc::RetryInfo info;
  ASSERT_TRUE(info.ParseFromString(std::string(*payload)));
  EXPECT_EQ(info.retry_delay().seconds(), 45);
  EXPECT_EQ(info.retry_delay().nanos(), 250'000'000);
}

TEST(RetryStatusTest, TheLatestDelayWinsAndNegativeDelaysClampToZero) {
  absl::Status status = absl::UnavailableError("x");
  SetRetryDelay(status, absl::Seconds(3));
  SetRetryDelay(status, absl::Seconds(-5));
  EXPECT_EQ(RetryDelay(status), absl::ZeroDuration());
}

TEST(RetryStatusTest, NoDelayOnOkPlainOrGarbledStatuses) {
  absl::Status ok = absl::OkStatus();
  SetRetryDelay(ok, absl::Seconds(1));
  EXPECT_EQ(RetryDelay(ok), std::nullopt);
  EXPECT_EQ(RetryDelay(absl::UnavailableError("x [retry_after_ms=5]")), std::nullopt);
  absl::Status garbled = absl::UnavailableError("x");
  garbled.SetPayload(kRetryInfoTypeUrl, absl::Cord("\xff\xff not a proto"));
  EXPECT_EQ(RetryDelay(garbled), std::nullopt);
}

TEST(RetryStatusTest, TheServerBusyMarkIsAStandardErrorInfoPayloadBesideTheRetryInfo) {
  absl::Status busy = absl::ResourceExhaustedError("server busy: 3 RPCs in progress");
  SetRetryDelay(busy, absl::Seconds(1));
  EXPECT_FALSE(IsServerBusy(busy));
  MarkServerBusy(busy);
  EXPECT_TRUE(IsServerBusy(busy));
  EXPECT_EQ(RetryDelay(busy), absl::Seconds(1));  // the delay is kept
  const absl::optional<absl::Cord> payload =
      busy.GetPayload("type.googleapis.com/google.rpc.ErrorInfo");
  ASSERT_TRUE(payload.has_value());
  google::rpc::ErrorInfo info;
  ASSERT_TRUE(info.ParseFromString(std::string(*payload)));
  EXPECT_EQ(info.reason(), "SERVER_BUSY");
  EXPECT_EQ(info.domain(), "healthbench");
}

TEST(RetryStatusTest, OnlyAMarkedResourceExhaustedIsServerBusy) {
  // An upstream's 429 relayed by the grader: a rate limit, not a busy server.
  absl::Status upstream = absl::ResourceExhaustedError("http_429");
  SetRetryDelay(upstream, absl::Seconds(45));
  EXPECT_FALSE(IsServerBusy(upstream));
  // The mark means nothing on another code.
  absl::Status unavailable = absl::UnavailableError("x");
  MarkServerBusy(unavailable);
  EXPECT_FALSE(IsServerBusy(unavailable));
  absl::Status ok = absl::OkStatus();
  MarkServerBusy(ok);
  EXPECT_FALSE(IsServerBusy(ok));
  // Another service's ErrorInfo, or a garbled one.
  google::rpc::ErrorInfo other;
  other.set_reason("SERVER_BUSY");
  other.set_domain("example.com");
  absl::Status foreign = absl::ResourceExhaustedError("x");
  foreign.SetPayload(kErrorInfoTypeUrl, absl::Cord(other.SerializeAsString()));
  EXPECT_FALSE(IsServerBusy(foreign));
  absl::Status garbled = absl::ResourceExhaustedError("x");
  garbled.SetPayload(kErrorInfoTypeUrl, absl::Cord("\xff\xff not a proto"));
  EXPECT_FALSE(IsServerBusy(garbled));
}

TEST(RetryStatusTest, RetryableCodes) {
  for (absl::StatusCode code :
       {absl::StatusCode::kUnavailable, absl::StatusCode::kResourceExhausted,
        absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kInternal,
        absl::StatusCode::kUnknown}) {
    EXPECT_TRUE(IsRetryableCode(code)) << absl::StatusCodeToString(code);
  }
  for (absl::StatusCode code :
       {absl::StatusCode::kOk, absl::StatusCode::kCancelled, absl::StatusCode::kInvalidArgument,
        absl::StatusCode::kFailedPrecondition, absl::StatusCode::kPermissionDenied,
        absl::StatusCode::kNotFound, absl::StatusCode::kUnauthenticated}) {
    EXPECT_FALSE(IsRetryableCode(code)) << absl::StatusCodeToString(code);
  }
}

}  // namespace
}  // namespace hb
