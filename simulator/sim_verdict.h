// The simulated grader's verdict: a documented, deterministic function of the grader request,
// so tests anywhere in the project can predict what `hb-llm-sim` answers.
//
// Rule (in this order):
//   1. If the content contains the literal marker "[[sim:met=true]]" or "[[sim:met=false]]",
//      the marker decides. When both occur, the one that starts LAST in the content wins.
//   2. Otherwise the verdict is the lowest bit of the first byte of SHA-256(content):
//      criteria_met = (sha256(content)[0] & 1) == 1.
// `content` is the content of the LAST message whose role is "user" in the request (for a
// HealthBench grader request that is the filled grader template); the empty string when the
// request has no user message.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace hb {

// The override markers (see the file comment).
inline constexpr char kSimMetTrueMarker[] = "[[sim:met=true]]";
inline constexpr char kSimMetFalseMarker[] = "[[sim:met=false]]";

// The explanation SimulatedReplyContent uses when none is given.
inline constexpr char kSimDefaultExplanation[] =
    "Simulated verdict from hb-llm-sim (deterministic function of the last user message).";

// The verdict for a request whose last user message has `last_user_message_content`.
// Pure and thread-safe.
bool SimulatedVerdict(absl::string_view last_user_message_content);

// The grader reply text the simulator returns as choices[0].message.content:
// {"explanation": <explanation JSON string>, "criteria_met": true|false}
// with exactly that key order and spacing (the shape GPT-4.1 answers in). An empty
// `explanation` means kSimDefaultExplanation. The result is always valid JSON that the
// reference parser (SPEC §5.1) accepts with criteria_met == `met`.
std::string SimulatedReplyContent(bool met, absl::string_view explanation = "");

}  // namespace hb
