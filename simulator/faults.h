// Fault injection of hb-llm-sim: which fault request `seq` gets (a pure function of the seed and
// the sequence number) and the reply content of content faults.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace hb::sim {

enum class FaultKind {
  kNone,
  kReset,      // close the connection (TCP RST) without a response
  kHang,       // never answer; hold the connection until the client gives up
  k429,        // 429 + Retry-After / retry-after-ms
  k500,        // 500 server_error
  k503,        // 503 service unavailable
  kMalformed,  // 200, content is not valid JSON
  kNonObject,  // 200, content is a JSON value that is not an object
  kFenced,     // 200, the correct reply wrapped in "```json\n...\n```"
};
inline constexpr int kNumFaultKinds = 9;

// "none", "reset", "hang", "429", "500", "503", "malformed", "nonobject", "fenced".
absl::string_view FaultKindName(FaultKind kind);

// Per-kind probability in [0, 1].
struct FaultRates {
  double reset = 0, hang = 0, status_429 = 0, status_500 = 0, status_503 = 0, malformed = 0,
         nonobject = 0, fenced = 0;
};

// A uniform double in [0, 1) that depends only on (seed, seq, stream) (SplitMix64 mixing).
double Uniform01(uint64_t seed, uint64_t seq, uint64_t stream);

// Chooses the fault for request `seq`: one independent draw per kind, in the fixed order
// reset, hang, 429, 500, 503, malformed, nonobject, fenced; the first kind whose draw is below
// its rate wins. So a rate of 1 always fires unless an earlier kind fired, a rate of 0 never
// fires, and kind k fires with probability rate_k * prod_{j before k} (1 - rate_j).
FaultKind ChooseFault(const FaultRates& rates, uint64_t seed, uint64_t seq);

// The 200 reply content for a content fault, given the true verdict `met`:
// * kMalformed: one of three invalid-JSON texts (variant = seq % 3): the correct reply with its
//   closing brace cut off; the correct reply followed by " (simulated trailing text)"; a Python
//   dict literal {'explanation': ..., 'criteria_met': True}. A strict parser rejects all three.
// * kNonObject: one of `42`, `"criteria_met"`, `[true]` (variant = seq % 3).
// * kFenced: "```json\n" + SimulatedReplyContent(met) + "\n```"; the reference parser accepts it
//   with criteria_met == met.
// Anything else: SimulatedReplyContent(met).
// No variant ever carries a verdict other than `met`.
std::string FaultReplyContent(FaultKind kind, bool met, uint64_t seq);

}  // namespace hb::sim
