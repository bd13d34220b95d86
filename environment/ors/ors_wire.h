// Socket-free pieces of the ORS HTTP transport: the mapping from absl::Status to an HTTP
// status and error body, and server-sent-event framing (events, pings, chunking of a large
// payload the way the reference server does it).
//
// Status mapping (the body of every error is {"detail": "<message>"}, as FastAPI writes it):
//
//   absl code             HTTP  notes
//   kInvalidArgument      400   malformed JSON, schema violations, "Invalid split", "Invalid
//   index",
//                               missing X-Session-ID, reply over the environment's size limit
//   kOutOfRange           400   (the reference answers an index outside a split with 400)
//   kAlreadyExists        400   "Session already exists" (as the reference)
//   kFailedPrecondition   400
//   kUnauthenticated      401
//   kPermissionDenied     403
//   kNotFound             404   unknown environment, task id or session
//   (route)               405   known path, wrong method
//   (body)                413   request body over max_body_bytes (the limit is in the message)
//   kResourceExhausted    429   with Retry-After (seconds, from " [retry_after_ms=N]" in the
//                               message, else 1)
//   kUnimplemented        501
//   kUnavailable          503
//   kCancelled            503   the environment is shutting down
//   kDeadlineExceeded     504
//   anything else         500
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hb::env {

// The HTTP status for `code` (table above). kOk maps to 200.
int HttpStatusOf(absl::StatusCode code);

// {"detail": "<message>"}.
std::string ErrorBody(absl::string_view message);

// The Retry-After header value (whole seconds, at least 1) for a kResourceExhausted status.
std::string RetryAfterSeconds(const absl::Status& status);

// One event: "event: <name>\r\n" then one "data: <line>\r\n" per line of `data` (so a client
// that joins data lines with "\n" gets `data` back), then "\r\n".
std::string SseEvent(absl::string_view name, absl::string_view data);

// A comment line clients ignore, sent while a call is running so that proxies and the client's
// read timeout see traffic (the reference sends one every 10 s).
std::string SsePing();

// Splits `payload` into consecutive pieces of at most `max_bytes` (>= 8) for "chunk" events
// (every piece but the last) and the final "end" event. An empty payload is one empty piece.
// A cut never falls inside a UTF-8 sequence (a client decoding line by line would drop the
// halves) and never leaves a piece starting with a space or tab (the client strips leading
// whitespace from each data line).
std::vector<absl::string_view> SseChunks(absl::string_view payload, size_t max_bytes);

}  // namespace hb::env
