#include "common/healthbench/grader_request_body.h"

#include <cmath>
#include <string>

#include "common/base/json_io.h"

namespace hb {

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
  if (!prompt_cache_key.empty()) {
    writer.Key("prompt_cache_key");
    WriteJsonString(writer, prompt_cache_key);
  }
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace hb
