// Parsing the grader model's reply exactly as the reference does (SPEC §5.1): strip, remove one
// leading "```json" fence and one trailing "```" fence, strict JSON, `criteria_met` must be a
// JSON boolean, `explanation` defaults to "No explanation provided".
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"

namespace hb {

// The text the reference uses when the reply has no `explanation`.
inline constexpr char kNoExplanation[] = "No explanation provided";

// Parses a grader reply. On success the verdict's `criteria_met` is the JSON boolean and its
// `explanation` the JSON string (a non-string explanation is kept as its compact JSON text).
//
// Every failure is kDataLoss: a malformed reply the caller should retry (the reference retries
// forever; we retry within a budget). Messages: "grader reply is not valid JSON: <why> at
// offset N", "grader reply is not a JSON object", "grader reply has no 'criteria_met'",
// "'criteria_met' is not a JSON boolean". A non-object JSON value (number, string, array) is a
// failure to retry, never a crash.
absl::StatusOr<Verdict> ParseGraderReply(absl::string_view reply);

// The text left after step 1-3 of SPEC §5.1 (Unicode strip as Python's str.strip(), then the
// fence removal of `re.sub(r"^```json\s*|\s*```$", "", s)`). Exposed for tests.
std::string StripGraderReplyFences(absl::string_view reply);

}  // namespace hb
