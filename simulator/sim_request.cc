#include "simulator/sim_request.h"

#include "absl/strings/str_cat.h"
#include "common/base/json_io.h"
#include "rapidjson/document.h"

namespace hb::sim {

absl::StatusOr<ParsedChatRequest> ParseChatRequest(absl::string_view body) {
  rapidjson::Document doc;
  if (absl::Status parsed = ParseJson(body, doc); !parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("request body is not valid JSON: ", parsed.message()));
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError("request body must be a JSON object");
  }
  ParsedChatRequest request;
  if (auto it = doc.FindMember("model"); it != doc.MemberEnd()) {
    if (!it->value.IsString()) return absl::InvalidArgumentError("'model' must be a string");
    request.model.assign(it->value.GetString(), it->value.GetStringLength());
  }
  if (request.model.empty()) request.model = "hb-llm-sim";
  auto messages = doc.FindMember("messages");
  if (messages == doc.MemberEnd()) {
    return absl::InvalidArgumentError("'messages' is a required property");
  }
  if (!messages->value.IsArray() || messages->value.Empty()) {
    return absl::InvalidArgumentError("'messages' must be a non-empty array");
  }
  int index = 0;
  for (const auto& m : messages->value.GetArray()) {
    if (!m.IsObject()) {
      return absl::InvalidArgumentError(absl::StrCat("messages[", index, "] must be an object"));
    }
    auto role = m.FindMember("role");
    if (role == m.MemberEnd() || !role->value.IsString()) {
      return absl::InvalidArgumentError(
          absl::StrCat("messages[", index, "].role must be a string"));
    }
    ChatMessage message;
    message.role.assign(role->value.GetString(), role->value.GetStringLength());
    if (auto content = m.FindMember("content"); content != m.MemberEnd()) {
      const auto& c = content->value;
      if (c.IsString()) {
        message.content.assign(c.GetString(), c.GetStringLength());
      } else if (c.IsArray()) {
        for (const auto& part : c.GetArray()) {
          if (!part.IsObject()) continue;
          auto text = part.FindMember("text");
          if (text != part.MemberEnd() && text->value.IsString()) {
            message.content.append(text->value.GetString(), text->value.GetStringLength());
          }
        }
      } else if (!c.IsNull()) {
        return absl::InvalidArgumentError(
            absl::StrCat("messages[", index, "].content must be a string, an array or null"));
      }
    }
    request.messages.push_back(std::move(message));
    ++index;
  }
  if (auto it = doc.FindMember("temperature"); it != doc.MemberEnd() && !it->value.IsNull()) {
    if (!it->value.IsNumber() || it->value.GetDouble() < 0 || it->value.GetDouble() > 2) {
      return absl::InvalidArgumentError("'temperature' must be a number between 0 and 2");
    }
    request.temperature = it->value.GetDouble();
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = doc.FindMember(key);
    if (it == doc.MemberEnd() || it->value.IsNull()) continue;
    if (!it->value.IsInt64() || it->value.GetInt64() < 1) {
      return absl::InvalidArgumentError(absl::StrCat("'", key, "' must be a positive integer"));
    }
    if (request.max_tokens == 0) request.max_tokens = it->value.GetInt64();
  }
  if (auto it = doc.FindMember("prompt_cache_key"); it != doc.MemberEnd() && !it->value.IsNull()) {
    if (!it->value.IsString()) {
      return absl::InvalidArgumentError("'prompt_cache_key' must be a string");
    }
    request.prompt_cache_key.assign(it->value.GetString(), it->value.GetStringLength());
  }
  return request;
}

int64_t EstimateTokens(absl::string_view text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

std::string PromptText(const ParsedChatRequest& request) {
  size_t size = 0;
  for (const auto& m : request.messages) size += m.content.size();
  std::string text;
  text.reserve(size);
  for (const auto& m : request.messages) text += m.content;
  return text;
}

absl::string_view LastUserMessage(const ParsedChatRequest& request) {
  for (auto it = request.messages.rbegin(); it != request.messages.rend(); ++it) {
    if (it->role == "user") return it->content;
  }
  return {};
}

}  // namespace hb::sim
