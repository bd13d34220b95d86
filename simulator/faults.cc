#include "simulator/faults.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "simulator/sim_verdict.h"

namespace hb::sim {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

absl::string_view FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kNone:
      return "none";
    case FaultKind::kReset:
      return "reset";
    case FaultKind::kHang:
      return "hang";
    case FaultKind::k429:
      return "429";
    case FaultKind::k500:
      return "500";
    case FaultKind::k503:
      return "503";
    case FaultKind::kMalformed:
      return "malformed";
    case FaultKind::kNonObject:
      return "nonobject";
    case FaultKind::kFenced:
      return "fenced";
  }
  return "unknown";
}

double Uniform01(uint64_t seed, uint64_t seq, uint64_t stream) {
  const uint64_t x = SplitMix64(SplitMix64(SplitMix64(seed) ^ seq) ^ stream);
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

FaultKind ChooseFault(const FaultRates& rates, uint64_t seed, uint64_t seq) {
  const std::pair<FaultKind, double> order[] = {
      {FaultKind::kReset, rates.reset},         {FaultKind::kHang, rates.hang},
      {FaultKind::k429, rates.status_429},      {FaultKind::k500, rates.status_500},
      {FaultKind::k503, rates.status_503},      {FaultKind::kMalformed, rates.malformed},
      {FaultKind::kNonObject, rates.nonobject}, {FaultKind::kFenced, rates.fenced},
  };
  uint64_t stream = 0;
  for (const auto& [kind, rate] : order) {
    if (Uniform01(seed, seq, stream++) < rate) return kind;
  }
  return FaultKind::kNone;
}

std::string FaultReplyContent(FaultKind kind, bool met, uint64_t seq) {
  const std::string correct = SimulatedReplyContent(met);
  switch (kind) {
    case FaultKind::kMalformed:
      switch (seq % 3) {
        case 0:
          return correct.substr(0, correct.size() - 1);
        case 1:
          return correct + " (simulated trailing text)";
        default:
          return absl::StrCat("{'explanation': 'simulated malformed reply', 'criteria_met': ",
                              met ? "True" : "False", "}");
      }
    case FaultKind::kNonObject:
      switch (seq % 3) {
        case 0:
          return "42";
        case 1:
          return "\"criteria_met\"";
        default:
          return "[true]";
      }
    case FaultKind::kFenced:
      return absl::StrCat("```json\n", correct, "\n```");
    default:
      return correct;
  }
}

}  // namespace hb::sim
