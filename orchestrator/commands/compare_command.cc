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
#include "common/base/file.h"
#include "common/base/status_macros.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/offline_commands.h"
#include "orchestrator/commands/summary_file.h"
#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/report/meta_eval_report.h"

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
  if (summary.length_adjustment.has_value())
    result.adjusted_task_scores = std::move(scores.adjusted);
  return result;
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

bool IsMetaEvalFolder(const std::string& dir) {
  std::error_code error;
  return std::filesystem::exists(dir + "/meta_eval.json", error);
}

// Whether two judges graded the same rows: the same count and the same physicians' agreement
// (which depends on the rows only).
bool SameRows(const JudgeReport& a, const JudgeReport& b) {
  if (a.view.rows != b.view.rows) return false;
  const auto& p = a.view.physicians;
  const auto& q = b.view.physicians;
  if (p.has_value() != q.has_value()) return false;
  return !p.has_value() || (p->mean == q->mean && p->min == q->min && p->max == q->max &&
                            p->physicians == q->physicians);
}

// A `meta-eval` output folder as a judge: its meta_eval.json and its graded rows' summary.json.
absl::StatusOr<JudgeReport> LoadJudge(const std::string& dir) {
  JudgeReport judge;
  judge.dir = AbsolutePath(dir);
  judge.name = std::filesystem::path(judge.dir).filename().string();
  HB_ASSIGN_OR_RETURN(judge.view, ReadMetaEvalView(judge.dir + "/meta_eval.json"));
  HB_RETURN_IF_ERROR(ReadJudgeSummary(
      absl::StrCat(judge.dir, "/", kMetaEvalCheckpointFolder, "/summary.json"), judge));
  return judge;
}

// Judges side by side (every folder a meta-eval folder): DIR/judges.html and the text.
absl::StatusOr<std::string> CompareJudges(const CompareOptions& options) {
  std::vector<JudgeReport> judges;
  for (const std::string& dir : options.dirs) {
    if (!IsMetaEvalFolder(dir)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", dir, "' is not a meta-eval folder (no meta_eval.json) but ", options.dirs.front(),
          " is: compare meta-eval folders with meta-eval folders only"));
    }
    HB_ASSIGN_OR_RETURN(JudgeReport judge, LoadJudge(dir));
    for (const JudgeReport& other : judges) {
      if (other.name == judge.name) {
        return absl::InvalidArgumentError(absl::StrCat("judge name '", judge.name,
                                                       "' used twice: ", other.dir, " and ",
                                                       judge.dir, " (rename one folder)"));
      }
      if (other.dataset_sha256 != judge.dataset_sha256) {
        return absl::InvalidArgumentError(absl::StrCat(
            "judge '", judge.name, "' graded another meta-eval file (sha256 ", judge.dataset_sha256,
            ", ", judge.dataset_path, ") than '", other.name, "' (sha256 ", other.dataset_sha256,
            ", ", other.dataset_path, "): only judges of the same rows can be compared"));
      }
    }
    if (!judges.empty() && !SameRows(judges.front(), judge)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "judge '", judge.name, "' graded another selection of rows (", judge.view.rows,
          " rows) than '", judges.front().name, "' (", judges.front().view.rows,
          " rows): run both with the same --examples (the physicians' range depends on the "
          "rows)"));
    }
    judges.push_back(std::move(judge));
  }
  if (judges.size() < 2) {
    return absl::InvalidArgumentError("compare needs at least two meta-eval folders");
  }
  HB_RETURN_IF_ERROR(MakeDirs(options.out));
  HB_RETURN_IF_ERROR(
      WriteFileAtomically(options.out + "/judges.html", RenderJudgeComparisonHtml(judges)));
  return absl::StrCat(JudgeComparisonText(judges), "\ncompare: wrote ", options.out,
                      "/judges.html");
}

}  // namespace

absl::StatusOr<std::string> RunCompare(const CompareOptions& options) {
  HB_RETURN_IF_ERROR(commands_internal::Require("out", options.out));
  if (!options.dirs.empty() && IsMetaEvalFolder(options.dirs.front())) {
    return CompareJudges(options);
  }
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
    absl::StrAppend(&message, "compare: ", result.checkpoint, ": score ", HeadlineOf(result).Text(),
                    ", ", result.graded, " of ", result.tasks, " tasks graded",
                    result.simulated ? " SIMULATED" : "", result.incomplete ? " INCOMPLETE" : "",
                    " (", result.dir, ")\n");
    results.push_back(std::move(result));
  }
  HB_RETURN_IF_ERROR(WriteComparison(results, summaries[baseline].seed, options.out, baseline));
  absl::StrAppend(&message, "compare: baseline ", summaries[baseline].checkpoint, "; wrote ",
                  options.out, "/comparison.json and comparison.html");
  return message;
}

}  // namespace hb
