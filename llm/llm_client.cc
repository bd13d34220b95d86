#include "llm/llm_client.h"

#include <cstdlib>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hb {
namespace {

constexpr char kOutcomeUrl[] = "type.hb.dev/hb.AttemptOutcome";

}  // namespace

absl::Status WithAttemptOutcome(absl::Status status, const AttemptOutcome& outcome) {
  std::string encoded = absl::StrCat(static_cast<int>(outcome.kind));
  if (outcome.retry_after.has_value()) {
    absl::StrAppend(&encoded, ";", absl::ToInt64Microseconds(*outcome.retry_after));
  }
  status.SetPayload(kOutcomeUrl, absl::Cord(encoded));
  return status;
}

AttemptOutcome AttemptOutcomeOf(const absl::Status& status) {
  if (auto payload = status.GetPayload(kOutcomeUrl)) {
    std::vector<std::string> parts = absl::StrSplit(std::string(*payload), ';');
    int kind = 0;
    if (!parts.empty() && absl::SimpleAtoi(parts[0], &kind) &&
        kind >= static_cast<int>(FailureKind::kConnection) &&
        kind <= static_cast<int>(FailureKind::kCancelled)) {
      AttemptOutcome outcome{static_cast<FailureKind>(kind), std::nullopt};
      int64_t micros = 0;
      if (parts.size() > 1 && absl::SimpleAtoi(parts[1], &micros)) {
        outcome.retry_after = absl::Microseconds(micros);
      }
      return outcome;
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
