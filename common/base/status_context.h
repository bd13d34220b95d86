// Adding context to an error without losing what it carries.
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

}  // namespace hb
