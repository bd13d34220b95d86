#include "simulator/sim_request.h"

#include <initializer_list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "rapidjson/document.h"

namespace hb::sim {

namespace {

absl::StatusOr<rapidjson::Document> ParseObject(absl::string_view body) {
  rapidjson::Document doc;
  if (absl::Status parsed = ParseJson(body, doc); !parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("request body is not valid JSON: ", parsed.message()));
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError("request body must be a JSON object");
  }
  return doc;
}

// One message `m` of the list `list` ("messages", "input") at `index`.
absl::StatusOr<ChatMessage> ParseMessage(const rapidjson::Value& m, absl::string_view list,
                                         int index) {
  if (!m.IsObject()) {
    return absl::InvalidArgumentError(absl::StrCat(list, "[", index, "] must be an object"));
  }
  auto role = m.FindMember("role");
  if (role == m.MemberEnd() || !role->value.IsString()) {
    return absl::InvalidArgumentError(absl::StrCat(list, "[", index, "].role must be a string"));
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
          absl::StrCat(list, "[", index, "].content must be a string, an array or null"));
    }
  }
  return message;
}

absl::Status ParseMessageList(const rapidjson::Value& list, absl::string_view name,
                              ParsedChatRequest& request) {
  if (!list.IsArray() || list.Empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' must be a non-empty array"));
  }
  int index = 0;
  for (const auto& m : list.GetArray()) {
    absl::StatusOr<ChatMessage> message = ParseMessage(m, name, index++);
    if (!message.ok()) return message.status();
    request.messages.push_back(*std::move(message));
  }
  return absl::OkStatus();
}

absl::Status ParseOptionalString(const rapidjson::Value& doc, const char* key, std::string& out) {
  auto it = doc.FindMember(key);
  if (it == doc.MemberEnd() || it->value.IsNull()) return absl::OkStatus();
  if (!it->value.IsString()) {
    return absl::InvalidArgumentError(absl::StrCat("'", key, "' must be a string"));
  }
  out.assign(it->value.GetString(), it->value.GetStringLength());
  return absl::OkStatus();
}

absl::Status ParseModel(const rapidjson::Value& doc, ParsedChatRequest& request) {
  if (auto it = doc.FindMember("model"); it != doc.MemberEnd()) {
    if (!it->value.IsString()) return absl::InvalidArgumentError("'model' must be a string");
    request.model.assign(it->value.GetString(), it->value.GetStringLength());
  }
  if (request.model.empty()) request.model = "hb-llm-sim";
  return absl::OkStatus();
}

absl::Status ParseTemperature(const rapidjson::Value& doc, ParsedChatRequest& request) {
  if (auto it = doc.FindMember("temperature"); it != doc.MemberEnd() && !it->value.IsNull()) {
    if (!it->value.IsNumber() || it->value.GetDouble() < 0 || it->value.GetDouble() > 2) {
      return absl::InvalidArgumentError("'temperature' must be a number between 0 and 2");
    }
    request.temperature = it->value.GetDouble();
  }
  return absl::OkStatus();
}

// The first of `keys` present, as a positive integer, into request.max_tokens.
absl::Status ParseMaxTokens(const rapidjson::Value& doc, std::initializer_list<const char*> keys,
                            ParsedChatRequest& request) {
  for (const char* key : keys) {
    auto it = doc.FindMember(key);
    if (it == doc.MemberEnd() || it->value.IsNull()) continue;
    if (!it->value.IsInt64() || it->value.GetInt64() < 1) {
      return absl::InvalidArgumentError(absl::StrCat("'", key, "' must be a positive integer"));
    }
    if (request.max_tokens == 0) request.max_tokens = it->value.GetInt64();
  }
  return absl::OkStatus();
}

absl::Status ParseReasoning(const rapidjson::Value& doc, ParsedChatRequest& request) {
  auto it = doc.FindMember("reasoning");
  if (it == doc.MemberEnd() || it->value.IsNull()) return absl::OkStatus();
  if (!it->value.IsObject()) return absl::InvalidArgumentError("'reasoning' must be an object");
  HB_RETURN_IF_ERROR(ParseOptionalString(it->value, "effort", request.reasoning_effort));
  for (absl::string_view known : {"", "none", "minimal", "low", "medium", "high", "xhigh"}) {
    if (request.reasoning_effort == known) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("Invalid value: '", request.reasoning_effort,
                                                 "'. Supported values are: 'none', 'minimal', "
                                                 "'low', 'medium', 'high' and 'xhigh'."));
}

}  // namespace

absl::StatusOr<ParsedChatRequest> ParseChatRequest(absl::string_view body) {
  HB_ASSIGN_OR_RETURN(const rapidjson::Document doc, ParseObject(body));
  ParsedChatRequest request;
  HB_RETURN_IF_ERROR(ParseModel(doc, request));
  auto messages = doc.FindMember("messages");
  if (messages == doc.MemberEnd()) {
    return absl::InvalidArgumentError("'messages' is a required property");
  }
  HB_RETURN_IF_ERROR(ParseMessageList(messages->value, "messages", request));
  HB_RETURN_IF_ERROR(ParseTemperature(doc, request));
  HB_RETURN_IF_ERROR(ParseMaxTokens(doc, {"max_tokens", "max_completion_tokens"}, request));
  HB_RETURN_IF_ERROR(ParseOptionalString(doc, "prompt_cache_key", request.prompt_cache_key));
  return request;
}

absl::StatusOr<ParsedChatRequest> ParseResponsesRequest(absl::string_view body) {
  HB_ASSIGN_OR_RETURN(const rapidjson::Document doc, ParseObject(body));
  ParsedChatRequest request;
  request.api = GraderApi::kResponses;
  HB_RETURN_IF_ERROR(ParseModel(doc, request));
  if (doc.HasMember("messages")) {
    return absl::InvalidArgumentError("Unknown parameter: 'messages'.");
  }
  auto input = doc.FindMember("input");
  if (input == doc.MemberEnd()) return absl::InvalidArgumentError("'input' is a required property");
  if (input->value.IsString()) {
    request.messages.push_back(
        {"user", std::string(input->value.GetString(), input->value.GetStringLength())});
  } else {
    HB_RETURN_IF_ERROR(ParseMessageList(input->value, "input", request));
  }
  HB_RETURN_IF_ERROR(ParseReasoning(doc, request));
  HB_RETURN_IF_ERROR(ParseTemperature(doc, request));
  if (request.temperature.has_value() && !request.reasoning_effort.empty() &&
      request.reasoning_effort != "none") {
    return absl::InvalidArgumentError(
        "Unsupported parameter: 'temperature' is not supported with this model.");
  }
  HB_RETURN_IF_ERROR(ParseMaxTokens(doc, {"max_output_tokens"}, request));
  HB_RETURN_IF_ERROR(ParseOptionalString(doc, "prompt_cache_key", request.prompt_cache_key));
  return request;
}

int64_t SimulatedReasoningTokens(absl::string_view effort) {
  if (effort == "minimal") return 32;
  if (effort == "low") return 192;
  if (effort == "medium") return 768;
  if (effort == "high") return 3072;
  if (effort == "xhigh") return 6144;
  return 0;
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
