// Adding context to an error without losing what it carries, and the size-limit error every
// request boundary reports.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace hb {

// `status` with `prefix` put before its message ("rubric item 2: " + message); the code and
// every payload (e.g. the retry delay of common/retry/retry_status.h) are kept. OK stays OK.
inline absl::Status WithMessagePrefix(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  absl::Status out(status.code(), absl::StrCat(prefix, status.message()));
  status.ForEachPayload([&out](absl::string_view type_url, const absl::Cord& value) {
    out.SetPayload(type_url, value);
  });
  return out;
}

// kInvalidArgument "<field> is N bytes; the limit is M (<limit_name>)" when `size` > `limit`,
// else OK. Never quotes the value: an oversize field is not echoed back to its sender.
inline absl::Status CheckFieldSize(absl::string_view field, size_t size, size_t limit,
                                   absl::string_view limit_name) {
  if (size <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is ", size, " bytes; the limit is ", limit, " (", limit_name, ")"));
}

}  // namespace hb
