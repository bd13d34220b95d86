// Retry information carried on absl::Status, the way gRPC's richer error model carries it: a
// google.rpc.RetryInfo detail (a payload under kRetryInfoTypeUrl holding the serialized
// message), never a text protocol inside the status message. common/rpc/grpc_status.h maps the
// same detail to and from grpc-status-details-bin, so other gRPC clients can read it.
//
// Also the one notion of "worth another attempt" for a status code.
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hb {

// The type URL of a google.rpc.RetryInfo payload (the URL an Any holding it carries).
inline constexpr absl::string_view kRetryInfoTypeUrl = "type.googleapis.com/google.rpc.RetryInfo";

// Attaches `delay` (clamped to >= 0) as `status`'s RetryInfo, replacing any earlier one. A no-op
// on an OK status (absl::Status keeps no payloads there).
void SetRetryDelay(absl::Status& status, absl::Duration delay);

// The retry delay attached by SetRetryDelay (or carried over from gRPC), or std::nullopt when
// `status` has none or the payload is not a valid RetryInfo with a non-negative delay.
std::optional<absl::Duration> RetryDelay(const absl::Status& status);

// True for the codes worth another attempt of the same call: kUnavailable,
// kResourceExhausted, kDeadlineExceeded, kInternal and kUnknown. kCancelled, kInvalidArgument,
// kFailedPrecondition, kPermissionDenied and the rest are final (and kOk is not an error).
bool IsRetryableCode(absl::StatusCode code);

}  // namespace hb
