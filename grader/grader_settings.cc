#include "grader/grader_settings.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hb {

absl::Status ValidateGraderSettings(const GraderSettings& settings) {
  if (settings.max_tokens <= 0) {
    return absl::InvalidArgumentError("--llm-max-tokens must be positive");
  }
  const std::string& effort = settings.reasoning_effort;
  if (!effort.empty() && effort != "low" && effort != "medium" && effort != "high") {
    return absl::InvalidArgumentError(
        absl::StrCat("--llm-reasoning-effort must be low, medium or high, got '", effort, "'"));
  }
  if (!effort.empty() && settings.api == GraderApi::kChatCompletions) {
    return absl::InvalidArgumentError(
        "--llm-reasoning-effort is sent only through the Responses API: drop --llm-api=chat "
        "(or the effort)");
  }
  return absl::OkStatus();
}

bool AbslParseFlag(absl::string_view text, GraderApiChoice* choice, std::string* error) {
  if (text == "auto") {
    *choice = GraderApiChoice::kAuto;
  } else if (text == "chat") {
    *choice = GraderApiChoice::kChat;
  } else if (text == "responses") {
    *choice = GraderApiChoice::kResponses;
  } else {
    *error = absl::StrCat("expected auto, chat or responses, got '", text, "'");
    return false;
  }
  return true;
}

std::string AbslUnparseFlag(GraderApiChoice choice) {
  switch (choice) {
    case GraderApiChoice::kChat:
      return "chat";
    case GraderApiChoice::kResponses:
      return "responses";
    default:
      return "auto";
  }
}

bool IsReasoningGraderModel(absl::string_view model) {
  for (absl::string_view prefix : {"gpt-5", "o1", "o3", "o4"}) {
    if (absl::StartsWith(model, prefix)) return true;
  }
  return false;
}

GraderApi ResolveGraderApi(GraderApiChoice choice, const GraderSettings& settings) {
  if (choice == GraderApiChoice::kChat) return GraderApi::kChatCompletions;
  if (choice == GraderApiChoice::kResponses) return GraderApi::kResponses;
  return IsReasoningGraderModel(settings.model) || !settings.reasoning_effort.empty()
             ? GraderApi::kResponses
             : GraderApi::kChatCompletions;
}

absl::Status ResolveGraderSettings(GraderApiChoice choice, bool temperature_given,
                                   bool max_tokens_given, GraderSettings& settings) {
  settings.api = ResolveGraderApi(choice, settings);
  if (settings.api != GraderApi::kResponses) return absl::OkStatus();
  for (const auto& [given, flag] : {std::pair{temperature_given, "--llm-temperature"},
                                    std::pair{max_tokens_given, "--llm-max-tokens"}}) {
    if (given) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " cannot be used with the grader ", settings.model,
          ": it is called through the Responses API as a reasoning model, and the reference's "
          "Responses grader (simple-evals PR #108) sends only the model, the prompt and the "
          "reasoning effort (reasoning models refuse a temperature). Drop ",
          flag, ", or pass --llm-api=chat for a chat-completions grader"));
    }
  }
  return absl::OkStatus();
}

}  // namespace hb
