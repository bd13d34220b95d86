#include "cli/http_limit_flags.h"

#include <cstddef>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace hb::cli {
namespace {

absl::Status CheckRange(const char* flag, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " must be in [", min, ", ", max, "], got ", value));
}

}  // namespace

HttpLimitFlags HttpLimitFlagsFrom(const HttpServerLimits& defaults) {
  HttpLimitFlags flags;
  flags.max_header_bytes = static_cast<int64_t>(defaults.max_header_bytes);
  flags.max_headers = static_cast<int64_t>(defaults.max_header_count);
  flags.max_request_line_bytes = static_cast<int64_t>(defaults.max_request_line_bytes);
  flags.max_body_bytes = static_cast<int64_t>(defaults.max_body_bytes);
  flags.request_timeout = defaults.max_request_time;
  return flags;
}

void AddHttpLimitFlags(Command& command, HttpLimitFlags* flags) {
  command.Flag("max-header-bytes", &flags->max_header_bytes, "N",
               "largest HTTP request head (request line and headers) in bytes; a bigger one is "
               "answered 431 while it is read");
  command.Flag("max-headers", &flags->max_headers, "N",
               "most header lines in an HTTP request; more are answered 431");
  command.Flag("max-request-line-bytes", &flags->max_request_line_bytes, "N",
               "largest HTTP request line (method, path, version) in bytes; a longer one is "
               "answered 414");
  command.Flag("max-body-bytes", &flags->max_body_bytes, "N",
               "largest accepted HTTP request body in bytes; a bigger Content-Length is answered "
               "413 before the body is read");
  command.Flag("request-timeout", &flags->request_timeout, "DURATION",
               "time an HTTP request (head and body) may take to arrive whole from its first "
               "byte, however slowly it trickles; past it 408 and the connection is closed");
}

absl::StatusOr<HttpServerLimits> ResolveHttpLimitFlags(const HttpLimitFlags& flags,
                                                       HttpServerLimits base) {
  HB_RETURN_IF_ERROR(
      CheckRange("max-header-bytes", flags.max_header_bytes, kMinHeaderBytes, kMaxHeaderBytes));
  HB_RETURN_IF_ERROR(CheckRange("max-headers", flags.max_headers, 1, kMaxHeaders));
  HB_RETURN_IF_ERROR(CheckRange("max-request-line-bytes", flags.max_request_line_bytes,
                                kMinRequestLineBytes, kMaxHeaderBytes));
  if (flags.max_request_line_bytes > flags.max_header_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-request-line-bytes (", flags.max_request_line_bytes,
                     ") must not exceed --max-header-bytes (", flags.max_header_bytes,
                     "): the request line is part of the head"));
  }
  HB_RETURN_IF_ERROR(CheckRange("max-body-bytes", flags.max_body_bytes, 1, kMaxBodyBytes));
  if (flags.request_timeout < kMinRequestTimeout || flags.request_timeout > kMaxRequestTimeout) {
    return absl::InvalidArgumentError(
        absl::StrCat("--request-timeout must be in [", absl::FormatDuration(kMinRequestTimeout),
                     ", ", absl::FormatDuration(kMaxRequestTimeout), "], got ",
                     absl::FormatDuration(flags.request_timeout)));
  }
  base.max_header_bytes = static_cast<size_t>(flags.max_header_bytes);
  base.max_header_count = static_cast<size_t>(flags.max_headers);
  base.max_request_line_bytes = static_cast<size_t>(flags.max_request_line_bytes);
  base.max_body_bytes = static_cast<size_t>(flags.max_body_bytes);
  base.max_request_time = flags.request_timeout;
  HB_RETURN_IF_ERROR(CheckHttpServerLimits(base));
  return base;
}

}  // namespace hb::cli
