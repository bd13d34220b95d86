#include "common/base/utf8.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace hb {
namespace {

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the valid sequence starting at text[i], or 0.
size_t SequenceLength(absl::string_view text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = at(0);
  if (lead < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) lo = 0xA0;  // no overlong forms
    if (lead == 0xED) hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) lo = 0x90;  // no overlong forms
    if (lead == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size() || at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (!IsContinuation(at(k))) return 0;
  }
  return n;
}

}  // namespace

std::optional<size_t> FirstInvalidUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceLength(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

absl::Status CheckUtf8(absl::string_view field, absl::string_view text) {
  const std::optional<size_t> bad = FirstInvalidUtf8(text);
  if (!bad.has_value()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("%s is not valid UTF-8: byte 0x%02X at offset %d; send the text UTF-8 "
                      "encoded",
                      std::string(field), static_cast<unsigned char>(text[*bad]), *bad));
}

}  // namespace hb
