// `hb-orchestrator compare`: checkpoints graded in separate runs or Jobs, in one comparison.
#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/offline_commands.h"
#include "orchestrator/commands/summary_file.h"
#include "orchestrator/report/checkpoint_report.h"

namespace hb {
namespace {

using commands_internal::CheckpointSummary;

std::string AbsolutePath(const std::string& path) {
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(path, error);
  if (error) return path;
  std::string text = absolute.lexically_normal().generic_string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

// The checkpoint folders `dir` stands for: itself when it holds summary.json, else its
// checkpoint sub-folders in checkpoint-index order (as `run` wrote them).
absl::StatusOr<std::vector<CheckpointSummary>> ExpandFolder(const std::string& dir) {
  const std::string absolute = AbsolutePath(dir);
  std::error_code error;
  if (std::filesystem::exists(absolute + "/summary.json", error)) {
    HB_ASSIGN_OR_RETURN(CheckpointSummary summary,
                        commands_internal::ReadCheckpointSummary(absolute));
    return std::vector<CheckpointSummary>{std::move(summary)};
  }
  absl::StatusOr<std::vector<std::string>> names =
      commands_internal::ListCheckpointFolders(absolute, "folder");
  if (!names.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", dir, "' is neither a checkpoint folder (no summary.json) nor a run folder (",
        names.status().message(), ")"));
  }
  std::vector<CheckpointSummary> summaries;
  for (const std::string& name : *names) {
    HB_ASSIGN_OR_RETURN(CheckpointSummary summary,
                        commands_internal::ReadCheckpointSummary(absolute + "/" + name));
    summaries.push_back(std::move(summary));
  }
  std::stable_sort(summaries.begin(), summaries.end(),
                   [](const CheckpointSummary& a, const CheckpointSummary& b) {
                     return a.checkpoint_index < b.checkpoint_index;
                   });
  return summaries;
}

// A checkpoint as WriteComparison takes it, from its summary.json and tasks.jsonl.
absl::StatusOr<CheckpointResult> LoadResult(const CheckpointSummary& summary) {
  HB_ASSIGN_OR_RETURN(commands_internal::TaskScores scores,
                      commands_internal::ReadTaskScores(summary.dir));
  CheckpointResult result;
  result.checkpoint = summary.checkpoint;
  result.dir = summary.dir;
  result.score = summary.score;
  result.tasks = summary.tasks;
  result.graded = summary.graded;
  result.not_graded = summary.not_graded;
  result.simulated = summary.simulated;
  result.incomplete = summary.incomplete;
  result.aggregate.score = summary.score;
  result.aggregate.metrics = summary.metrics;
  for (const MetricSummary& metric : summary.metrics) {
    if (metric.name == "score") result.score_bootstrap_std = metric.bootstrap_std;
  }
  result.prompt_ids = std::move(scores.prompt_ids);
  result.task_scores = std::move(scores.scores);
  return result;
}

// ", length-adjusted 0.1234" when the checkpoint has overall_score_length_adjusted, else "".
std::string LengthAdjustedText(const CheckpointResult& result) {
  const MetricSummary* adjusted = FindMetric(result.aggregate.metrics, kLengthAdjustedScoreKey);
  if (adjusted == nullptr || result.graded == 0) return "";
  return absl::StrFormat(", length-adjusted %.4f", adjusted->mean);
}

// Errors for names used twice and gradings that cannot be compared with the baseline's.
absl::Status CheckCheckpoints(const std::vector<CheckpointSummary>& summaries, size_t baseline) {
  for (size_t i = 0; i < summaries.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (summaries[i].checkpoint == summaries[j].checkpoint) {
        return absl::InvalidArgumentError(
            absl::StrCat("checkpoint name '", summaries[i].checkpoint,
                         "' used twice: ", summaries[j].dir, " and ", summaries[i].dir,
                         " (rename one folder's checkpoint, or compare them "
                         "in separate calls)"));
      }
    }
  }
  const CheckpointSummary& base = summaries[baseline];
  for (const CheckpointSummary& summary : summaries) {
    const std::string disagreement = commands_internal::GradingDisagreement(base, summary);
    if (!disagreement.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint '", summary.checkpoint, "' (", summary.dir,
          ") was graded differently from the baseline '", base.checkpoint, "': ", disagreement,
          "; only checkpoints graded on the same dataset with the same template and grader "
          "settings can be compared"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> BaselineIndex(const std::vector<CheckpointSummary>& summaries,
                                     const std::string& baseline) {
  if (baseline.empty()) return 0;
  std::vector<std::string> names;
  for (size_t i = 0; i < summaries.size(); ++i) {
    if (summaries[i].checkpoint == baseline) return i;
    names.push_back(summaries[i].checkpoint);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--baseline '", baseline, "' is none of the checkpoints: ", absl::StrJoin(names, ", ")));
}

}  // namespace

absl::StatusOr<std::string> RunCompare(const CompareOptions& options) {
  HB_RETURN_IF_ERROR(commands_internal::Require("out", options.out));
  std::vector<CheckpointSummary> summaries;
  for (const std::string& dir : options.dirs) {
    HB_ASSIGN_OR_RETURN(std::vector<CheckpointSummary> found, ExpandFolder(dir));
    for (CheckpointSummary& summary : found) summaries.push_back(std::move(summary));
  }
  if (summaries.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compare needs at least two checkpoints; the folders given hold ", summaries.size()));
  }
  HB_ASSIGN_OR_RETURN(const size_t baseline, BaselineIndex(summaries, options.baseline));
  HB_RETURN_IF_ERROR(CheckCheckpoints(summaries, baseline));
  std::vector<CheckpointResult> results;
  std::string message;
  for (const CheckpointSummary& summary : summaries) {
    HB_ASSIGN_OR_RETURN(CheckpointResult result, LoadResult(summary));
    absl::StrAppend(&message, "compare: ", result.checkpoint, ": score ",
                    result.graded > 0 ? absl::StrFormat("%.4f", result.score) : "n/a",
                    LengthAdjustedText(result), ", ", result.graded, " of ", result.tasks,
                    " tasks graded", result.simulated ? " SIMULATED" : "",
                    result.incomplete ? " INCOMPLETE" : "", " (", result.dir, ")\n");
    results.push_back(std::move(result));
  }
  HB_RETURN_IF_ERROR(WriteComparison(results, summaries[baseline].seed, options.out, baseline));
  absl::StrAppend(&message, "compare: baseline ", summaries[baseline].checkpoint, "; wrote ",
                  options.out, "/comparison.json and comparison.html");
  return message;
}

}  // namespace hb
