#include "common/healthbench/grader_request_body.h"

#include <cmath>
#include <string>
#include <utility>

#include "common/base/json_io.h"

namespace hb {
namespace {

// The members of settings.extra_body, the optional "prompt_cache_key" (an OpenAI extension;
// last), the closing brace, the bytes.
std::string FinishBody(JsonWriter& writer, const rapidjson::StringBuffer& buffer,
                       const GraderSettings& settings, absl::string_view prompt_cache_key) {
  if (!settings.extra_body.empty()) {
    rapidjson::Document extra;
    if (ParseJson(settings.extra_body, extra).ok()) WriteJsonMembers(writer, extra);
  }
  if (!prompt_cache_key.empty()) {
    writer.Key("prompt_cache_key");
    WriteJsonString(writer, prompt_cache_key);
  }
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

std::string BuildChatCompletionBody(const GraderSettings& settings, absl::string_view grader_prompt,
                                    absl::string_view prompt_cache_key) {
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  writer.StartObject();
  writer.Key("model");
  WriteJsonString(writer, settings.model);
  writer.Key("messages");
  writer.StartArray();
  if (!settings.system_message.empty()) {
    writer.StartObject();
    writer.Key("role");
    writer.String("system");
    writer.Key("content");
    WriteJsonString(writer, settings.system_message);
    writer.EndObject();
  }
  writer.StartObject();
  writer.Key("role");
  writer.String("user");
  writer.Key("content");
  WriteJsonString(writer, grader_prompt);
  writer.EndObject();
  writer.EndArray();
  writer.Key("temperature");
  if (std::isfinite(settings.temperature)) {
    writer.Double(settings.temperature);
  } else {
    writer.Null();  // RapidJSON refuses NaN/inf; null keeps the body valid JSON.
  }
  writer.Key("max_tokens");
  writer.Int(settings.max_tokens);
  return FinishBody(writer, buffer, settings, prompt_cache_key);
}

std::string BuildResponsesBody(const GraderSettings& settings, absl::string_view grader_prompt,
                               absl::string_view prompt_cache_key) {
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  writer.StartObject();
  writer.Key("model");
  WriteJsonString(writer, settings.model);
  writer.Key("input");
  writer.StartArray();
  writer.StartObject();
  writer.Key("role");
  writer.String("user");
  writer.Key("content");
  WriteJsonString(writer, grader_prompt);
  writer.EndObject();
  writer.EndArray();
  if (!settings.reasoning_effort.empty()) {
    writer.Key("reasoning");
    writer.StartObject();
    writer.Key("effort");
    WriteJsonString(writer, settings.reasoning_effort);
    writer.EndObject();
  }
  return FinishBody(writer, buffer, settings, prompt_cache_key);
}

std::string BuildGraderRequestBody(const GraderSettings& settings, absl::string_view grader_prompt,
                                   absl::string_view prompt_cache_key) {
  return settings.api == GraderApi::kResponses
             ? BuildResponsesBody(settings, grader_prompt, prompt_cache_key)
             : BuildChatCompletionBody(settings, grader_prompt, prompt_cache_key);
}

namespace {

// A RapidJSON output stream appending to a std::string (no intermediate buffer to copy from).
struct StringOutput {
  using Ch = char;
  std::string* out;
  void Put(char c) { out->push_back(c); }
  void Flush() {}
};

// `text` as the inside of a JSON string, escaped exactly as BuildChatCompletionBody does (the
// same RapidJSON writer over another output stream).
std::string EscapedJsonContent(absl::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  StringOutput stream{&out};
  rapidjson::Writer<StringOutput> writer(stream);
  WriteJsonString(writer, text);
  out.pop_back();   // the closing quote
  out.erase(0, 1);  // the opening quote
  return out;
}

}  // namespace

SharedChatCompletionBody::SharedChatCompletionBody(const GraderSettings& settings,
                                                   const std::vector<absl::string_view>& segments,
                                                   absl::string_view prompt_cache_key) {
  // The JSON around the prompt: the body for an empty prompt ends the prompt's string right
  // where the body for "x" has its 'x'.
  const std::string empty = BuildGraderRequestBody(settings, "", prompt_cache_key);
  const std::string one = BuildGraderRequestBody(settings, "x", prompt_cache_key);
  size_t at = 0;
  while (empty[at] == one[at]) ++at;
  pieces_.reserve(segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    std::string piece = i == 0 ? empty.substr(0, at) : std::string();
    piece += EscapedJsonContent(segments[i]);
    if (i + 1 == segments.size()) piece.append(empty, at);
    pieces_.push_back(std::make_shared<const std::string>(std::move(piece)));
  }
}

std::vector<SharedChatCompletionBody::Part> SharedChatCompletionBody::Parts(
    absl::string_view rubric_item) const {
  std::vector<Part> parts;
  if (pieces_.empty()) return parts;
  parts.reserve(2 * pieces_.size() - 1);
  const Part item = std::make_shared<const std::string>(EscapedJsonContent(rubric_item));
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (i > 0) parts.push_back(item);
    parts.push_back(pieces_[i]);
  }
  return parts;
}

std::string JoinParts(const std::vector<SharedChatCompletionBody::Part>& parts) {
  size_t size = 0;
  for (const auto& part : parts) size += part->size();
  std::string out;
  out.reserve(size);
  for (const auto& part : parts) out += *part;
  return out;
}

}  // namespace hb
