#include "common/retry/retry_status.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/cord.h"
#include "google/rpc/error_details.pb.h"

namespace hb {

void SetRetryDelay(absl::Status& status, absl::Duration delay) {
  delay = std::max(delay, absl::ZeroDuration());
  google::rpc::RetryInfo info;
  const int64_t seconds = absl::IDivDuration(delay, absl::Seconds(1), &delay);
  info.mutable_retry_delay()->set_seconds(seconds);
  info.mutable_retry_delay()->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(delay)));
  status.SetPayload(kRetryInfoTypeUrl, absl::Cord(info.SerializeAsString()));
}

std::optional<absl::Duration> RetryDelay(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kRetryInfoTypeUrl);
  if (!payload.has_value()) return std::nullopt;
  google::rpc::RetryInfo info;
  if (!info.ParseFromString(std::string(*payload))) return std::nullopt;
  const absl::Duration delay =
      absl::Seconds(info.retry_delay().seconds()) + absl::Nanoseconds(info.retry_delay().nanos());
  if (delay < absl::ZeroDuration()) return std::nullopt;
  return delay;
}

void MarkServerBusy(absl::Status& status) {
  google::rpc::ErrorInfo info;
  info.set_reason(std::string(kServerBusyReason));
  info.set_domain(std::string(kServerBusyDomain));
  status.SetPayload(kErrorInfoTypeUrl, absl::Cord(info.SerializeAsString()));
}

bool IsServerBusy(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kResourceExhausted) return false;
  const absl::optional<absl::Cord> payload = status.GetPayload(kErrorInfoTypeUrl);
  if (!payload.has_value()) return false;
  google::rpc::ErrorInfo info;
  if (!info.ParseFromString(std::string(*payload))) return false;
  return info.reason() == kServerBusyReason && info.domain() == kServerBusyDomain;
}

bool IsRetryableCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
      return true;
    default:
      return false;
  }
}

}  // namespace hb
