// The limits of an HTTP listener (http/bounded_evhttp.h HttpServerLimits) as flags, the one
// place every binary that serves HTTP (hb-env's ORS API, hb-llm-sim) takes them from:
//   --max-header-bytes --max-headers --max-request-line-bytes --max-body-bytes
//   --request-timeout
// Apart from cli/server_flags.h, whose gRPC, TLS and metrics flags hb-llm-sim does not have
// (nor link).
//
//   HttpLimitFlags http = HttpLimitFlagsFrom(binary_defaults);
//   AddHttpLimitFlags(command, &http);
//   ... parse ...
//   HB_ASSIGN_OR_RETURN(HttpServerLimits limits, ResolveHttpLimitFlags(http, binary_defaults));
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/command_line.h"
#include "http/bounded_evhttp.h"

namespace hb::cli {

// Signed, so that a negative value is refused instead of read as a huge size.
struct HttpLimitFlags {
  int64_t max_header_bytes = 0;
  int64_t max_headers = 0;
  int64_t max_request_line_bytes = 0;
  int64_t max_body_bytes = 0;
  absl::Duration request_timeout;
};

// The bounds a value must be within, inclusive (besides --max-request-line-bytes <=
// --max-header-bytes): below them a legitimate client is refused, above them one client can
// make the server hold too much or hold a connection too long.
inline constexpr int64_t kMinHeaderBytes = 1 << 10;
inline constexpr int64_t kMaxHeaderBytes = 16 << 20;
inline constexpr int64_t kMaxHeaders = 10000;
inline constexpr int64_t kMinRequestLineBytes = 256;
inline constexpr int64_t kMaxBodyBytes = int64_t{1} << 30;
inline constexpr absl::Duration kMinRequestTimeout = absl::Seconds(1);
inline constexpr absl::Duration kMaxRequestTimeout = absl::Hours(1);

// The flags holding `defaults` (the binary's), which --help shows.
HttpLimitFlags HttpLimitFlagsFrom(const HttpServerLimits& defaults);

// Registers the five flags in the command's current group.
void AddHttpLimitFlags(Command& command, HttpLimitFlags* flags);

// `base` with the flags' values. kInvalidArgument naming the flag, its bounds and the value
// given ("--max-headers must be in [1, 10000], got 0") when one is out of its bounds, or
// --max-request-line-bytes exceeds --max-header-bytes.
absl::StatusOr<HttpServerLimits> ResolveHttpLimitFlags(const HttpLimitFlags& flags,
                                                       HttpServerLimits base);

}  // namespace hb::cli
