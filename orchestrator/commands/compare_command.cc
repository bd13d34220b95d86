// `hb-orchestrator compare`: checkpoints graded in separate runs or Jobs, in one comparison.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
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

// A checkpoint as WriteComparisonOf takes it (no per-task scores), from its summary.json.
CheckpointResult SummaryResult(const CheckpointSummary& summary) {
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
  return result;
}

// A checkpoint as WriteComparison takes it, from its summary.json and tasks.jsonl.
absl::StatusOr<CheckpointResult> LoadResult(const CheckpointSummary& summary) {
  HB_ASSIGN_OR_RETURN(commands_internal::TaskScores scores,
                      commands_internal::ReadTaskScores(summary.dir));
  CheckpointResult result = SummaryResult(summary);
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

// A checkpoint folder's files as they are now: "dev:ino:size:mtime_ns" of summary.json and
// tasks.jsonl (stat follows watch's OUT/<name> symlink to the version it names).
absl::StatusOr<std::string> FolderStamp(const std::string& dir) {
  std::string stamp = dir;
  for (const char* file : {"/summary.json", "/tasks.jsonl"}) {
    struct stat st {};
    const std::string path = dir + file;
    if (::stat(path.c_str(), &st) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", std::strerror(errno), " (not a graded checkpoint folder)"));
    }
    absl::StrAppend(&stamp, "|", st.st_dev, ":", st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec,
                    ".", st.st_mtim.tv_nsec);
  }
  return stamp;
}

// The checkpoints `options` names, checked, with the baseline's index.
absl::StatusOr<std::vector<CheckpointSummary>> CompareSummaries(const CompareOptions& options,
                                                                size_t& baseline) {
  std::vector<CheckpointSummary> summaries;
  for (const std::string& dir : options.dirs) {
    HB_ASSIGN_OR_RETURN(std::vector<CheckpointSummary> found, ExpandFolder(dir));
    for (CheckpointSummary& summary : found) summaries.push_back(std::move(summary));
  }
  if (summaries.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compare needs at least two checkpoints; the folders given hold ", summaries.size()));
  }
  HB_ASSIGN_OR_RETURN(baseline, BaselineIndex(summaries, options.baseline));
  HB_RETURN_IF_ERROR(CheckCheckpoints(summaries, baseline));
  return summaries;
}

std::string CheckpointLine(const CheckpointResult& result) {
  return absl::StrCat("compare: ", result.checkpoint, ": score ", HeadlineOf(result).Text(), ", ",
                      result.graded, " of ", result.tasks, " tasks graded",
                      result.simulated ? " SIMULATED" : "", result.incomplete ? " INCOMPLETE" : "",
                      " (", result.dir, ")\n");
}

}  // namespace

// Keys are "<dir>|<stamp of its files>" (FolderStamp).
struct CompareSession::State {
  std::string baseline_key;
  CheckpointResult baseline;                                   // with its per-task scores
  absl::flat_hash_map<std::string, HtmlComparisonPair> pairs;  // by key, to `baseline`
  absl::flat_hash_set<std::string> common_over;                // the keys `common` is over
  absl::flat_hash_set<std::string> common;                     // prompt_ids graded by all

  // Brings the state to `keys` (summaries' order) with `baseline_index`; reads a folder's
  // tasks.jsonl only where its difference or its part of `common` is missing.
  absl::Status Update(const std::vector<CheckpointSummary>& summaries,
                      const std::vector<std::string>& keys, size_t baseline_index);
  // Forgets the differences of folders no longer in `now`.
  void Prune(const absl::flat_hash_set<std::string>& now);
};

absl::Status CompareSession::State::Update(const std::vector<CheckpointSummary>& summaries,
                                           const std::vector<std::string>& keys,
                                           size_t baseline_index) {
  if (keys[baseline_index] != baseline_key) {
    HB_ASSIGN_OR_RETURN(baseline, LoadResult(summaries[baseline_index]));
    baseline_key = keys[baseline_index];
    pairs.clear();
  }
  const absl::flat_hash_set<std::string> now(keys.begin(), keys.end());
  for (const std::string& key : common_over) {
    if (now.contains(key)) continue;
    common_over.clear();  // a checkpoint changed or left: start the intersection again
    common.clear();
    break;
  }
  const uint32_t seed = summaries[baseline_index].seed;
  for (size_t i = 0; i < summaries.size(); ++i) {
    const std::string& key = keys[i];
    const bool is_baseline = i == baseline_index;
    if ((is_baseline || pairs.contains(key)) && common_over.contains(key)) continue;
    CheckpointResult loaded;
    if (!is_baseline) {
      HB_ASSIGN_OR_RETURN(loaded, LoadResult(summaries[i]));
    }
    const CheckpointResult& full = is_baseline ? baseline : loaded;
    if (!is_baseline) pairs[key] = ComparisonPairOf(baseline, full, seed);
    absl::flat_hash_set<std::string> graded = GradedPromptIds(full);
    if (common_over.empty()) {
      common = std::move(graded);
    } else {
      absl::erase_if(common, [&graded](const std::string& id) { return !graded.contains(id); });
    }
    common_over.insert(key);
  }
  Prune(now);
  return absl::OkStatus();
}

void CompareSession::State::Prune(const absl::flat_hash_set<std::string>& now) {
  absl::erase_if(pairs, [&now](const auto& entry) { return !now.contains(entry.first); });
}

CompareSession::CompareSession() : state_(std::make_unique<State>()) {}
CompareSession::~CompareSession() = default;

absl::StatusOr<std::string> CompareSession::Run(const CompareOptions& options) {
  HB_RETURN_IF_ERROR(commands_internal::Require("out", options.out));
  if (!options.dirs.empty() && IsMetaEvalFolder(options.dirs.front())) {
    return CompareJudges(options);
  }
  size_t baseline = 0;
  HB_ASSIGN_OR_RETURN(const std::vector<CheckpointSummary> summaries,
                      CompareSummaries(options, baseline));
  std::vector<std::string> keys;
  for (const CheckpointSummary& summary : summaries) {
    HB_ASSIGN_OR_RETURN(std::string key, FolderStamp(summary.dir));
    keys.push_back(std::move(key));
  }
  HB_RETURN_IF_ERROR(state_->Update(summaries, keys, baseline));
  std::vector<CheckpointResult> results;
  ComparisonParts parts;
  parts.common_tasks = static_cast<int64_t>(state_->common.size());
  std::string message;
  for (size_t i = 0; i < keys.size(); ++i) {
    results.push_back(SummaryResult(summaries[i]));
    absl::StrAppend(&message, CheckpointLine(results.back()));
    if (i != baseline) parts.pairs.push_back(state_->pairs.at(keys[i]));
  }
  HB_RETURN_IF_ERROR(
      WriteComparisonOf(results, parts, summaries[baseline].seed, options.out, baseline));
  absl::StrAppend(&message, "compare: baseline ", summaries[baseline].checkpoint, "; wrote ",
                  options.out, "/comparison.json and comparison.html");
  return message;
}

absl::StatusOr<std::string> RunCompare(const CompareOptions& options) {
  return CompareSession().Run(options);
}

}  // namespace hb
