#include "common/healthbench/chat_request.h"

#include <cmath>
#include <string>

#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace hb {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void WriteString(JsonWriter& writer, absl::string_view value) {
  writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

}  // namespace

std::string BuildChatCompletionBody(const GraderSettings& settings, absl::string_view grader_prompt,
                                    absl::string_view prompt_cache_key) {
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  writer.StartObject();
  writer.Key("model");
  WriteString(writer, settings.model);
  writer.Key("messages");
  writer.StartArray();
  if (!settings.system_message.empty()) {
    writer.StartObject();
    writer.Key("role");
    writer.String("system");
    writer.Key("content");
    WriteString(writer, settings.system_message);
    writer.EndObject();
  }
  writer.StartObject();
  writer.Key("role");
  writer.String("user");
  writer.Key("content");
  WriteString(writer, grader_prompt);
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
  if (!prompt_cache_key.empty()) {
    writer.Key("prompt_cache_key");
    WriteString(writer, prompt_cache_key);
  }
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace hb
