#include "environment/trainer_protocols.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "common/base/json.h"
#include "common/base/status_macros.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace hb::env {
namespace {

absl::StatusOr<rapidjson::Document> ParseBody(absl::string_view body) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError()) {
    return absl::InvalidArgumentError(
        absl::StrCat("request body: malformed JSON at offset ", doc.GetErrorOffset(), ": ",
                     rapidjson::GetParseError_En(doc.GetParseError())));
  }
  if (!doc.IsObject()) return absl::InvalidArgumentError("request body must be a JSON object");
  return doc;
}

absl::string_view View(const rapidjson::Value& value) {
  return absl::string_view(value.GetString(), value.GetStringLength());
}

// obj[field] when present and not null, else nullptr.
const rapidjson::Value* Find(const rapidjson::Value& obj, const char* field) {
  auto it = obj.FindMember(field);
  return it == obj.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

absl::Status Expected(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("request body: field '", field, "' must be ", what));
}

absl::StatusOr<std::vector<absl::string_view>> StringArray(const rapidjson::Value& obj,
                                                           const char* field) {
  const rapidjson::Value* value = Find(obj, field);
  if (value == nullptr || !value->IsArray()) return Expected(field, "an array of strings");
  std::vector<absl::string_view> out;
  for (const rapidjson::Value& item : value->GetArray()) {
    if (!item.IsString()) return Expected(field, "an array of strings");
    out.push_back(View(item));
  }
  return out;
}

absl::StatusOr<std::string> TaskIdField(const rapidjson::Value& obj, const char* field) {
  const rapidjson::Value* value = Find(obj, field);
  if (value == nullptr || !value->IsString() || value->GetStringLength() == 0) {
    return Expected(field, "a task id (a non-empty string, the HealthBench prompt_id)");
  }
  return std::string(View(*value));
}

// Python's float spelling, null when not finite (as the ORS answers).
std::string Float(double value) { return std::isfinite(value) ? PythonFloatRepr(value) : "null"; }

std::string FloatArray(const std::vector<SubmitResult>& results,
                       double (*field)(const SubmitResult&)) {
  std::vector<std::string> out;
  out.reserve(results.size());
  for (const SubmitResult& result : results) out.push_back(Float(field(result)));
  return absl::StrCat("[", absl::StrJoin(out, ","), "]");
}

// The graded fields every route but OpenRLHF's answers with, without braces.
std::string ResultFields(const SubmitResult& result) {
  return absl::StrCat("\"reward\":", Float(result.reward),
                      ",\"reward_clipped\":", Float(result.reward_clipped),
                      ",\"points_met\":", Float(result.points_met),
                      ",\"points_possible\":", Float(result.points_possible));
}

std::string TagScores(const std::map<std::string, double>& scores) {
  std::vector<std::string> out;
  out.reserve(scores.size());
  for (const auto& [tag, score] : scores) out.push_back(JsonQuote(tag) + ":" + Float(score));
  return absl::StrCat("{", absl::StrJoin(out, ","), "}");
}

// The request body re-serialized without `replaced` members, with `fields` (",a:b,..." without
// the leading comma) appended.
std::string Echo(const std::string& body, absl::Span<const char* const> replaced,
                 const std::string& fields) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  for (const char* name : replaced) doc.RemoveMember(name);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  std::string out(buffer.GetString(), buffer.GetSize());
  out.pop_back();  // '}'
  absl::StrAppend(&out, doc.MemberCount() > 0 ? "," : "", fields, "}");
  return out;
}

constexpr const char* kAnswerFields[] = {"reward",
                                         "reward_clipped",
                                         "points_met",
                                         "points_possible",
                                         "reward_components",
                                         "_ng_failure_class",
                                         "_ng_failure_judge_error"};

// The concatenated text of the "output_text" parts of the assistant "message" items.
absl::StatusOr<std::string> ResponseOutputText(const rapidjson::Value& response) {
  const rapidjson::Value* output = Find(response, "output");
  if (output == nullptr || !output->IsArray()) {
    return Expected("response.output", "an array (a Responses API object's output items)");
  }
  std::string text;
  for (const rapidjson::Value& item : output->GetArray()) {
    if (!item.IsObject()) continue;
    const rapidjson::Value* type = Find(item, "type");
    const rapidjson::Value* role = Find(item, "role");
    if (type == nullptr || !type->IsString() || View(*type) != "message") continue;
    if (role != nullptr && (!role->IsString() || View(*role) != "assistant")) continue;
    const rapidjson::Value* content = Find(item, "content");
    if (content == nullptr) continue;
    if (content->IsString()) {
      absl::StrAppend(&text, View(*content));
      continue;
    }
    if (!content->IsArray()) return Expected("response.output[].content", "an array of parts");
    for (const rapidjson::Value& part : content->GetArray()) {
      if (!part.IsObject()) continue;
      const rapidjson::Value* part_type = Find(part, "type");
      const rapidjson::Value* part_text = Find(part, "text");
      if (part_type != nullptr && part_type->IsString() && View(*part_type) == "output_text" &&
          part_text != nullptr && part_text->IsString()) {
        absl::StrAppend(&text, View(*part_text));
      }
    }
  }
  return text;
}

// Running sums for "mean/", "min/" and "max/" of one field.
struct Stat {
  double sum = 0;
  double min = 0;
  double max = 0;
  int64_t count = 0;
  void Add(double value) {
    min = count == 0 ? value : std::min(min, value);
    max = count == 0 ? value : std::max(max, value);
    sum += value;
    ++count;
  }
  double mean() const { return count == 0 ? 0 : sum / static_cast<double>(count); }
};

// "mean/<name>" (and with `extremes`, "min/" and "max/") entries for each stat, without braces.
std::string StatFields(const std::map<std::string, Stat>& stats, bool extremes) {
  std::vector<std::string> out;
  for (const auto& [name, stat] : stats) {
    out.push_back(absl::StrCat(JsonQuote("mean/" + name), ":", Float(stat.mean())));
    if (extremes) {
      out.push_back(absl::StrCat(JsonQuote("min/" + name), ":", Float(stat.min)));
      out.push_back(absl::StrCat(JsonQuote("max/" + name), ":", Float(stat.max)));
    }
  }
  return absl::StrJoin(out, ",");
}

}  // namespace

absl::string_view StripSuffixes(absl::string_view reply, const std::vector<std::string>& suffixes) {
  bool stripped = true;
  while (stripped) {
    stripped = false;
    for (const std::string& suffix : suffixes) {
      if (!suffix.empty() && absl::ConsumeSuffix(&reply, suffix)) stripped = true;
    }
  }
  return reply;
}

bool IsJudgeFailure(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kFailedPrecondition:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::vector<TrainerSample>> ParseOpenRlhfRequest(
    absl::string_view body, const TrainerProtocolOptions& options) {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseBody(body));
  HB_ASSIGN_OR_RETURN(std::vector<absl::string_view> queries, StringArray(doc, "query"));
  HB_ASSIGN_OR_RETURN(std::vector<absl::string_view> prompts, StringArray(doc, "prompts"));
  const rapidjson::Value* labels = Find(doc, "labels");
  if (labels == nullptr || !labels->IsArray()) return Expected("labels", "an array of task ids");
  if (queries.size() != prompts.size() || queries.size() != labels->Size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("request body: 'query', 'prompts' and 'labels' must have the same length "
                     "(got ",
                     queries.size(), ", ", prompts.size(), ", ", labels->Size(), ")"));
  }
  std::vector<TrainerSample> samples;
  samples.reserve(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    const rapidjson::Value& label = (*labels)[static_cast<rapidjson::SizeType>(i)];
    if (!label.IsString() || label.GetStringLength() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("request body: labels[", i,
                       "] must be a task id (a non-empty string, the HealthBench "
                       "prompt_id; OpenRLHF's --data.label_key names its dataset column)"));
    }
    std::string task_id(View(label));
    if (!absl::StartsWith(queries[i], prompts[i])) {
      const auto mismatch =
          std::mismatch(prompts[i].begin(), prompts[i].end(), queries[i].begin(),
                        queries[i].begin() + std::min(queries[i].size(), prompts[i].size()));
      return absl::InvalidArgumentError(absl::StrCat(
          "query[", i, "] (task ", JsonQuote(task_id), ") does not start with prompts[", i,
          "]: they differ at byte ", mismatch.first - prompts[i].begin(),
          " (a prompt truncated by the trainer, or not reproduced by its tokenizer), so the "
          "reply cannot be told from the prompt"));
    }
    queries[i].remove_prefix(prompts[i].size());
    samples.push_back(TrainerSample{
        std::move(task_id), std::string(StripSuffixes(queries[i], options.strip_suffixes))});
  }
  return samples;
}

std::string FormatOpenRlhfAnswer(const std::vector<SubmitResult>& results) {
  return absl::StrCat(
      "{\"rewards\":", FloatArray(results, [](const SubmitResult& r) { return r.reward; }),
      ",\"scores\":", FloatArray(results, [](const SubmitResult& r) { return r.reward_clipped; }),
      ",\"extra_logs\":{\"points_met\":",
      FloatArray(results, [](const SubmitResult& r) { return r.points_met; }),
      ",\"points_possible\":",
      FloatArray(results, [](const SubmitResult& r) { return r.points_possible; }), "}}");
}

absl::StatusOr<TrainerSample> ParseSlimeRequest(absl::string_view body,
                                                const TrainerProtocolOptions& options) {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseBody(body));
  HB_ASSIGN_OR_RETURN(std::string task_id, TaskIdField(doc, "label"));
  const rapidjson::Value* response = Find(doc, "response");
  if (response == nullptr || !response->IsString()) {
    return Expected("response", "a string (the generated reply)");
  }
  return TrainerSample{std::move(task_id),
                       std::string(StripSuffixes(View(*response), options.strip_suffixes))};
}

std::string FormatSlimeAnswer(const SubmitResult& result) {
  return absl::StrCat("{", ResultFields(result), ",\"task_id\":", JsonQuote(result.task_id), "}");
}

absl::StatusOr<NemoGymVerifyRequest> ParseNemoGymVerify(absl::string_view body,
                                                        const TrainerProtocolOptions& options) {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseBody(body));
  const char* id_field = Find(doc, "prompt_id") != nullptr ? "prompt_id" : "task_id";
  if (Find(doc, id_field) == nullptr) {
    return absl::InvalidArgumentError(
        "request body: a NeMo-Gym row needs 'prompt_id' or 'task_id' (the HealthBench "
        "prompt_id of the task)");
  }
  HB_ASSIGN_OR_RETURN(std::string task_id, TaskIdField(doc, id_field));
  const rapidjson::Value* response = Find(doc, "response");
  if (response == nullptr || !response->IsObject()) {
    return Expected("response", "an object (the Responses API response to verify)");
  }
  HB_ASSIGN_OR_RETURN(std::string text, ResponseOutputText(*response));
  return NemoGymVerifyRequest{
      TrainerSample{std::move(task_id), std::string(StripSuffixes(text, options.strip_suffixes))},
      std::string(body)};
}

std::string FormatNemoGymVerifyAnswer(const NemoGymVerifyRequest& request,
                                      const SubmitResult& result) {
  return Echo(
      request.body, kAnswerFields,
      absl::StrCat(ResultFields(result), ",\"reward_components\":", TagScores(result.tag_scores)));
}

std::string FormatNemoGymJudgeFailure(const NemoGymVerifyRequest& request,
                                      const absl::Status& status) {
  return Echo(request.body, kAnswerFields,
              absl::StrCat("\"reward\":0.0,\"_ng_failure_class\":\"judge_failed\","
                           "\"_ng_failure_judge_error\":",
                           JsonQuote(status.ToString())));
}

absl::StatusOr<std::string> NemoGymAggregateMetrics(absl::string_view body) {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseBody(body));
  const rapidjson::Value* rows = Find(doc, "verify_responses");
  if (rows == nullptr || !rows->IsArray()) {
    return Expected("verify_responses", "an array of /verify answers");
  }
  std::map<std::string, Stat> agent;
  std::map<int64_t, std::map<std::string, Stat>> per_task;
  for (rapidjson::SizeType i = 0; i < rows->Size(); ++i) {
    const rapidjson::Value& row = (*rows)[i];
    if (!row.IsObject()) return Expected(absl::StrCat("verify_responses[", i, "]"), "an object");
    if (Find(row, "_ng_failure_class") != nullptr) continue;
    const rapidjson::Value* reward = Find(row, "reward");
    if (reward == nullptr || !reward->IsNumber()) {
      return Expected(absl::StrCat("verify_responses[", i, "].reward"), "a number");
    }
    const rapidjson::Value* index = Find(row, "_ng_task_index");
    const int64_t task = index != nullptr && index->IsInt64() ? index->GetInt64() : 0;
    std::vector<std::pair<std::string, double>> values = {{"reward", reward->GetDouble()}};
    // The other top-level numbers /verify answers with (README: profiled as usual).
    for (const char* field : {"reward_clipped", "points_met", "points_possible"}) {
      const rapidjson::Value* value = Find(row, field);
      if (value != nullptr && value->IsNumber()) values.emplace_back(field, value->GetDouble());
    }
    const rapidjson::Value* components = Find(row, "reward_components");
    if (components != nullptr && components->IsObject()) {
      for (const auto& member : components->GetObject()) {
        if (member.value.IsNumber() && absl::StartsWith(View(member.name), "theme:")) {
          values.emplace_back(std::string(View(member.name)), member.value.GetDouble());
        }
      }
    }
    for (const auto& [name, value] : values) {
      agent[name].Add(value);
      per_task[task][name].Add(value);
    }
  }
  std::vector<std::string> groups;
  for (const auto& [task, stats] : per_task) {
    groups.push_back(absl::StrCat("{\"_ng_task_index\":", task, ",\"num_rollouts\":",
                                  stats.at("reward").count, ",", StatFields(stats, false), "}"));
  }
  const std::string key_metrics = StatFields(agent, false);
  const int64_t rollouts = agent.count("reward") > 0 ? agent.at("reward").count : 0;
  return absl::StrCat("{\"group_level_metrics\":[", absl::StrJoin(groups, ","),
                      "],\"agent_metrics\":{\"num_rollouts\":", rollouts, agent.empty() ? "" : ",",
                      StatFields(agent, true), "},\"key_metrics\":{", key_metrics, "}}");
}

}  // namespace hb::env
