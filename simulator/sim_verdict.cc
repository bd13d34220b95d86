#include "simulator/sim_verdict.h"

#include "common/base/json.h"
#include "common/base/sha256.h"

namespace hb {

bool SimulatedVerdict(absl::string_view last_user_message_content) {
  const size_t true_pos = last_user_message_content.rfind(kSimMetTrueMarker);
  const size_t false_pos = last_user_message_content.rfind(kSimMetFalseMarker);
  if (true_pos != absl::string_view::npos || false_pos != absl::string_view::npos) {
    if (true_pos == absl::string_view::npos) return false;
    if (false_pos == absl::string_view::npos) return true;
    return true_pos > false_pos;
  }
  // The hex digest's second character is the low nibble of the first byte.
  const std::string hex = Sha256Hex(last_user_message_content);
  const char c = hex[1];
  const int nibble = (c >= '0' && c <= '9') ? c - '0' : c - 'a' + 10;
  return (nibble & 1) == 1;
}

std::string SimulatedReplyContent(bool met, absl::string_view explanation) {
  std::string out = "{\"explanation\": ";
  out += JsonQuote(explanation.empty() ? absl::string_view(kSimDefaultExplanation) : explanation);
  out += ", \"criteria_met\": ";
  out += met ? "true" : "false";
  out += "}";
  return out;
}

}  // namespace hb
