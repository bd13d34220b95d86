// Strict UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF):
// what every text a client sends must be before it reaches a judge's JSON request.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hb {

// The byte offset of the first byte that does not start or continue a valid UTF-8 sequence
// (for a truncated sequence, the offset of its first byte); nullopt when `text` is valid.
std::optional<size_t> FirstInvalidUtf8(absl::string_view text);

// OK for valid UTF-8; otherwise kInvalidArgument "<field> is not valid UTF-8: byte 0xNN at
// offset N; send the text UTF-8 encoded".
absl::Status CheckUtf8(absl::string_view field, absl::string_view text);

}  // namespace hb
