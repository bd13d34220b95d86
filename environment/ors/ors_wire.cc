#include "environment/ors/ors_wire.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/json.h"
#include "common/retry/retry_status.h"

namespace hb::env {

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kCancelled:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::string ErrorBody(absl::string_view message) {
  return absl::StrCat("{\"detail\":", JsonQuote(message), "}");
}

std::string RetryAfterSeconds(const absl::Status& status) {
  const std::optional<absl::Duration> delay = RetryDelay(status);
  if (!delay.has_value()) return "1";
  return absl::StrCat(
      std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(*delay, absl::Seconds(1)))));
}

std::string SseEvent(absl::string_view name, absl::string_view data) {
  std::string out = absl::StrCat("event: ", name, "\r\n");
  for (absl::string_view line : absl::StrSplit(data, '\n')) {
    absl::StrAppend(&out, "data: ", absl::StripSuffix(line, "\r"), "\r\n");
  }
  out += "\r\n";
  return out;
}

std::string SsePing() { return ": ping\r\n\r\n"; }

namespace {

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// The largest cut <= `limit` (and > `start`) that keeps UTF-8 sequences whole and does not
// start the next piece with a blank; falls back to `limit` when no such cut exists.
size_t CutPoint(absl::string_view payload, size_t start, size_t limit) {
  for (size_t cut = limit; cut > start; --cut) {
    if (!IsContinuationByte(payload[cut]) && !IsBlank(payload[cut])) return cut;
  }
  return limit;
}

}  // namespace

std::vector<absl::string_view> SseChunks(absl::string_view payload, size_t max_bytes) {
  std::vector<absl::string_view> pieces;
  size_t start = 0;
  while (payload.size() - start > max_bytes) {
    const size_t cut = CutPoint(payload, start, start + max_bytes);
    pieces.push_back(payload.substr(start, cut - start));
    start = cut;
  }
  pieces.push_back(payload.substr(start));
  return pieces;
}

}  // namespace hb::env
