#include "llm/llm_client.h"

#include <cstdlib>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/retry/retry_status.h"

namespace hb {
namespace {

constexpr char kOutcomeUrl[] = "type.hb.dev/hb.AttemptOutcome";

}  // namespace

absl::Status WithAttemptOutcome(absl::Status status, const AttemptOutcome& outcome) {
  status.SetPayload(kOutcomeUrl, absl::Cord(absl::StrCat(static_cast<int>(outcome.kind))));
  if (outcome.retry_after.has_value()) SetRetryDelay(status, *outcome.retry_after);
  return status;
}

AttemptOutcome AttemptOutcomeOf(const absl::Status& status) {
  if (auto payload = status.GetPayload(kOutcomeUrl)) {
    int kind = 0;
    if (absl::SimpleAtoi(std::string(*payload), &kind) &&
        kind >= static_cast<int>(FailureKind::kConnection) &&
        kind <= static_cast<int>(FailureKind::kCancelled)) {
      return AttemptOutcome{static_cast<FailureKind>(kind), RetryDelay(status)};
    }
  }
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
      return {FailureKind::kConnection, std::nullopt};
    case absl::StatusCode::kDeadlineExceeded:
      return {FailureKind::kTimeout, std::nullopt};
    case absl::StatusCode::kResourceExhausted:
      return {FailureKind::kHttp429, std::nullopt};
    case absl::StatusCode::kAborted:
      return {FailureKind::kHttp409, std::nullopt};
    case absl::StatusCode::kDataLoss:
      return {FailureKind::kMalformedReply, std::nullopt};
    case absl::StatusCode::kInvalidArgument:
      return {FailureKind::kHttp400, std::nullopt};
    case absl::StatusCode::kUnauthenticated:
      return {FailureKind::kHttp401, std::nullopt};
    case absl::StatusCode::kPermissionDenied:
      return {FailureKind::kHttp403, std::nullopt};
    case absl::StatusCode::kNotFound:
      return {FailureKind::kHttp404, std::nullopt};
    case absl::StatusCode::kCancelled:
      return {FailureKind::kCancelled, std::nullopt};
    default:
      return {FailureKind::kOtherHttp4xx, std::nullopt};
  }
}

}  // namespace hb
