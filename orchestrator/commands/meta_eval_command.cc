#include "orchestrator/commands/meta_eval_command.h"

#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/exit_codes.h"
#include "common/base/status_macros.h"
#include "common/grading/meta_eval.h"
#include "common/healthbench/prompts.h"
#include "orchestrator/report/meta_eval_report.h"
#include "orchestrator/report/verdict_file.h"

namespace hb {
namespace {

constexpr char kPrefix[] = "hb-orchestrator meta-eval";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", kPrefix, std::string(status.message()).c_str());
  return ExitCodeFor(status);
}

// The verdict of every row of `data` from what `run` wrote to `checkpoint_dir` (nullopt: the
// row failed or was never graded).
absl::StatusOr<std::vector<std::optional<bool>>> RowVerdicts(const MetaEvalDataset& data,
                                                             const std::string& checkpoint_dir) {
  const PreparedRunInputs inputs = MetaEvalRunInputs(data);
  HB_ASSIGN_OR_RETURN(const std::vector<VerdictRow> rows,
                      LoadVerdicts(checkpoint_dir + "/verdicts.jsonl", inputs.dataset));
  absl::flat_hash_map<std::string, bool> by_task;
  for (const VerdictRow& row : rows) by_task[row.prompt_id] = row.criteria_met;
  std::vector<std::optional<bool>> verdicts;
  verdicts.reserve(data.rows.size());
  for (const MetaEvalRow& row : data.rows) {
    const auto it = by_task.find(MetaEvalTaskId(row));
    verdicts.push_back(it == by_task.end() ? std::nullopt : std::optional<bool>(it->second));
  }
  return verdicts;
}

void PrintOutcome(const MetaEvalResult& result, const JudgeReport& judge, const std::string& out,
                  bool interrupted) {
  std::fprintf(
      stderr,
      "%s: score %s (pairwise_model_f1_balanced) over %lld of %lld row(s); physicians "
      "%s; %s -> %s/meta_eval.json, %s/meta_eval.html\n",
      kPrefix, result.score.has_value() ? absl::StrFormat("%.4f", *result.score).c_str() : "n/a",
      static_cast<long long>(result.graded), static_cast<long long>(result.rows),
      judge.view.physicians.has_value()
          ? absl::StrFormat("%.4f..%.4f (mean %.4f)", judge.view.physicians->min,
                            judge.view.physicians->max, judge.view.physicians->mean)
                .c_str()
          : "n/a",
      PlaceInPhysicianRange(result.score, judge.view.physicians).c_str(), out.c_str(), out.c_str());
  if (!result.failed_lines.empty() && interrupted) {
    std::fprintf(stderr,
                 "%s: interrupted: %zu row(s) without a verdict yet (not graded, or failed) are "
                 "left out of the metrics: line(s) %s; run the same command again to grade "
                 "them\n",
                 kPrefix, result.failed_lines.size(),
                 absl::StrJoin(result.failed_lines, ", ").c_str());
  } else if (!result.failed_lines.empty()) {
    std::fprintf(stderr,
                 "%s: %zu row(s) failed (no boolean criteria_met within the attempts); left out "
                 "of the metrics, never used as a label: line(s) %s\n",
                 kPrefix, result.failed_lines.size(),
                 absl::StrJoin(result.failed_lines, ", ").c_str());
  }
}

}  // namespace

std::string MetaEvalTaskId(const MetaEvalRow& row) { return absl::StrCat("line-", row.line); }

PreparedRunInputs MetaEvalRunInputs(const MetaEvalDataset& data) {
  PreparedRunInputs inputs;
  inputs.dataset.path = data.path;
  inputs.dataset.sha256 = data.sha256;
  inputs.responses.path = data.path;
  inputs.responses.sha256 = data.sha256;
  inputs.dataset.examples.reserve(data.rows.size());
  inputs.responses.responses.reserve(data.rows.size());
  for (const MetaEvalRow& row : data.rows) {
    Example example;
    example.prompt_id = MetaEvalTaskId(row);
    example.prompt = row.prompt;
    example.rubrics = {MetaEvalRubricItem(row)};
    example.example_tags = {row.category};
    example.line = row.line;
    Response response;
    response.prompt_id = example.prompt_id;
    response.response = row.completion;
    response.line = row.line;
    inputs.dataset.index[example.prompt_id] = inputs.dataset.examples.size();
    inputs.responses.index[example.prompt_id] = inputs.responses.responses.size();
    inputs.dataset.examples.push_back(std::move(example));
    inputs.responses.responses.push_back(std::move(response));
  }
  return inputs;
}

absl::Status ValidateMetaEvalOptions(const MetaEvalCommandOptions& options) {
  RunOptions run = options.run;
  run.checkpoints = {CheckpointSpec{kMetaEvalCheckpoint, run.dataset}};
  return ValidateRunOptions(run);
}

int RunMetaEval(const MetaEvalCommandOptions& options) {
  absl::StatusOr<MetaEvalDataset> data = LoadMetaEvalDataset(options.run.dataset);
  if (!data.ok()) return Fail(data.status());
  if (options.run.examples > 0)
    SelectMetaEvalRows(*data, static_cast<size_t>(options.run.examples));
  RunOptions run = options.run;
  run.examples = -1;  // selected above, the reference's way
  run.checkpoints = {CheckpointSpec{kMetaEvalCheckpoint, run.dataset}};
  const MetaEvalDataset& rows = *data;
  run.prepared_inputs = [&rows]() -> absl::StatusOr<PreparedRunInputs> {
    return MetaEvalRunInputs(rows);
  };
  const int code = RunWithOptions(run);
  if (code != kExitOk && code != kExitRowsFailed && code != kExitInterrupted) return code;

  const std::string checkpoint_dir = absl::StrCat(run.RunDir(), "/", kMetaEvalCheckpoint);
  absl::StatusOr<std::vector<std::optional<bool>>> verdicts = RowVerdicts(rows, checkpoint_dir);
  if (!verdicts.ok()) return Fail(verdicts.status());
  MetaEvalOptions metrics_options;
  metrics_options.seed = run.seed;
  absl::StatusOr<MetaEvalResult> result = ComputeMetaEval(rows.rows, *verdicts, metrics_options);
  if (!result.ok()) return Fail(result.status());
  JudgeReport judge;
  judge.name = kMetaEvalCheckpoint;
  judge.dir = run.RunDir();
  if (absl::Status read = ReadJudgeSummary(checkpoint_dir + "/summary.json", judge); !read.ok()) {
    return Fail(read);
  }
  if (absl::Status written = WriteMetaEvalReport(*result, judge, run.RunDir()); !written.ok()) {
    return Fail(absl::InternalError(written.message()));
  }
  judge.view = MetaEvalViewOf(*result);
  PrintOutcome(*result, judge, run.RunDir(), code == kExitInterrupted);
  return code;
}

}  // namespace hb
