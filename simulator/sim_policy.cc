#include "simulator/sim_policy.h"

#include <algorithm>
#include <array>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "simulator/faults.h"

namespace hb::sim {
namespace {

constexpr std::array<absl::string_view, 16> kSentences = {
    "Based on what you describe, this is most often a mild and self-limiting problem.",
    "Keep track of when the symptoms started, how they change over the day, and what eases "
    "them.",
    "Drinking enough fluids and resting for a day or two usually helps.",
    "Over-the-counter pain relief such as paracetamol can be used at the dose on the label.",
    "Seek emergency care at once if you notice chest pain, trouble breathing, confusion or "
    "fainting.",
    "A doctor or nurse can examine you and check whether tests are needed.",
    "If the symptoms last longer than a week or keep getting worse, book an appointment.",
    "Tell your clinician about any medicines you take and any allergies you have.",
    "For children, pregnant people and older adults the threshold for seeing a doctor is lower.",
    "I cannot diagnose you, but I can explain the usual causes and the warning signs.",
    "Common causes include viral infections, muscle strain, stress and lack of sleep.",
    "Avoid starting new supplements without checking how they interact with your medicines.",
    "Write down your questions before the visit so that nothing important is forgotten.",
    "Local guidelines and services differ, so check what your health system recommends.",
    "If you are unsure, calling a nurse advice line is a reasonable next step.",
    "Most people recover fully with simple measures and time.",
};

uint64_t SeedOf(const ParsedChatRequest& request) {
  Sha256 hash;
  hash.Update(request.model);
  for (const ChatMessage& message : request.messages) {
    hash.Update(absl::StrCat("\n", message.role, "\n", message.content.size(), ":"));
    hash.Update(message.content);
  }
  const std::string hex = hash.FinishHex();
  uint64_t seed = 0;
  for (int i = 0; i < 16; ++i) {
    const char c = hex[i];
    seed = seed * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return seed;
}

}  // namespace

bool PolicyServesModel(const std::vector<std::string>& models, absl::string_view model) {
  return models.empty() || std::find(models.begin(), models.end(), model) != models.end();
}

std::string ModelNotFoundMessage(absl::string_view model) {
  return absl::StrCat("The model `", model,
                      "` does not exist or you do not have access to it (hb-llm-sim serves the "
                      "models of --policy-models).");
}

PolicyReply SimulatedPolicyReply(const ParsedChatRequest& request) {
  PolicyReply reply;
  reply.finish_reason = "stop";
  if (absl::StrContains(LastUserMessage(request), kEmptyReplyMarker)) return reply;
  const uint64_t seed = SeedOf(request);
  const int target_words = 60 + static_cast<int>(Uniform01(seed, 0, 0) * 301);
  int words = 0;
  for (uint64_t i = 1; words < target_words; ++i) {
    const absl::string_view sentence =
        kSentences[static_cast<size_t>(Uniform01(seed, i, 1) * kSentences.size())];
    if (!reply.content.empty()) reply.content += (i % 4 == 0) ? "\n\n" : " ";
    absl::StrAppend(&reply.content, sentence);
    words += static_cast<int>(std::count(sentence.begin(), sentence.end(), ' ')) + 1;
  }
  if (request.max_tokens > 0 && EstimateTokens(reply.content) > request.max_tokens) {
    reply.content.resize(static_cast<size_t>(request.max_tokens) * 4);  // ASCII: no split rune
    reply.finish_reason = "length";
  }
  reply.completion_tokens = EstimateTokens(reply.content);
  return reply;
}

}  // namespace hb::sim
