#include "orchestrator/report/report_tasks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/json.h"
#include "common/base/json_io.h"
#include "common/base/sha256.h"
#include "common/healthbench/prompts.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace hb::report_internal {
namespace {

// The points as the dataset wrote them ("10", "-6", "5.0"), which is valid JSON; falls back to
// JsonNumber when the text is not a plain JSON number.
std::string JsonPoints(const RubricItem& item) {
  const std::string& text = item.points_text;
  bool plain = !text.empty();
  for (char c : text) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.' ||
          c == 'e' || c == 'E')) {
      plain = false;
    }
  }
  return plain ? text : JsonNumber(item.points);
}

std::string DescribeIndices(const std::vector<int>& indices) {
  constexpr size_t kMaxListed = 10;
  std::vector<int> listed(indices.begin(), indices.begin() + std::min(indices.size(), kMaxListed));
  std::string out = absl::StrJoin(listed, ", ");
  if (indices.size() > kMaxListed) absl::StrAppend(&out, ", ...");
  return out;
}

}  // namespace

// Scores one task, or explains why it is not graded.
void ScoreOne(TaskState& task, const std::optional<LengthAdjustment>& length_adjustment) {
  const Example& example = *task.example;
  const size_t n = example.rubrics.size();
  if (task.response == nullptr) {
    task.error = "no response";
    return;
  }
  std::vector<std::string> problems;
  std::vector<std::string> failed;
  std::vector<int> missing;
  for (size_t i = 0; i < n; ++i) {
    if (task.verdicts[i] != nullptr) continue;
    if (task.failures[i] != nullptr) {
      failed.push_back(absl::StrCat("[", i, "] ", task.failures[i]->reason));
    } else {
      missing.push_back(static_cast<int>(i));
    }
  }
  if (!failed.empty()) {
    problems.push_back(absl::StrCat(failed.size(), " of ", n,
                                    " rubric rows failed: ", absl::StrJoin(failed, "; ")));
  }
  if (!missing.empty()) {
    problems.push_back(absl::StrCat(missing.size(), " of ", n,
                                    " rubric rows have no verdict (rubric_index ",
                                    DescribeIndices(missing), ")"));
  }
  if (!problems.empty()) {
    task.error = absl::StrJoin(problems, "; ");
    return;
  }
  std::vector<bool> met(n);
  for (size_t i = 0; i < n; ++i) met[i] = task.verdicts[i]->criteria_met;
  absl::StatusOr<OrderedMetrics> metrics =
      ScoreTask(example.prompt_id, example.example_tags, example.rubrics, met);
  if (!metrics.ok()) {
    // The reference asserts here (no positive points); we report the task as not graded.
    task.error = std::string(metrics.status().message());
    return;
  }
  task.metrics = *std::move(metrics);
  if (length_adjustment.has_value()) {
    if (absl::Status added =
            AddLengthAdjustedScore(task.response->response, *length_adjustment, task.metrics);
        !added.ok()) {
      task.error = std::string(added.message());
      return;
    }
  }
  for (const auto& [key, value] : task.metrics) {
    if (key == "overall_score") task.score = value;
  }
  if (!task.score.has_value()) task.error = "no overall_score in the task metrics";
}

std::string TaskLine(const TaskState& task) {
  const Example& example = *task.example;
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("prompt_id");
  WriteJsonString(writer, example.prompt_id);
  writer.Key("score");
  if (task.score.has_value()) {
    WritePythonFloat(writer, *task.score);
  } else {
    writer.Null();
    writer.Key("error");
    WriteJsonString(writer, task.error);
  }
  writer.Key("completion_id");
  if (task.response != nullptr) {
    WriteJsonString(writer, Sha256Hex(example.prompt_id + task.response->response));
  } else {
    writer.Null();
  }
  writer.Key("response");
  WriteOptionalJsonString(writer, task.response != nullptr
                                      ? std::optional<std::string>(task.response->response)
                                      : std::nullopt);
  writer.Key("system_prompt");
  WriteOptionalJsonString(writer,
                          task.response != nullptr ? task.response->system_prompt : std::nullopt);
  writer.Key("metrics");
  writer.StartObject();
  for (const auto& [key, value] : task.metrics) {
    WriteJsonString(writer, key);
    WritePythonFloat(writer, value);
  }
  writer.EndObject();
  writer.Key("rubric_items");
  writer.StartArray();
  for (size_t i = 0; i < example.rubrics.size(); ++i) {
    const RubricItem& item = example.rubrics[i];
    writer.StartObject();
    writer.Key("criterion");
    WriteJsonString(writer, item.criterion);
    writer.Key("points");
    WriteRawJson(writer, JsonPoints(item), rapidjson::kNumberType);
    writer.Key("tags");
    writer.StartArray();
    for (const std::string& tag : item.tags) WriteJsonString(writer, tag);
    writer.EndArray();
    writer.Key("criteria_met");
    const VerdictRow* verdict = i < task.verdicts.size() ? task.verdicts[i] : nullptr;
    if (verdict != nullptr) {
      writer.Bool(verdict->criteria_met);
    } else {
      writer.Null();
    }
    writer.Key("explanation");
    WriteOptionalJsonString(writer, verdict != nullptr
                                        ? std::optional<std::string>(verdict->explanation)
                                        : std::nullopt);
    const RowFailure* failure = i < task.failures.size() ? task.failures[i] : nullptr;
    if (verdict == nullptr && failure != nullptr) {
      writer.Key("failure");
      WriteJsonString(writer, failure->reason);
    }
    writer.EndObject();
  }
  writer.EndArray();
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

HtmlTask BuildHtmlTask(const TaskState& task) {
  const Example& example = *task.example;
  HtmlTask view;
  view.prompt_id = example.prompt_id;
  view.score = task.score;
  view.error = task.error;
  view.example_tags = example.example_tags;
  if (task.response != nullptr) {
    view.has_response = true;
    view.conversation =
        GradedConversation(example.prompt, task.response->system_prompt, task.response->response);
  } else {
    view.conversation = example.prompt;
  }
  view.rubric.reserve(example.rubrics.size());
  for (size_t i = 0; i < example.rubrics.size(); ++i) {
    const RubricItem& item = example.rubrics[i];
    HtmlRubricRow row;
    row.criterion = item.criterion;
    if (!item.verbatim) {  // a verbatim item (meta-eval) is shown as the grader saw it
      row.points_text = item.points_text.empty()
                            ? PythonPointsText(item.points, item.points != std::floor(item.points))
                            : item.points_text;
    }
    row.tags = item.tags;
    if (task.verdicts[i] != nullptr) {
      row.criteria_met = task.verdicts[i]->criteria_met;
      row.explanation = task.verdicts[i]->explanation;
    } else if (task.failures[i] != nullptr) {
      row.failure = task.failures[i]->reason;
    }
    view.rubric.push_back(std::move(row));
  }
  return view;
}

}  // namespace hb::report_internal
