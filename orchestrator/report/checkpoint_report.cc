#include "orchestrator/report/checkpoint_report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/file.h"
#include "common/base/json.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/healthbench/prompts.h"
#include "orchestrator/report/html_report.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

#ifndef HB_TOOL_VERSION
#define HB_TOOL_VERSION "unknown"
#endif

namespace hb {
namespace {

constexpr int kBootstrapSamples = 1000;

// Python's repr for finite floats (what the reference's json.dumps prints); null otherwise.
std::string JsonFloat(double value) {
  return std::isfinite(value) ? PythonFloatRepr(value) : "null";
}

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

template <typename Writer>
void String(Writer& writer, absl::string_view value) {
  writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

template <typename Writer>
void Raw(Writer& writer, const std::string& json, rapidjson::Type type) {
  writer.RawValue(json.data(), json.size(), type);
}

template <typename Writer>
void Float(Writer& writer, double value) {
  Raw(writer, JsonFloat(value),
      std::isfinite(value) ? rapidjson::kNumberType : rapidjson::kNullType);
}

template <typename Writer>
void OptionalString(Writer& writer, const std::optional<std::string>& value) {
  if (value.has_value()) {
    String(writer, *value);
  } else {
    writer.Null();
  }
}

std::string GeneratedAt(const ReportContext& context) {
  if (!context.generated_at.empty()) return context.generated_at;
  const char* fixed = std::getenv("HB_FIXED_TIME");
  if (fixed != nullptr && *fixed != '\0') return fixed;
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

// Everything known about one task after matching rows to it.
struct TaskState {
  const Example* example = nullptr;
  const Response* response = nullptr;
  std::vector<const VerdictRow*> verdicts;  // per rubric row
  std::vector<const RowFailure*> failures;  // per rubric row (first failure)
  std::optional<double> score;
  OrderedMetrics metrics;
  std::string error;
};

std::string DescribeIndices(const std::vector<int>& indices) {
  constexpr size_t kMaxListed = 10;
  std::vector<int> listed(indices.begin(), indices.begin() + std::min(indices.size(), kMaxListed));
  std::string out = absl::StrJoin(listed, ", ");
  if (indices.size() > kMaxListed) absl::StrAppend(&out, ", ...");
  return out;
}

// Scores one task, or explains why it is not graded.
void ScoreOne(TaskState& task) {
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
  String(writer, example.prompt_id);
  writer.Key("score");
  if (task.score.has_value()) {
    Float(writer, *task.score);
  } else {
    writer.Null();
    writer.Key("error");
    String(writer, task.error);
  }
  writer.Key("completion_id");
  if (task.response != nullptr) {
    String(writer, Sha256Hex(example.prompt_id + task.response->response));
  } else {
    writer.Null();
  }
  writer.Key("response");
  OptionalString(writer, task.response != nullptr
                             ? std::optional<std::string>(task.response->response)
                             : std::nullopt);
  writer.Key("system_prompt");
  OptionalString(writer, task.response != nullptr ? task.response->system_prompt : std::nullopt);
  writer.Key("metrics");
  writer.StartObject();
  for (const auto& [key, value] : task.metrics) {
    String(writer, key);
    Float(writer, value);
  }
  writer.EndObject();
  writer.Key("rubric_items");
  writer.StartArray();
  for (size_t i = 0; i < example.rubrics.size(); ++i) {
    const RubricItem& item = example.rubrics[i];
    writer.StartObject();
    writer.Key("criterion");
    String(writer, item.criterion);
    writer.Key("points");
    Raw(writer, JsonPoints(item), rapidjson::kNumberType);
    writer.Key("tags");
    writer.StartArray();
    for (const std::string& tag : item.tags) String(writer, tag);
    writer.EndArray();
    writer.Key("criteria_met");
    const VerdictRow* verdict = i < task.verdicts.size() ? task.verdicts[i] : nullptr;
    if (verdict != nullptr) {
      writer.Bool(verdict->criteria_met);
    } else {
      writer.Null();
    }
    writer.Key("explanation");
    OptionalString(writer, verdict != nullptr ? std::optional<std::string>(verdict->explanation)
                                              : std::nullopt);
    const RowFailure* failure = i < task.failures.size() ? task.failures[i] : nullptr;
    if (verdict == nullptr && failure != nullptr) {
      writer.Key("failure");
      String(writer, failure->reason);
    }
    writer.EndObject();
  }
  writer.EndArray();
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

struct Usage {
  int64_t attempts = 0, prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
};

std::string SummaryJson(const ReportContext& context, const CheckpointResult& result,
                        const Usage& usage, bool incomplete, const std::string& generated_at) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  writer.StartObject();
  writer.Key("checkpoint");
  String(writer, context.checkpoint);
  writer.Key("score");
  Float(writer, result.score);
  writer.Key("metrics");
  writer.StartObject();
  if (result.graded > 0) {
    for (const auto& [key, value] : ReferenceMetricsMap(result.aggregate)) {
      String(writer, key);
      if (absl::EndsWith(key, ":n_samples")) {
        writer.Int64(static_cast<int64_t>(value));
      } else {
        Float(writer, value);
      }
    }
  }
  writer.EndObject();
  writer.Key("counts");
  writer.StartObject();
  writer.Key("tasks");
  writer.Int64(result.tasks);
  writer.Key("graded");
  writer.Int64(result.graded);
  writer.Key("not_graded");
  writer.Int64(result.not_graded);
  writer.Key("rows");
  writer.Int64(result.rows);
  writer.Key("graded_rows");
  writer.Int64(result.graded_rows);
  writer.Key("failed_rows");
  writer.Int64(result.failed_rows);
  writer.EndObject();
  writer.Key("usage");
  writer.StartObject();
  writer.Key("attempts");
  writer.Int64(usage.attempts);
  writer.Key("prompt_tokens");
  writer.Int64(usage.prompt_tokens);
  writer.Key("cached_tokens");
  writer.Int64(usage.cached_tokens);
  writer.Key("completion_tokens");
  writer.Int64(usage.completion_tokens);
  writer.EndObject();
  writer.Key("provenance");
  writer.StartObject();
  writer.Key("dataset");
  writer.StartObject();
  writer.Key("path");
  String(writer, context.dataset_path);
  writer.Key("sha256");
  String(writer, context.dataset_sha256);
  writer.EndObject();
  writer.Key("examples");
  if (context.examples >= 0) {
    writer.Int64(context.examples);
  } else {
    writer.Null();
  }
  writer.Key("responses");
  writer.StartObject();
  writer.Key("path");
  String(writer, context.responses_path);
  writer.Key("sha256");
  String(writer, context.responses_sha256);
  writer.EndObject();
  writer.Key("grader_template_sha256");
  String(writer, context.template_sha256);
  writer.Key("grader");
  writer.StartObject();
  writer.Key("model");
  String(writer, context.grader.model);
  writer.Key("temperature");
  Float(writer, context.grader.temperature);
  writer.Key("max_tokens");
  writer.Int(context.grader.max_tokens);
  writer.Key("system_message");
  String(writer, context.grader.system_message);
  writer.EndObject();
  writer.Key("grader_endpoint");
  String(writer, context.grader_endpoint);
  writer.Key("seed");
  writer.Uint(context.seed);
  writer.Key("bootstrap_samples");
  writer.Int(kBootstrapSamples);
  writer.Key("checkpoint_index");
  writer.Int(context.checkpoint_index);
  writer.Key("tool_version");
  String(writer, ToolVersion());
  writer.Key("simulated");
  writer.Bool(context.simulated);
  writer.Key("incomplete");
  writer.Bool(incomplete);
  writer.Key("generated_at");
  String(writer, generated_at);
  writer.EndObject();
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

HtmlReport BuildHtmlHead(const ReportContext& context, const CheckpointResult& result,
                         const std::vector<TaskState>& tasks, bool incomplete,
                         const std::string& generated_at) {
  HtmlReport html;
  html.checkpoint = context.checkpoint;
  if (result.graded > 0) html.score = result.score;
  html.score_bootstrap_std = result.score_bootstrap_std;
  html.simulated = context.simulated;
  html.incomplete = incomplete;
  html.facts = {
      {"tasks graded",
       absl::StrCat(result.graded, " of ", result.tasks, " (", result.not_graded, " not graded)")},
      {"rubric rows", absl::StrCat(result.graded_rows, " graded, ", result.failed_rows,
                                   " failed, of ", result.rows)},
      {"dataset", absl::StrCat(context.dataset_path, " (sha256 ", context.dataset_sha256, ")")},
      {"examples", context.examples >= 0 ? absl::StrCat(context.examples) : "all"},
      {"responses",
       absl::StrCat(context.responses_path, " (sha256 ", context.responses_sha256, ")")},
      {"grader template sha256", context.template_sha256},
      {"grader", absl::StrCat(context.grader.model, ", temperature ",
                              PythonFloatRepr(context.grader.temperature), ", max_tokens ",
                              context.grader.max_tokens, ", system message \"",
                              context.grader.system_message, "\"")},
      {"grader endpoint", context.grader_endpoint},
      {"bootstrap", absl::StrCat(kBootstrapSamples, " samples, seed ", context.seed)},
      {"tool version", ToolVersion()},
      {"generated at", generated_at},
  };
  html.metrics = result.aggregate.metrics;
  // The worst-tasks table only needs each task's prompt_id and score; the page's task
  // sections are rendered one at a time by BuildHtmlTask.
  html.tasks.reserve(tasks.size());
  for (const TaskState& task : tasks) {
    HtmlTask view;
    view.prompt_id = task.example->prompt_id;
    view.score = task.score;
    html.tasks.push_back(std::move(view));
  }
  return html;
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
    row.points_text = item.points_text.empty()
                          ? PythonPointsText(item.points, item.points != std::floor(item.points))
                          : item.points_text;
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

}  // namespace

const char* ToolVersion() { return HB_TOOL_VERSION; }

absl::StatusOr<CheckpointResult> WriteCheckpointReport(
    const Dataset& dataset, const ResponseSet& responses, const std::vector<VerdictRow>& verdicts,
    const std::vector<RowFailure>& failures, const ReportContext& context, const std::string& dir) {
  std::vector<TaskState> tasks(dataset.examples.size());
  absl::flat_hash_map<std::string, size_t> position;
  for (size_t i = 0; i < dataset.examples.size(); ++i) {
    const Example& example = dataset.examples[i];
    tasks[i].example = &example;
    tasks[i].response = responses.Find(example.prompt_id);
    tasks[i].verdicts.assign(example.rubrics.size(), nullptr);
    tasks[i].failures.assign(example.rubrics.size(), nullptr);
    position.emplace(example.prompt_id, i);
  }
  auto locate = [&](const std::string& what, const std::string& prompt_id,
                    int rubric_index) -> absl::StatusOr<TaskState*> {
    auto it = position.find(prompt_id);
    if (it == position.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " for unknown prompt_id '", prompt_id, "'"));
    }
    TaskState& task = tasks[it->second];
    if (rubric_index < 0 || rubric_index >= static_cast<int>(task.verdicts.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " rubric_index ", rubric_index, " out of range for prompt_id '",
                       prompt_id, "' (", task.verdicts.size(), " rubric items)"));
    }
    return &task;
  };

  Usage usage;
  for (const VerdictRow& row : verdicts) {
    HB_ASSIGN_OR_RETURN(TaskState * task, locate("verdict", row.prompt_id, row.rubric_index));
    if (task->response == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("verdict for prompt_id '", row.prompt_id, "', which has no response"));
    }
    if (task->verdicts[row.rubric_index] != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate verdict (prompt_id '",
                                                     row.prompt_id, "', rubric_index ",
                                                     row.rubric_index, ")"));
    }
    task->verdicts[row.rubric_index] = &row;
    usage.attempts += row.attempts;
    usage.prompt_tokens += row.prompt_tokens;
    usage.cached_tokens += row.cached_tokens;
    usage.completion_tokens += row.completion_tokens;
  }
  for (const RowFailure& failure : failures) {
    HB_ASSIGN_OR_RETURN(TaskState * task,
                        locate("failure", failure.prompt_id, failure.rubric_index));
    // The first failure of a row is kept; later ones (retries across runs) add nothing.
    if (task->failures[failure.rubric_index] == nullptr) {
      task->failures[failure.rubric_index] = &failure;
    }
  }

  CheckpointResult result;
  result.checkpoint = context.checkpoint;
  result.tasks = static_cast<int64_t>(tasks.size());
  result.prompt_ids.reserve(tasks.size());
  result.task_scores.reserve(tasks.size());

  // The files are streamed to disk as the tasks are scored (a checkpoint's tasks.jsonl and
  // report.html hold every conversation and reply: far too much to build in memory for a
  // large run). Each file still appears atomically: AtomicFileWriter writes a temporary file
  // and renames it on Commit, in the same order as before (verdicts, failures, tasks, summary,
  // report).
  HB_RETURN_IF_ERROR(MakeDirs(dir));
  HB_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> verdicts_out,
                      AtomicFileWriter::Open(dir + "/verdicts.jsonl"));
  HB_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> failures_out,
                      AtomicFileWriter::Open(dir + "/failures.jsonl"));
  HB_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> tasks_out,
                      AtomicFileWriter::Open(dir + "/tasks.jsonl"));
  bool missing_rows = false;
  std::vector<OrderedMetrics> graded_metrics;
  for (TaskState& task : tasks) {
    ScoreOne(task);
    result.prompt_ids.push_back(task.example->prompt_id);
    result.task_scores.push_back(task.score);
    if (task.score.has_value()) {
      ++result.graded;
    } else {
      ++result.not_graded;
    }
    if (task.response != nullptr) {
      result.rows += static_cast<int64_t>(task.verdicts.size());
      for (size_t i = 0; i < task.verdicts.size(); ++i) {
        if (task.verdicts[i] != nullptr) {
          ++result.graded_rows;
          verdicts_out->Append(FormatVerdictLine(*task.verdicts[i]));
          verdicts_out->Append("\n");
        } else if (task.failures[i] != nullptr) {
          ++result.failed_rows;
          failures_out->Append(FormatFailureLine(*task.failures[i]));
          failures_out->Append("\n");
        } else {
          missing_rows = true;
        }
      }
    } else {
      // Failures recorded for a task without response are reported but graded nothing.
      for (const RowFailure* failure : task.failures) {
        if (failure != nullptr) {
          failures_out->Append(FormatFailureLine(*failure));
          failures_out->Append("\n");
        }
      }
    }
    tasks_out->Append(TaskLine(task));
    tasks_out->Append("\n");
    // tasks.jsonl was the last reader of the task's metrics.
    if (task.score.has_value()) graded_metrics.push_back(std::move(task.metrics));
  }
  if (result.graded > 0) {
    AggregateOptions options;
    options.bootstrap_samples = kBootstrapSamples;
    options.seed = context.seed;
    result.aggregate = Aggregate(graded_metrics, options);
    result.score = result.aggregate.score;
    for (const MetricSummary& metric : result.aggregate.metrics) {
      if (metric.name == "score") result.score_bootstrap_std = metric.bootstrap_std;
    }
  } else {
    result.score = std::numeric_limits<double>::quiet_NaN();
  }
  std::vector<OrderedMetrics>().swap(graded_metrics);
  const bool incomplete = context.incomplete || missing_rows;
  const std::string generated_at = GeneratedAt(context);

  HB_RETURN_IF_ERROR(verdicts_out->Commit());
  HB_RETURN_IF_ERROR(failures_out->Commit());
  HB_RETURN_IF_ERROR(tasks_out->Commit());
  HB_RETURN_IF_ERROR(WriteFileAtomically(
      dir + "/summary.json", SummaryJson(context, result, usage, incomplete, generated_at)));
  HB_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> html_out,
                      AtomicFileWriter::Open(dir + "/report.html"));
  html_out->Append(HtmlReportHead(BuildHtmlHead(context, result, tasks, incomplete, generated_at)));
  std::string section;
  for (size_t i = 0; i < tasks.size(); ++i) {
    section.clear();
    AppendHtmlReportTask(section, BuildHtmlTask(tasks[i]), i);
    html_out->Append(section);
  }
  html_out->Append(HtmlReportTail());
  HB_RETURN_IF_ERROR(html_out->Commit());
  return result;
}

absl::Status WriteComparison(const std::vector<CheckpointResult>& results, uint32_t seed,
                             const std::string& out_dir) {
  if (results.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("a comparison needs at least two checkpoints, got ", results.size()));
  }
  const CheckpointResult& baseline = results[0];
  for (size_t i = 1; i < results.size(); ++i) {
    if (results[i].prompt_ids != baseline.prompt_ids ||
        results[i].task_scores.size() != baseline.task_scores.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint '", results[i].checkpoint,
          "' was graded on a different task list than the baseline '", baseline.checkpoint, "'"));
    }
  }
  AggregateOptions options;
  options.bootstrap_samples = kBootstrapSamples;
  options.seed = seed;

  std::vector<HtmlComparisonCheckpoint> html_checkpoints;
  std::vector<HtmlComparisonPair> html_pairs;
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  writer.StartObject();
  writer.Key("baseline");
  String(writer, baseline.checkpoint);
  writer.Key("seed");
  writer.Uint(seed);
  writer.Key("bootstrap_samples");
  writer.Int(kBootstrapSamples);
  writer.Key("checkpoints");
  writer.StartArray();
  for (const CheckpointResult& result : results) {
    writer.StartObject();
    writer.Key("checkpoint");
    String(writer, result.checkpoint);
    writer.Key("score");
    Float(writer, result.score);
    writer.Key("bootstrap_std");
    Float(writer, result.score_bootstrap_std);
    writer.Key("graded");
    writer.Int64(result.graded);
    writer.Key("tasks");
    writer.Int64(result.tasks);
    writer.EndObject();
    HtmlComparisonCheckpoint view;
    view.checkpoint = result.checkpoint;
    if (result.graded > 0) view.score = result.score;
    view.bootstrap_std = result.score_bootstrap_std;
    view.graded = result.graded;
    view.tasks = result.tasks;
    html_checkpoints.push_back(std::move(view));
  }
  writer.EndArray();
  writer.Key("differences");
  writer.StartArray();
  for (size_t c = 1; c < results.size(); ++c) {
    std::vector<double> a, b;
    for (size_t t = 0; t < baseline.task_scores.size(); ++t) {
      if (baseline.task_scores[t].has_value() && results[c].task_scores[t].has_value()) {
        a.push_back(*baseline.task_scores[t]);
        b.push_back(*results[c].task_scores[t]);
      }
    }
    HtmlComparisonPair pair;
    pair.baseline = baseline.checkpoint;
    pair.checkpoint = results[c].checkpoint;
    writer.StartObject();
    writer.Key("baseline");
    String(writer, baseline.checkpoint);
    writer.Key("checkpoint");
    String(writer, results[c].checkpoint);
    if (!a.empty()) {
      PairedDifference difference = PairedBootstrap(a, b, options);
      pair.difference = difference;
      writer.Key("difference");
      Float(writer, difference.difference);
      writer.Key("ci_low");
      Float(writer, difference.ci_low);
      writer.Key("ci_high");
      Float(writer, difference.ci_high);
    } else {
      for (const char* key : {"difference", "ci_low", "ci_high"}) {
        writer.Key(key);
        writer.Null();
      }
    }
    writer.Key("n");
    writer.Int64(static_cast<int64_t>(a.size()));
    writer.EndObject();
    html_pairs.push_back(std::move(pair));
  }
  writer.EndArray();
  writer.EndObject();

  HB_RETURN_IF_ERROR(MakeDirs(out_dir));
  HB_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/comparison.json",
                                         std::string(buffer.GetString(), buffer.GetSize()) + "\n"));
  HB_RETURN_IF_ERROR(WriteFileAtomically(
      out_dir + "/comparison.html",
      RenderComparisonHtml(html_checkpoints, html_pairs, seed, kBootstrapSamples)));
  return absl::OkStatus();
}

}  // namespace hb
