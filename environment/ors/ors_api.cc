#include "environment/ors/ors_api.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/json.h"
#include "common/base/status_macros.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"

namespace hb::env {
namespace {

constexpr absl::string_view kAnswerTool = "answer";

// A request body parsed as a JSON object whose members are all in `allowed` (the reference's
// models forbid extra fields).
absl::StatusOr<rapidjson::Document> ParseObject(absl::string_view body,
                                                std::initializer_list<absl::string_view> allowed) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError()) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed JSON request body at offset ", doc.GetErrorOffset(), ": ",
                     rapidjson::GetParseError_En(doc.GetParseError())));
  }
  if (!doc.IsObject()) return absl::InvalidArgumentError("request body must be a JSON object");
  for (const auto& member : doc.GetObject()) {
    const absl::string_view name(member.name.GetString(), member.name.GetStringLength());
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("request body: unknown field ", JsonQuote(name)));
    }
  }
  return doc;
}

// The member `field` of `obj`, or nullptr when absent or null.
const rapidjson::Value* Member(const rapidjson::Value& obj, const char* field) {
  auto it = obj.FindMember(field);
  if (it == obj.MemberEnd() || it->value.IsNull()) return nullptr;
  return &it->value;
}

absl::Status FieldError(const char* field, const char* what) {
  return absl::InvalidArgumentError(
      absl::StrCat("request body: field '", field, "' must be ", what));
}

absl::StatusOr<std::optional<std::string>> OptionalString(const rapidjson::Value& obj,
                                                          const char* field) {
  const rapidjson::Value* value = Member(obj, field);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->IsString()) return FieldError(field, "a string");
  return std::optional<std::string>(std::string(value->GetString(), value->GetStringLength()));
}

absl::StatusOr<std::string> RequiredString(const rapidjson::Value& obj, const char* field) {
  HB_ASSIGN_OR_RETURN(std::optional<std::string> value, OptionalString(obj, field));
  if (!value.has_value()) return FieldError(field, "a string");
  return *std::move(value);
}

absl::StatusOr<std::optional<int64_t>> OptionalInt(const rapidjson::Value& obj, const char* field) {
  const rapidjson::Value* value = Member(obj, field);
  if (value == nullptr) return std::optional<int64_t>();
  if (!value->IsInt64()) return FieldError(field, "an integer");
  return std::optional<int64_t>(value->GetInt64());
}

std::string SpecJson(const TaskSummary& task) {
  std::vector<std::string> tags;
  tags.reserve(task.tags.size());
  for (const std::string& tag : task.tags) tags.push_back(JsonQuote(tag));
  return absl::StrCat("{\"prompt_id\":", JsonQuote(task.task_id),
                      ",\"split\":", JsonQuote(task.split), ",\"tags\":[", absl::StrJoin(tags, ","),
                      "]}");
}

std::string SpecsJson(const std::vector<TaskSummary>& tasks) {
  std::vector<std::string> specs;
  specs.reserve(tasks.size());
  for (const TaskSummary& task : tasks) specs.push_back(SpecJson(task));
  return absl::StrCat("[", absl::StrJoin(specs, ","), "]");
}

std::string SplitType(const std::string& name) {
  return name == "train" || name == "validation" || name == "test" ? name : "validation";
}

std::string ItemsJson(const std::vector<ItemResult>& items) {
  std::string out = "[";
  for (const ItemResult& item : items) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", "{\"criterion\":", JsonQuote(item.criterion),
                    ",\"points\":", JsonNumber(item.points),
                    ",\"met\":", item.met ? "true" : "false",
                    ",\"explanation\":", JsonQuote(item.explanation), "}");
  }
  out += "]";
  return out;
}

// Python's float spelling ("1.0", not "1"), so that the client sees floats as from the
// reference's pydantic models; null for a non-finite value.
std::string JsonFloat(double value) {
  return std::isfinite(value) ? PythonFloatRepr(value) : "null";
}

std::string Summary(const SubmitResult& result) {
  const auto met = std::count_if(result.items.begin(), result.items.end(),
                                 [](const ItemResult& item) { return item.met; });
  return absl::StrCat("Graded: reward ", PythonFloatRepr(result.reward), " (",
                      PythonFloatRepr(result.points_met), " of ",
                      PythonFloatRepr(result.points_possible), " points; ", met, " of ",
                      result.items.size(), " rubric items met).");
}

}  // namespace

OrsApi::OrsApi(Environment& env, std::string env_name)
    : env_(env), env_name_(std::move(env_name)) {}

absl::Status OrsApi::CheckEnvName(absl::string_view name) const {
  if (absl::EqualsIgnoreCase(name, env_name_)) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("unknown environment ", JsonQuote(name)));
}

std::string OrsApi::Health() { return "{\"status\":\"ok\"}"; }

std::string OrsApi::ListEnvironments() const {
  return absl::StrCat("[", JsonQuote(absl::AsciiStrToLower(env_name_)), "]");
}

std::string OrsApi::Splits() const {
  std::vector<std::string> out;
  for (const SplitInfo& split : env_.ListSplits()) {
    out.push_back(absl::StrCat("{\"name\":", JsonQuote(split.name),
                               ",\"type\":", JsonQuote(SplitType(split.name)), "}"));
  }
  return absl::StrCat("[", absl::StrJoin(out, ","), "]");
}

std::string OrsApi::Tools() {
  return "{\"tools\":[{\"name\":\"answer\",\"description\":\"Submit your reply to the "
         "conversation: it is graded as the next assistant turn against the task's rubric, "
         "and the episode ends.\",\"input_schema\":{\"properties\":{\"answer\":{\"title\":"
         "\"Answer\",\"type\":\"string\"}},\"required\":[\"answer\"],\"title\":\"AnswerInput\","
         "\"type\":\"object\"}}]}";
}

absl::StatusOr<int64_t> OrsApi::SplitSize(absl::string_view split) const {
  std::vector<std::string> names;
  for (const SplitInfo& info : env_.ListSplits()) {
    if (info.name == split) return info.task_count;
    names.push_back(info.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("Invalid split: ", JsonQuote(split),
                                                 " (splits: ", absl::StrJoin(names, ", "), ")"));
}

absl::StatusOr<std::string> OrsApi::Tasks(absl::string_view body) const {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, {"split"}));
  HB_ASSIGN_OR_RETURN(std::string split, RequiredString(doc, "split"));
  HB_ASSIGN_OR_RETURN(int64_t count, SplitSize(split));
  HB_ASSIGN_OR_RETURN(std::vector<TaskSummary> tasks, env_.ListTasks(split, 0, count));
  return absl::StrCat("{\"tasks\":", SpecsJson(tasks), ",\"env_name\":", JsonQuote(env_name_), "}");
}

absl::StatusOr<std::string> OrsApi::NumTasks(absl::string_view body) const {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, {"split"}));
  HB_ASSIGN_OR_RETURN(std::string split, RequiredString(doc, "split"));
  HB_ASSIGN_OR_RETURN(int64_t count, SplitSize(split));
  return absl::StrCat("{\"num_tasks\":", count, "}");
}

absl::StatusOr<TaskPrompt> OrsApi::TaskAtIndex(absl::string_view split, int64_t index) const {
  HB_ASSIGN_OR_RETURN(int64_t count, SplitSize(split));
  const int64_t resolved = index < 0 ? index + count : index;
  absl::StatusOr<TaskPrompt> task =
      resolved < 0 ? absl::OutOfRangeError("negative index")
                   : env_.GetTask(TaskRef::ByIndex(std::string(split), resolved));
  if (task.status().code() == absl::StatusCode::kOutOfRange) {
    return absl::InvalidArgumentError(absl::StrCat("Invalid index: ", index, " is outside split ",
                                                   JsonQuote(split), " of ", count, " tasks"));
  }
  return task;
}

absl::StatusOr<std::string> OrsApi::Task(absl::string_view body) const {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, {"split", "index"}));
  HB_ASSIGN_OR_RETURN(std::string split, RequiredString(doc, "split"));
  HB_ASSIGN_OR_RETURN(std::optional<int64_t> index, OptionalInt(doc, "index"));
  if (!index.has_value()) return FieldError("index", "an integer");
  HB_ASSIGN_OR_RETURN(TaskPrompt task, TaskAtIndex(split, *index));
  return absl::StrCat("{\"task\":", SpecJson(task.task), "}");
}

absl::StatusOr<std::string> OrsApi::TaskRange(absl::string_view body) const {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, {"split", "start", "stop"}));
  HB_ASSIGN_OR_RETURN(std::string split, RequiredString(doc, "split"));
  HB_ASSIGN_OR_RETURN(std::optional<int64_t> start, OptionalInt(doc, "start"));
  HB_ASSIGN_OR_RETURN(std::optional<int64_t> stop, OptionalInt(doc, "stop"));
  HB_ASSIGN_OR_RETURN(int64_t total, SplitSize(split));
  // Python's slice clamping, as the reference's get_task_range.
  auto clamp = [total](int64_t i) {
    return std::min(total, i < 0 ? std::max<int64_t>(0, total + i) : i);
  };
  const int64_t from = clamp(start.value_or(0));
  const int64_t to = std::max(from, clamp(stop.value_or(total)));
  HB_ASSIGN_OR_RETURN(std::vector<TaskSummary> tasks, env_.ListTasks(split, from, to));
  return absl::StrCat("{\"tasks\":", SpecsJson(tasks), "}");
}

absl::StatusOr<TaskRef> OrsApi::ResolveCreate(absl::string_view body) const {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc,
                      ParseObject(body, {"env_name", "task_spec", "split", "index", "secrets"}));
  HB_ASSIGN_OR_RETURN(std::optional<std::string> env_name, OptionalString(doc, "env_name"));
  if (env_name.has_value()) HB_RETURN_IF_ERROR(CheckEnvName(*env_name));
  HB_ASSIGN_OR_RETURN(std::optional<std::string> split, OptionalString(doc, "split"));
  HB_ASSIGN_OR_RETURN(std::optional<int64_t> index, OptionalInt(doc, "index"));
  const rapidjson::Value* spec = Member(doc, "task_spec");
  if (split.has_value() != index.has_value()) {
    return absl::InvalidArgumentError("split and index must both be provided together");
  }
  if ((spec != nullptr) == split.has_value()) {
    return absl::InvalidArgumentError(
        "Provide either task_spec or both split and index, not both/neither");
  }
  if (split.has_value()) {
    HB_ASSIGN_OR_RETURN(TaskPrompt task, TaskAtIndex(*split, *index));
    return TaskRef::InSplit(task.task.split, task.task.task_id);
  }
  if (!spec->IsObject()) return FieldError("task_spec", "an object");
  HB_ASSIGN_OR_RETURN(std::optional<std::string> id, OptionalString(*spec, "prompt_id"));
  if (!id.has_value()) return FieldError("task_spec.prompt_id", "a string");
  // The spec's split (as /tasks gave it) picks among splits that hold the same prompt_id.
  const rapidjson::Value* in_split = Member(*spec, "split");
  if (in_split != nullptr && !in_split->IsString())
    return FieldError("task_spec.split", "a string");
  std::string spec_split =
      in_split == nullptr ? "" : std::string(in_split->GetString(), in_split->GetStringLength());
  if (!spec_split.empty()) HB_RETURN_IF_ERROR(SplitSize(spec_split).status());
  HB_ASSIGN_OR_RETURN(TaskPrompt task,
                      env_.GetTask(TaskRef::InSplit(std::move(spec_split), *std::move(id))));
  return TaskRef::InSplit(task.task.split, task.task.task_id);
}

absl::StatusOr<std::string> OrsApi::Prompt(const TaskRef& ref) const {
  HB_ASSIGN_OR_RETURN(TaskPrompt task, env_.GetTask(ref));
  return absl::StrCat("[{\"text\":", JsonQuote(task.prompt_text),
                      ",\"detail\":null,\"type\":\"text\"}]");
}

absl::StatusOr<OrsToolCall> OrsApi::ParseToolCall(absl::string_view body) {
  HB_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, {"name", "input", "task_id"}));
  OrsToolCall call;
  HB_ASSIGN_OR_RETURN(call.name, RequiredString(doc, "name"));
  HB_ASSIGN_OR_RETURN(std::optional<std::string> call_id, OptionalString(doc, "task_id"));
  call.call_id = call_id.value_or("");
  const rapidjson::Value* input = Member(doc, "input");
  if (input == nullptr || !input->IsObject()) return FieldError("input", "an object");
  if (call.name != kAnswerTool) {
    call.tool_error =
        absl::StrCat("'", call.name, "' is not a valid tool (available tools: ", kAnswerTool, ")");
    return call;
  }
  auto answer = OptionalString(*input, "answer");
  if (!answer.ok() || !answer->has_value()) {
    call.tool_error = "Tool input validation error: input field 'answer' must be a string";
    return call;
  }
  call.answer = **std::move(answer);
  return call;
}

std::string OrsApi::RunToolError(absl::string_view message) {
  return absl::StrCat("{\"ok\":false,\"error\":", JsonQuote(message), "}");
}

std::string OrsApi::RunToolOutput(const absl::StatusOr<SubmitResult>& result) {
  if (!result.ok()) return RunToolError(result.status().ToString());
  return absl::StrCat(
      "{\"ok\":true,\"output\":{\"blocks\":[{\"text\":", JsonQuote(Summary(*result)),
      ",\"detail\":null,\"type\":\"text\"}],\"metadata\":{\"reward_clipped\":",
      JsonFloat(result->reward_clipped), ",\"points_met\":", JsonFloat(result->points_met),
      ",\"points_possible\":", JsonFloat(result->points_possible),
      ",\"items\":", ItemsJson(result->items), "},\"reward\":", JsonFloat(result->reward),
      ",\"finished\":true}}");
}

}  // namespace hb::env
