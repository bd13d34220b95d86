#include "orchestrator/commands/offline_flags.h"

#include <cstddef>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "orchestrator/commands/grading_flags.h"

namespace hb::commands_internal {
namespace {

constexpr char kTasksDescription[] =
    "Write the task list: one JSONL line {prompt_id, messages, prompt_text} per task.";

constexpr char kDryRunDescription[] =
    R"(write the grader requests a run would send, without sending any.

One JSONL line per rubric row of each task with a response: {prompt_id, rubric_index, request_sha256, request}, where request is the
exact chat-completions body (request_sha256 hashes its bytes). Prints the row count, the tasks
skipped for lack of a response, estimated tokens (UTF-8 bytes of the grader messages / 4) and
cost, with and without best-case prompt caching (prefixes of >= 1024 tokens shared with a
task's first row).)";

constexpr char kScoreDescription[] =
    R"(Score a checkpoint from verdicts.jsonl without grading and write DIR/tasks.jsonl,
summary.json, verdicts.jsonl, failures.jsonl and report.html. When the summary.json beside the
verdicts records their grading (a run's checkpoint folder), its grader, template sha256, length
adjustment and SIMULATED mark are kept, and grader flags that contradict it are refused; else
the grader flags and the template's sha256 are recorded (--grader-template="" records none).)";

constexpr char kMergeDescription[] =
    R"(Merge sharded runs: each SHARD_DIR holds <checkpoint>/summary.json and
<checkpoint>/verdicts.jsonl (+ failures.jsonl). The shards' provenance must agree; the dataset
and responses are reloaded from the recorded paths (or the overrides) and must keep their
recorded sha256. Writes DIR/<checkpoint>/ like an unsharded run, plus DIR/comparison.json and
comparison.html for several checkpoints. A shard folder missing (by the shard indices the
runs recorded) or without a checkpoint leaves that report INCOMPLETE and exits 3, unless
--allow-partial-shards (then it covers the given shards' tasks only).)";

constexpr char kCompareDescription[] =
    R"(Compare checkpoints graded in separate runs or Jobs: each DIR is a checkpoint folder
(<out>/<checkpoint>, holding summary.json and tasks.jsonl) or a run folder (its checkpoint
sub-folders). Writes DIR/comparison.json and comparison.html: each checkpoint's score and 95%
interval, per-theme and per-axis scores, SIMULATED / INCOMPLETE marks, the folders as absolute
paths, and paired-bootstrap differences to the baseline over the tasks both graded. The
checkpoints keep the order given; all must be graded on the same dataset with the same
template and grader settings.

Meta-eval folders (`meta-eval --out` folders, holding meta_eval.json) are compared as judges
instead: each judge's balanced F1 per category, where it falls in the physicians' range and its
cost per 1,000 judgements, in DIR/judges.html (and on stdout): is this judge good enough?

usage: hb-orchestrator compare --out DIR [--baseline NAME] RUN_DIR|CHECKPOINT_DIR ...
       hb-orchestrator compare --out DIR META_EVAL_DIR META_EVAL_DIR ...)";

constexpr char kDryRunPromptCacheKeyHelp[] =
    "none|prompt_id: the request bodies as `run --prompt-cache-key` sends them (prompt_id: what "
    "run's default auto sends to api.openai.com; none: no key, as the reference)";

absl::StatusOr<bool> PromptCacheKeyPerTask(const std::string& mode) {
  if (mode != "none" && mode != "prompt_id") {
    return absl::InvalidArgumentError(
        absl::StrCat("--prompt-cache-key: expected none or prompt_id, got '", mode, "'"));
  }
  return mode == "prompt_id";
}

// --dataset and --responses of the offline subcommands that take one checkpoint.
void AddInputs(cli::Command& c, std::string* dataset, std::string* responses) {
  c.Flag("dataset", dataset, "PATH", "HealthBench JSONL (plain or gzip)");
  c.Flag("responses", responses, "PATH", "responses JSONL {prompt_id, response, system_prompt?}");
}

// The grader flags that shape (dry-run) or are recorded with (score) the grader requests;
// the template defaults to hb-grader's (cli::ResolveGraderTemplatePath).
void AddGraderRequestFlags(cli::Command& c, std::string* grader_template, bool* require_reference,
                           GraderSettings* settings, GraderApiChoice* api,
                           std::vector<std::string>* headers) {
  cli::AddGraderTemplateFlags(c, grader_template, require_reference);
  cli::AddGraderSettingsFlags(c, settings, api, headers);
}

}  // namespace

void OfflineFlags::AddTo(cli::Program& program) {
  AddTasks(program);
  AddDryRun(program);
  AddScore(program);
  AddMerge(program);
  AddCompare(program);
}

absl::StatusOr<std::string> OfflineFlags::Run(const std::string& command) {
  if (command == "tasks") return RunTasks(tasks_);
  if (command == "dry-run") {
    HB_RETURN_IF_ERROR(ResolveDryRunFlags());
    return RunDryRun(dry_run_);
  }
  if (command == "compare") return RunCompare(compare_);
  if (command == "score") {
    HB_RETURN_IF_ERROR(ResolveScoreFlags());
    return RunScore(score_);
  }
  return absl::InternalError(absl::StrCat("no offline command '", command, "'"));
}

absl::StatusOr<MergeResult> OfflineFlags::RunMergeFromFlags() {
  for (const std::string& value : merge_responses_) {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--responses for merge takes NAME=PATH, got '", value, "'"));
    }
    if (!merge_.responses.emplace(value.substr(0, eq), value.substr(eq + 1)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--responses names checkpoint '", value.substr(0, eq), "' twice"));
    }
  }
  return RunMerge(merge_);
}

absl::Status OfflineFlags::ResolveDryRunFlags() {
  HB_ASSIGN_OR_RETURN(dry_run_.prompt_cache_key_per_task,
                      PromptCacheKeyPerTask(dry_run_cache_key_));
  if (dry_run_professional_) {
    HB_RETURN_IF_ERROR(
        cli::ApplyProfessionalGrader(*dry_run_command_, &dry_run_.grader, &dry_run_api_));
    HB_RETURN_IF_ERROR(cli::CheckProfessionalDataset(dry_run_.dataset));
  }
  if (dry_run_command_->Given("est-reasoning-tokens-per-row")) {
    dry_run_.est_reasoning_tokens_per_row = dry_run_reasoning_tokens_;
  }
  HB_RETURN_IF_ERROR(cli::ResolveGraderSettingsFlags(*dry_run_command_, dry_run_api_,
                                                     dry_run_headers_, &dry_run_.grader));
  cli::DefaultPricesForModel(*dry_run_command_, dry_run_.grader.model, &dry_run_.prices);
  dry_run_.grader_template =
      cli::ResolveGraderTemplatePath(*dry_run_command_, dry_run_.grader_template);
  return absl::OkStatus();
}

absl::Status OfflineFlags::ResolveScoreFlags() {
  score_.grader_template = cli::ResolveGraderTemplatePath(*score_command_, score_.grader_template);
  if (score_professional_) {
    HB_RETURN_IF_ERROR(cli::ApplyProfessionalGrader(*score_command_, &score_.grader, &score_api_));
    HB_RETURN_IF_ERROR(cli::CheckProfessionalDataset(score_.dataset));
  }
  HB_RETURN_IF_ERROR(
      cli::ResolveGraderSettingsFlags(*score_command_, score_api_, score_headers_, &score_.grader));
  HB_ASSIGN_OR_RETURN(
      score_.length_adjustment,
      score_professional_
          ? cli::ResolveProfessionalLengthAdjustment(*score_command_, score_length_adjustment_)
          : cli::ResolveLengthAdjustmentFlags(*score_command_, score_length_adjustment_));
  score_.grader_given = score_professional_;
  for (const char* flag : {"llm-model", "llm-temperature", "llm-max-tokens", "llm-api",
                           "llm-reasoning-effort", "llm-extra-body", "llm-header"}) {
    score_.grader_given = score_.grader_given || score_command_->Given(flag);
  }
  score_.length_adjustment_given = score_professional_ ||
                                   score_command_->Given("length-adjustment-center") ||
                                   score_command_->Given("length-adjustment-penalty-per-500-chars");
  score_.grader_template_given = score_command_->Given("grader-template");
  score_.grader_endpoint_given = score_command_->Given("grader-endpoint");
  HB_RETURN_IF_ERROR(ResolveSubset(score_subset_, score_command_->Given("subset"), score_.dataset,
                                   score_.subset, score_.ignore_extra_responses));
  return absl::OkStatus();
}

void OfflineFlags::AddTasks(cli::Program& program) {
  cli::Command& c = program.AddSubcommand("tasks", kTasksDescription);
  c.Flag("dataset", &tasks_.dataset, "PATH", "HealthBench JSONL (plain or gzip)");
  c.Flag("out", &tasks_.out, "PATH", "output file");
  c.Flag("examples", &tasks_.examples, "N", kExamplesHelp);
}

void OfflineFlags::AddDryRun(cli::Program& program) {
  cli::Command& c = program.AddSubcommand("dry-run", kDryRunDescription);
  dry_run_command_ = &c;
  DryRunOptions& o = dry_run_;
  AddInputs(c, &o.dataset, &o.responses);
  c.Flag("out", &o.out, "PATH", "output file");
  c.Flag("examples", &o.examples, "N", kExamplesHelp);
  c.Group("grader");
  AddGraderRequestFlags(c, &o.grader_template, &o.require_reference_template, &o.grader,
                        &dry_run_api_, &dry_run_headers_);
  cli::AddProfessionalFlag(c, &dry_run_professional_);
  c.Flag("prompt-cache-key", &dry_run_cache_key_, "MODE", kDryRunPromptCacheKeyHelp);
  c.Group("cost estimate");
  cli::AddPriceFlags(c, &o.prices);
  c.Flag("est-output-tokens-per-row", &o.est_output_tokens_per_row, "N",
         "estimated visible grader output tokens per row (the verdict JSON)");
  c.Flag("est-reasoning-tokens-per-row", &dry_run_reasoning_tokens_, "N",
         "estimated reasoning tokens per row, billed as output (a reasoning grader: "
         "measure them on a pilot run). Not given: none for a chat-completions grader; for a "
         "Responses grader they are left out and the costs printed are lower bounds");
  AddBatchPriceFactorFlag(c, &o.batch_price_factor);
}

void OfflineFlags::AddScore(cli::Program& program) {
  cli::Command& c = program.AddSubcommand("score", kScoreDescription);
  score_command_ = &c;
  ScoreOptions& o = score_;
  AddInputs(c, &o.dataset, &o.responses);
  AddSubsetFlags(c, &score_subset_);
  c.Flag("verdicts", &o.verdicts, "PATH",
         "verdicts.jsonl {prompt_id, rubric_index, criteria_met, explanation}");
  c.Flag("failures", &o.failures, "PATH",
         "optional failures.jsonl {prompt_id, rubric_index, reason}");
  c.Flag("out", &o.out, "DIR", "output folder");
  c.Flag("seed", &o.seed, "S", "numpy seed of the bootstrap");
  c.Flag("examples", &o.examples, "N", kExamplesHelp);
  c.Flag("checkpoint", &o.checkpoint, "NAME",
         "checkpoint name (default: responses file name without .gz/.jsonl/.json)");
  c.Group("provenance");
  AddGraderRequestFlags(c, &o.grader_template, &o.require_reference_template, &o.grader,
                        &score_api_, &score_headers_);
  cli::AddLengthAdjustmentFlags(c, &score_length_adjustment_);
  cli::AddProfessionalFlag(c, &score_professional_);
  c.Flag("grader-endpoint", &o.grader_endpoint, "URL", "grader endpoint to record");
  c.Bool("simulated", &o.simulated, "mark the report as simulated");
}

void OfflineFlags::AddMerge(cli::Program& program) {
  cli::Command& c = program.AddSubcommand("merge", kMergeDescription);
  c.Flag("out", &merge_.out, "DIR", "output folder");
  c.Flag("dataset", &merge_.dataset, "PATH", "overrides every recorded dataset path");
  c.Repeated("responses", &merge_responses_, "NAME=PATH",
             "overrides the recorded responses path of checkpoint NAME (repeatable)");
  c.Bool("allow-partial-shards", &merge_.allow_partial_shards,
         "accept shards that do not cover every task (a shard folder missing, or one without a "
         "checkpoint): the merged report covers the given shards' tasks only, instead of being "
         "marked INCOMPLETE with exit 3");
  c.Bool("when-complete", &merge_.when_complete,
         "merge only once every SHARD_DIR holds a complete run, else say which do not and "
         "exit 0 (run by each shard: the last to complete merges). Under a lock on DIR/.lock; "
         "a no-op when DIR/merged-from.sha256 records the same shard outputs");
  c.Positionals("SHARD_DIR", &merge_.shard_dirs, "the shards' output folders");
}

void OfflineFlags::AddCompare(cli::Program& program) {
  cli::Command& c = program.AddSubcommand("compare", kCompareDescription);
  c.Flag("out", &compare_.out, "DIR", "output folder of comparison.json and comparison.html");
  c.Flag("baseline", &compare_.baseline, "NAME",
         "checkpoint the others are compared with (default: the first)");
  c.Positionals("DIR", &compare_.dirs,
                "checkpoint folders or run folders, in the order to show them");
}

}  // namespace hb::commands_internal
