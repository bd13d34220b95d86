#include "orchestrator/policy/sampled_reply.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "rapidjson/document.h"

namespace hb {

std::string FormatSampledReply(const SampledReply& reply) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("prompt_id");
    WriteJsonString(w, reply.prompt_id);
    w.Key("response");
    WriteJsonString(w, reply.response);
    if (reply.system_prompt.has_value()) {
      w.Key("system_prompt");
      WriteJsonString(w, *reply.system_prompt);
    }
    w.Key("model");
    WriteJsonString(w, reply.model);
    w.Key("finish_reason");
    WriteJsonString(w, reply.finish_reason);
    w.Key("usage");
    w.StartObject();
    w.Key("prompt_tokens");
    w.Int64(reply.usage.prompt_tokens);
    w.Key("completion_tokens");
    w.Int64(reply.usage.completion_tokens);
    w.Key("total_tokens");
    w.Int64(reply.usage.prompt_tokens + reply.usage.completion_tokens);
    w.Key("cached_tokens");
    w.Int64(reply.usage.cached_tokens);
    w.EndObject();
    w.EndObject();
  });
}

absl::StatusOr<SampledReply> ParseSampledReply(const std::string& line) {
  rapidjson::Document doc;
  HB_RETURN_IF_ERROR(ParseJson(line, doc));
  if (!doc.IsObject()) return JsonTypeError("line", "an object", doc);
  SampledReply reply;
  HB_ASSIGN_OR_RETURN(reply.prompt_id, JsonStringMember(doc, "prompt_id"));
  HB_ASSIGN_OR_RETURN(reply.response, JsonStringMember(doc, "response"));
  if (const rapidjson::Value* system = FindJsonMember(doc, "system_prompt")) {
    HB_ASSIGN_OR_RETURN(reply.system_prompt, JsonString(*system, "system_prompt"));
  }
  HB_ASSIGN_OR_RETURN(reply.model, JsonStringMember(doc, "model"));
  HB_ASSIGN_OR_RETURN(reply.finish_reason, JsonStringMember(doc, "finish_reason"));
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* usage, RequireJsonMember(doc, "usage"));
  if (!usage->IsObject()) return JsonTypeError("usage", "an object", *usage);
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* prompt, RequireJsonMember(*usage, "prompt_tokens"));
  HB_ASSIGN_OR_RETURN(reply.usage.prompt_tokens, JsonInt(*prompt, "usage.prompt_tokens"));
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* completion,
                      RequireJsonMember(*usage, "completion_tokens"));
  HB_ASSIGN_OR_RETURN(reply.usage.completion_tokens,
                      JsonInt(*completion, "usage.completion_tokens"));
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* cached, RequireJsonMember(*usage, "cached_tokens"));
  HB_ASSIGN_OR_RETURN(reply.usage.cached_tokens, JsonInt(*cached, "usage.cached_tokens"));
  return reply;
}

absl::StatusOr<ResponsesFileCounts> WriteResponsesFile(const std::string& path,
                                                       const std::vector<Example>& examples,
                                                       const std::vector<SampledReply>& replies) {
  absl::flat_hash_map<std::string, const SampledReply*> by_id;
  for (const SampledReply& reply : replies) by_id.emplace(reply.prompt_id, &reply);
  ResponsesFileCounts counts;
  std::string text;
  for (const Example& example : examples) {
    auto it = by_id.find(example.prompt_id);
    if (it == by_id.end()) continue;
    const SampledReply& reply = *it->second;
    ++counts.replies;
    if (reply.finish_reason == "length") ++counts.length_truncated;
    if (reply.response.empty()) ++counts.empty;
    absl::StrAppend(&text, FormatSampledReply(reply), "\n");
  }
  HB_RETURN_IF_ERROR(WriteFileAtomically(path, text));
  return counts;
}

}  // namespace hb
