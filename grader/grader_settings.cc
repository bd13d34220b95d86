#include "grader/grader_settings.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/json_io.h"
#include "common/base/sha256.h"

namespace hb {
namespace {

constexpr char kExtraBodyExample[] = R"({"response_format":{"type":"json_object"}})";

}  // namespace

absl::Status ValidateGraderSettings(const GraderSettings& settings) {
  if (settings.max_tokens <= 0) {
    return absl::InvalidArgumentError("--llm-max-tokens must be positive");
  }
  if (settings.max_tokens > kMaxGraderMaxTokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--llm-max-tokens must be at most ", kMaxGraderMaxTokens, ", got ", settings.max_tokens,
        ": the upstream would refuse every request (the reference's grader uses 2048)"));
  }
  if (!(settings.temperature >= 0 && settings.temperature <= 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--llm-temperature must be in [0, 2] (the range OpenAI-compatible APIs "
        "accept), got ",
        settings.temperature,
        ": the upstream would refuse every request (the reference's grader uses 0.5)"));
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
  if (settings.extra_body.empty()) return absl::OkStatus();
  rapidjson::Document extra;
  if (absl::Status parsed =
          ParseJsonObjectFlag("--llm-extra-body", settings.extra_body, kExtraBodyExample, extra);
      !parsed.ok()) {
    return parsed;
  }
  absl::flat_hash_set<absl::string_view> keys;
  for (const auto& member : extra.GetObject()) {
    const absl::string_view key(member.name.GetString(), member.name.GetStringLength());
    if (std::string why = ExtraBodyKeyRefusal(settings, key); !why.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--llm-extra-body sets '", key, "': ", why, "; remove it"));
    }
    if (!keys.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--llm-extra-body sets '", key, "' twice; give each key once"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CanonicalExtraBody(absl::string_view text) {
  if (text.empty()) return std::string();
  rapidjson::Document extra;
  if (absl::Status parsed = ParseJsonObjectFlag("--llm-extra-body", text, kExtraBodyExample, extra);
      !parsed.ok()) {
    return parsed;
  }
  return WriteJson([&](JsonWriter& writer) { extra.Accept(writer); });
}

std::string ExtraBodyKeyRefusal(const GraderSettings& settings, absl::string_view key) {
  if (key == "model") return "the grader model is --llm-model";
  if (key == "messages" || key == "input") {
    return "the grader prompt is the reference's (the template with the conversation and the "
           "rubric item), never replaced";
  }
  if (key == "stream") return "the grader reads one JSON reply, not a stream of events";
  if (key == "prompt_cache_key") return "it is set per task by --prompt-cache-key";
  if (settings.api == GraderApi::kChatCompletions) {
    if (key == "temperature") return "the body already has it: use --llm-temperature";
    if (key == "max_tokens") return "the body already has it: use --llm-max-tokens";
  } else if (key == "reasoning" && !settings.reasoning_effort.empty()) {
    return "the body already has it: use --llm-reasoning-effort";
  }
  return "";
}

namespace {

bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::StrContains("!#$%&'*+-.^_`|~", c);
}

}  // namespace

absl::StatusOr<GraderHeader> ParseGraderHeader(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        "--llm-header expects NAME=VALUE (e.g. --llm-header=api-key=KEY), got no '='");
  }
  GraderHeader header;
  header.name = std::string(text.substr(0, eq));
  header.value = std::string(text.substr(eq + 1));
  if (header.name.empty() || !std::all_of(header.name.begin(), header.name.end(), IsTokenChar)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--llm-header name '", absl::CEscape(header.name),
                     "' is not an HTTP header name: use letters, digits and !#$%&'*+-.^_`|~ only"));
  }
  const std::string lower = absl::AsciiStrToLower(header.name);
  if (lower == "authorization") {
    return absl::InvalidArgumentError(
        "--llm-header Authorization is set by the client from the API key: give the key with "
        "--llm-api-key-file (or $OPENAI_API_KEY) instead");
  }
  for (const char* managed :
       {"host", "content-type", "content-length", "transfer-encoding", "connection"}) {
    if (lower == managed) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--llm-header ", header.name, " is set by the HTTP client for every request; remove it"));
    }
  }
  if (header.value.find_first_of(std::string("\r\n\0", 3)) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--llm-header ", header.name,
        ": the value contains a CR, LF or NUL byte, which would end the header early; remove it"));
  }
  header.value_sha256 = Sha256Hex(header.value);
  return header;
}

absl::StatusOr<std::vector<GraderHeader>> ParseGraderHeaders(
    const std::vector<std::string>& texts) {
  std::vector<GraderHeader> headers;
  absl::flat_hash_set<std::string> names;
  for (const std::string& text : texts) {
    absl::StatusOr<GraderHeader> header = ParseGraderHeader(text);
    if (!header.ok()) return header.status();
    if (!names.insert(absl::AsciiStrToLower(header->name)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--llm-header ", header->name, " is given twice; give each header once"));
    }
    headers.push_back(*std::move(header));
  }
  return headers;
}

std::string HeadersIdentity(const std::vector<GraderHeader>& headers) {
  std::vector<std::string> parts;
  parts.reserve(headers.size());
  for (const GraderHeader& header : headers) {
    parts.push_back(absl::StrCat(absl::AsciiStrToLower(header.name), ":", header.value_sha256));
  }
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, ",");
}

std::vector<std::pair<std::string, std::string>> WireHeaders(
    const std::vector<GraderHeader>& headers) {
  std::vector<std::pair<std::string, std::string>> wire;
  wire.reserve(headers.size());
  for (const GraderHeader& header : headers) wire.emplace_back(header.name, header.value);
  return wire;
}

std::string RedactedHeaders(const std::vector<GraderHeader>& headers) {
  return absl::StrJoin(headers, ", ", [](std::string* out, const GraderHeader& header) {
    absl::StrAppend(out, header.name, ": [redacted]");
  });
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
