#include "orchestrator/report/checkpoint_report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/file.h"
#include "common/base/json.h"
#include "common/base/json_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/healthbench/prompts.h"
#include "orchestrator/report/html_report.h"
#include "orchestrator/report/report_summary.h"
#include "orchestrator/report/report_tasks.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

#ifndef HB_TOOL_VERSION
#define HB_TOOL_VERSION "unknown"
#endif

namespace hb {
namespace {

using report_internal::BuildHtmlHead;
using report_internal::BuildHtmlTask;
using report_internal::kBootstrapSamples;
using report_internal::ScoreOne;
using report_internal::SummaryJson;
using report_internal::TaskLine;
using report_internal::TaskState;

std::string GeneratedAt(const ReportContext& context) {
  if (!context.generated_at.empty()) return context.generated_at;
  const char* fixed = std::getenv("HB_FIXED_TIME");
  if (fixed != nullptr && *fixed != '\0') return fixed;
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

// Writes `tasks`' sections into report-tasks-<page>.html files (each through a temporary file
// renamed into place) and removes pages a larger earlier report left behind.
absl::Status WriteTaskPages(const HtmlReport& head, const std::vector<TaskState>& tasks,
                            const std::string& dir) {
  const size_t pages = TaskPageCount(tasks.size());
  std::string section;
  for (size_t page = 0; page < pages; ++page) {
    HB_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> out,
                        AtomicFileWriter::Open(dir + "/" + TaskPageFileName(page)));
    out->Append(HtmlTaskPageHead(head, page));
    const size_t end = std::min(tasks.size(), (page + 1) * kTasksPerPage);
    for (size_t i = page * kTasksPerPage; i < end; ++i) {
      section.clear();
      AppendHtmlReportTask(section, BuildHtmlTask(tasks[i]), i);
      out->Append(section);
    }
    out->Append(HtmlTaskPageTail(head, page));
    HB_RETURN_IF_ERROR(out->Commit());
  }
  std::error_code error;
  for (size_t page = pages; std::filesystem::remove(dir + "/" + TaskPageFileName(page), error);
       ++page) {
  }
  return absl::OkStatus();
}

// report.html: the head, then every task section, or (paginated) the task pages first.
absl::Status WriteHtml(const HtmlReport& head, const std::vector<TaskState>& tasks,
                       const std::string& dir) {
  HB_RETURN_IF_ERROR(WriteTaskPages(head, tasks, dir));
  HB_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> html_out,
                      AtomicFileWriter::Open(dir + "/report.html"));
  html_out->Append(HtmlReportHead(head));
  if (TaskPageCount(tasks.size()) == 0) {
    std::string section;
    for (size_t i = 0; i < tasks.size(); ++i) {
      section.clear();
      AppendHtmlReportTask(section, BuildHtmlTask(tasks[i]), i);
      html_out->Append(section);
    }
  }
  html_out->Append(HtmlReportTail());
  return html_out->Commit();
}

// Where each task's state is in the report's task list, by prompt_id.
using TaskPositions = absl::flat_hash_map<std::string, size_t>;

// One state per task of `dataset`, in its order, with its response (if any) and a slot per
// rubric row.
std::vector<TaskState> NewTaskStates(const Dataset& dataset, const ResponseSet& responses,
                                     TaskPositions& position) {
  std::vector<TaskState> tasks(dataset.examples.size());
  for (size_t i = 0; i < dataset.examples.size(); ++i) {
    const Example& example = dataset.examples[i];
    tasks[i].example = &example;
    tasks[i].response = responses.Find(example.prompt_id);
    tasks[i].verdicts.assign(example.rubrics.size(), nullptr);
    tasks[i].failures.assign(example.rubrics.size(), nullptr);
    position.emplace(example.prompt_id, i);
  }
  return tasks;
}

// The task a row (`what`: "verdict" or "failure") belongs to; kInvalidArgument for an unknown
// prompt_id or a rubric_index out of range.
absl::StatusOr<TaskState*> LocateRow(std::vector<TaskState>& tasks, const TaskPositions& position,
                                     const std::string& what, const std::string& prompt_id,
                                     int rubric_index) {
  auto it = position.find(prompt_id);
  if (it == position.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " for unknown prompt_id '", prompt_id, "'"));
  }
  TaskState& task = tasks[it->second];
  if (rubric_index < 0 || rubric_index >= static_cast<int>(task.verdicts.size())) {
    return absl::InvalidArgumentError(absl::StrCat(what, " rubric_index ", rubric_index,
                                                   " out of range for prompt_id '", prompt_id,
                                                   "' (", task.verdicts.size(), " rubric items)"));
  }
  return &task;
}

// Puts each verdict and failure in its task's row slot (the rows must outlive `tasks`); adds the
// verdicts' usage to `usage`. kInvalidArgument for a verdict without a response or twice.
absl::Status AttachRows(const std::vector<VerdictRow>& verdicts,
                        const std::vector<RowFailure>& failures, const TaskPositions& position,
                        std::vector<TaskState>& tasks, ReportUsage& usage) {
  for (const VerdictRow& row : verdicts) {
    HB_ASSIGN_OR_RETURN(TaskState * task,
                        LocateRow(tasks, position, "verdict", row.prompt_id, row.rubric_index));
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
    usage.Add(row);
  }
  for (const RowFailure& failure : failures) {
    HB_ASSIGN_OR_RETURN(TaskState * task, LocateRow(tasks, position, "failure", failure.prompt_id,
                                                    failure.rubric_index));
    // The first failure of a row is kept; later ones (retries across runs) add nothing.
    if (task->failures[failure.rubric_index] == nullptr) {
      task->failures[failure.rubric_index] = &failure;
    }
  }
  return absl::OkStatus();
}

// The line-per-row files of a checkpoint folder, streamed to disk as the tasks are scored (a
// checkpoint's tasks.jsonl and report.html hold every conversation and reply: far too much to
// build in memory for a large run). Each file still appears atomically: AtomicFileWriter writes
// a temporary file and renames it on Commit, in the same order as before (verdicts, failures,
// tasks, then summary and report).
struct RowFiles {
  std::unique_ptr<AtomicFileWriter> verdicts;
  std::unique_ptr<AtomicFileWriter> failures;
  std::unique_ptr<AtomicFileWriter> tasks;

  absl::Status Commit() {
    HB_RETURN_IF_ERROR(verdicts->Commit());
    HB_RETURN_IF_ERROR(failures->Commit());
    return tasks->Commit();
  }
};

// Creates `dir` and opens its row files; verdicts.jsonl starts with its header.
absl::StatusOr<RowFiles> OpenRowFiles(const std::string& dir, const ReportContext& context) {
  HB_RETURN_IF_ERROR(MakeDirs(dir));
  RowFiles files;
  HB_ASSIGN_OR_RETURN(files.verdicts, AtomicFileWriter::Open(dir + "/verdicts.jsonl"));
  HB_ASSIGN_OR_RETURN(files.failures, AtomicFileWriter::Open(dir + "/failures.jsonl"));
  HB_ASSIGN_OR_RETURN(files.tasks, AtomicFileWriter::Open(dir + "/tasks.jsonl"));
  files.verdicts->Append(FormatVerdictsHeader({context.checkpoint, context.responses_sha256,
                                               context.dataset_sha256, context.template_sha256}));
  files.verdicts->Append("\n");
  return files;
}

// Scores every task, then starts the bootstrap over the graded tasks' metrics (kept in
// `graded_metrics`, which must outlive the future) on a thread of its own: it is a third of a
// report's CPU, and runs while the lines are written. No future when nothing is graded.
std::future<AggregateResult> ScoreTasks(std::vector<TaskState>& tasks, const ReportContext& context,
                                        std::vector<OrderedMetrics>& graded_metrics) {
  for (TaskState& task : tasks) {
    ScoreOne(task, context.length_adjustment);
    if (task.score.has_value()) graded_metrics.push_back(task.metrics);
  }
  if (graded_metrics.empty()) return {};
  AggregateOptions options;
  options.bootstrap_samples = kBootstrapSamples;
  options.seed = context.seed;
  return std::async(std::launch::async,
                    [&graded_metrics, options] { return Aggregate(graded_metrics, options); });
}

// The task's score in `result` (its scores, graded or not).
void CountTask(const TaskState& task, const ReportContext& context, CheckpointResult& result) {
  result.prompt_ids.push_back(task.example->prompt_id);
  result.task_scores.push_back(task.score);
  if (context.length_adjustment.has_value()) {
    std::optional<double> adjusted;
    for (const auto& [key, value] : task.metrics) {
      if (task.score.has_value() && key == kLengthAdjustedScoreKey) adjusted = value;
    }
    result.adjusted_task_scores.push_back(adjusted);
  }
  if (task.score.has_value()) {
    ++result.graded;
  } else {
    ++result.not_graded;
  }
}

// Appends the task's verdict and failure lines and its tasks.jsonl line, counting its rows in
// `result`; returns whether one of its rows has neither a verdict nor a failure.
bool WriteTaskRows(const TaskState& task, RowFiles& files, CheckpointResult& result) {
  bool missing_rows = false;
  if (task.response != nullptr) {
    result.rows += static_cast<int64_t>(task.verdicts.size());
    for (size_t i = 0; i < task.verdicts.size(); ++i) {
      if (task.verdicts[i] != nullptr) {
        ++result.graded_rows;
        files.verdicts->Append(FormatVerdictLine(*task.verdicts[i]));
        files.verdicts->Append("\n");
      } else if (task.failures[i] != nullptr) {
        ++result.failed_rows;
        files.failures->Append(FormatFailureLine(*task.failures[i]));
        files.failures->Append("\n");
      } else {
        missing_rows = true;
      }
    }
  } else {
    // Failures recorded for a task without response are reported but graded nothing.
    for (const RowFailure* failure : task.failures) {
      if (failure != nullptr) {
        files.failures->Append(FormatFailureLine(*failure));
        files.failures->Append("\n");
      }
    }
  }
  files.tasks->Append(TaskLine(task));
  files.tasks->Append("\n");
  return missing_rows;
}

// The checkpoint's score from the bootstrap (NaN when nothing was graded).
void SetAggregate(std::future<AggregateResult>& aggregate, CheckpointResult& result) {
  if (!aggregate.valid()) {
    result.score = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  result.aggregate = aggregate.get();
  result.score = result.aggregate.score;
  for (const MetricSummary& metric : result.aggregate.metrics) {
    if (metric.name == "score") result.score_bootstrap_std = metric.bootstrap_std;
  }
}

}  // namespace

const char* ToolVersion() { return HB_TOOL_VERSION; }

HeadlineScore HeadlineOf(const CheckpointResult& result) {
  HeadlineScore headline;
  headline.graded = result.graded > 0;
  headline.score = headline.raw = result.score;
  headline.bootstrap_std = headline.raw_bootstrap_std = result.score_bootstrap_std;
  const MetricSummary* adjusted = FindMetric(result.aggregate.metrics, kLengthAdjustedScoreKey);
  if (adjusted != nullptr && headline.graded) {
    headline.length_adjusted = true;
    headline.score = adjusted->mean;
    headline.bootstrap_std = adjusted->bootstrap_std;
  }
  return headline;
}

std::string HeadlineScore::Text() const {
  if (!graded) return "n/a";
  if (!length_adjusted) return absl::StrFormat("%.4f (bootstrap std %.4f)", score, bootstrap_std);
  return absl::StrFormat("%.4f length-adjusted (bootstrap std %.4f; raw %.4f, bootstrap std %.4f)",
                         score, bootstrap_std, raw, raw_bootstrap_std);
}

absl::StatusOr<CheckpointResult> WriteCheckpointReport(
    const Dataset& dataset, const ResponseSet& responses, const std::vector<VerdictRow>& verdicts,
    const std::vector<RowFailure>& failures, const ReportContext& context, const std::string& dir) {
  TaskPositions position;
  std::vector<TaskState> tasks = NewTaskStates(dataset, responses, position);
  ReportUsage usage;
  HB_RETURN_IF_ERROR(AttachRows(verdicts, failures, position, tasks, usage));
  CheckpointResult result;
  result.checkpoint = context.checkpoint;
  result.tasks = static_cast<int64_t>(tasks.size());
  result.prompt_ids.reserve(tasks.size());
  result.task_scores.reserve(tasks.size());
  HB_ASSIGN_OR_RETURN(RowFiles files, OpenRowFiles(dir, context));
  bool missing_rows = false;
  std::vector<OrderedMetrics> graded_metrics;
  std::future<AggregateResult> aggregate = ScoreTasks(tasks, context, graded_metrics);
  for (const TaskState& task : tasks) {
    CountTask(task, context, result);
    missing_rows = WriteTaskRows(task, files, result) || missing_rows;
  }
  SetAggregate(aggregate, result);
  std::vector<OrderedMetrics>().swap(graded_metrics);
  const bool incomplete = context.incomplete || missing_rows;
  result.simulated = context.simulated;
  result.incomplete = incomplete;
  const std::string generated_at = GeneratedAt(context);
  result.usage = usage;
  HB_RETURN_IF_ERROR(files.Commit());
  HB_RETURN_IF_ERROR(WriteFileAtomically(dir + "/summary.json",
                                         SummaryJson(context, result, incomplete, generated_at)));
  HB_RETURN_IF_ERROR(
      WriteHtml(BuildHtmlHead(context, result, tasks, incomplete, generated_at), tasks, dir));
  return result;
}

void ReportUsage::Add(const VerdictRow& row) {
  attempts += row.attempts;
  const TokenCounts tokens{row.prompt_tokens, row.cached_tokens, row.completion_tokens};
  if (row.from_cache) {
    ++from_cache_rows;
    saved += tokens;
    return;
  }
  prompt_tokens += row.prompt_tokens;
  cached_tokens += row.cached_tokens;
  completion_tokens += row.completion_tokens;
  if (row.batch) {
    ++batch_rows;
    batch += tokens;
  }
}

ReportUsage& ReportUsage::operator+=(const ReportUsage& other) {
  attempts += other.attempts;
  prompt_tokens += other.prompt_tokens;
  cached_tokens += other.cached_tokens;
  completion_tokens += other.completion_tokens;
  from_cache_rows += other.from_cache_rows;
  saved += other.saved;
  batch_rows += other.batch_rows;
  batch += other.batch;
  return *this;
}

double ReportUsage::CostUsd(const TokenPrices& prices, double batch_price_factor) const {
  return SpentCostUsd(spent(), batch, prices, batch_price_factor);
}

}  // namespace hb
