// Retry information carried on absl::Status, the way gRPC's richer error model carries it: a
// google.rpc.RetryInfo detail (a payload under kRetryInfoTypeUrl holding the serialized
// message), never a text protocol inside the status message. common/rpc/grpc_status.h maps the
// same detail to and from grpc-status-details-bin, so other gRPC clients can read it.
//
// Also the one notion of "worth another attempt" for a status code, and the mark that tells a
// server's own capacity refusal ("server busy") apart from an upstream's rate limit: both are
// kResourceExhausted with a retry delay, but only the second says the job sends too much.
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

// The type URL of a google.rpc.ErrorInfo payload, and the reason and domain of the ErrorInfo
// that MarkServerBusy attaches.
inline constexpr absl::string_view kErrorInfoTypeUrl = "type.googleapis.com/google.rpc.ErrorInfo";
inline constexpr absl::string_view kServerBusyReason = "SERVER_BUSY";
inline constexpr absl::string_view kServerBusyDomain = "healthbench";

// Marks a kResourceExhausted refusal as the server's own capacity refusal (a
// google.rpc.ErrorInfo {reason "SERVER_BUSY", domain "healthbench"}, replacing any earlier
// ErrorInfo), as opposed to an upstream's rate limit relayed by the server. The refusals that
// carry it: ConcurrencyLimit's (common/rpc/concurrency_limit.h: hb-grader's and hb-env's
// --max-concurrent-rpcs, hb-grader's --max-upstream-in-flight + --max-upstream-queue) and
// hb-env's --max-pending backlog. An upstream's 429 (hb::Grader's kResourceExhausted) never does.
// Callers that adapt their load (grader_client/reply_signal.h) retry a busy refusal after its
// retry delay without reading it as a rate limit. A no-op on an OK status.
void MarkServerBusy(absl::Status& status);

// True when `status` is kResourceExhausted and carries MarkServerBusy's ErrorInfo (also after a
// trip through common/rpc/grpc_status.h). False for any other code, no ErrorInfo, another
// reason or domain, or a payload that is not a valid ErrorInfo.
bool IsServerBusy(const absl::Status& status);

// True for the codes worth another attempt of the same call: kUnavailable,
// kResourceExhausted, kDeadlineExceeded, kInternal and kUnknown. kCancelled, kInvalidArgument,
// kFailedPrecondition, kPermissionDenied and the rest are final (and kOk is not an error).
bool IsRetryableCode(absl::StatusCode code);

}  // namespace hb
