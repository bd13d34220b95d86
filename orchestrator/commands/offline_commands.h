// The offline subcommands of hb-orchestrator: they read files and write files, and never call a
// grader. main.cc maps flags to these Options structs; each function returns the text to print
// on success (one or more lines, no trailing newline) or an error whose message is one line.
//
// Error codes: kInvalidArgument for bad options and bad input files (with file:line where it
// applies), kNotFound / kPermissionDenied / kDataLoss from reading, kFailedPrecondition /
// kPermissionDenied when an output cannot be written. main exits with 2 on any of them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/grading/scoring.h"
#include "common/healthbench/types.h"
#include "llm/token_prices.h"

namespace hb {

// `tasks`: the task list a policy model answers. One JSONL line per selected task, in
// selection order: {"prompt_id", "messages": [{"role","content"}], "prompt_text"} where
// prompt_text = TaskPromptText(messages).
struct TasksOptions {
  std::string dataset;
  int64_t examples = -1;  // -1: every task; else the reference's --examples N selection
  std::string out;
};
absl::StatusOr<std::string> RunTasks(const TasksOptions& options);

// `dry-run`: every grader request a run would send, without sending it. One JSONL line per
// rubric row of each task that has a response:
//   {"prompt_id","rubric_index","request_sha256","request":{...}}
// where "request" is the exact body BuildGraderRequestBody returns, spliced byte for byte (so
// the raw text of the value hashes to request_sha256), and prints the row count and a cost
// estimate.
//
// Token estimate: ceil(UTF-8 bytes of the grader messages' contents / 4) per row. Best-case
// prompt caching assumes every row after the first of a task reuses the prefix it shares with
// that first row, counted like OpenAI does (only from 1024 tokens on, in 128-token steps).
// The grader settings and prices are validated (ValidateGraderSettings, ValidateTokenPrices)
// before anything is read.
struct DryRunOptions {
  std::string dataset;
  std::string responses;
  std::string out;
  int64_t examples = -1;
  std::string grader_template;
  bool require_reference_template = true;
  GraderSettings grader;
  // Each task's prompt_id as `prompt_cache_key` (as `run --prompt-cache-key=prompt_id`).
  bool prompt_cache_key_per_task = false;
  TokenPrices prices;
  // The visible reply (the verdict JSON) per row.
  int64_t est_output_tokens_per_row = 60;
  // Reasoning tokens per row (--est-reasoning-tokens-per-row), billed as output tokens. Not
  // given: none for a chat-completions grader; for a Responses grader (a reasoning model) they
  // are unknown before grading, left out, and the estimate says it is a lower bound.
  std::optional<int64_t> est_reasoning_tokens_per_row;
  // The Batch API's price as a fraction of the online one (the batch estimate).
  double batch_price_factor = 0.5;
};
struct DryRunEstimate {
  int64_t tasks = 0, tasks_with_response = 0, rows = 0;
  // output_tokens: visible plus reasoning_tokens.
  int64_t input_tokens = 0, cached_input_tokens = 0, output_tokens = 0, reasoning_tokens = 0;
  // A Responses grader without --est-reasoning-tokens-per-row: the costs are lower bounds.
  bool reasoning_left_out = false;
  // What 100 reasoning tokens per row add to the online cost (USD).
  double cost_per_100_reasoning_tokens_per_row = 0;
  double cost_uncached = 0, cost_best_cached = 0;  // USD
};
absl::StatusOr<DryRunEstimate> DryRun(const DryRunOptions& options);
// The text `dry-run` prints for `estimate`.
std::string FormatDryRunEstimate(const DryRunOptions& options, const DryRunEstimate& estimate);
absl::StatusOr<std::string> RunDryRun(const DryRunOptions& options);

// `score`: re-scores a checkpoint from a verdict file (no grader calls) and writes the report
// files of WriteCheckpointReport into `out`, keeping the grading's provenance (see
// ScoreOptions::grader_given).
struct ScoreOptions {
  // The dataset file graded (for --subset hard|consensus, the subset's file).
  std::string dataset;
  // Recorded in the report; empty when --subset was not given.
  std::string subset;
  // Responses for tasks outside `dataset` are counted and skipped instead of an error.
  bool ignore_extra_responses = false;
  std::string responses;
  std::string verdicts;
  std::string failures;  // optional failures.jsonl
  std::string out;
  uint32_t seed = 0;
  int64_t examples = -1;
  // The checkpoint name; empty: the responses file name without .gz/.jsonl/.json.
  std::string checkpoint;
  // Recorded as the template sha256; empty records "" (unknown).
  std::string grader_template;
  bool require_reference_template = true;
  GraderSettings grader;  // validated by ValidateGraderSettings
  std::optional<LengthAdjustment> length_adjustment;
  std::string grader_endpoint;
  bool simulated = false;
  // Which of the above the command line gave. What it did not give is taken from the
  // summary.json beside `verdicts` when that summary records these verdicts' grading (same
  // responses and dataset sha256): the grader that graded them (settings, template sha256,
  // upstream, version, replicas, endpoint), its length adjustment and its SIMULATED mark. A
  // given grader setting or length adjustment that contradicts it is kInvalidArgument naming
  // the field and both values.
  bool grader_given = false, length_adjustment_given = false, grader_template_given = false,
       grader_endpoint_given = false;
};
absl::StatusOr<std::string> RunScore(const ScoreOptions& options);

// `merge`: joins the per-checkpoint outputs of sharded runs. Every `shard_dir` holds
// <checkpoint>/summary.json and <checkpoint>/verdicts.jsonl (and optionally failures.jsonl).
// For each checkpoint the shards' provenance must agree (dataset and responses sha256,
// --examples, template sha256, grader settings, seed, checkpoint index); the dataset and
// responses are reloaded from the recorded paths (or the overrides) and must still have the
// recorded sha256. Writes out/<checkpoint>/ exactly as an unsharded run would, and
// out/comparison.{json,html} when there are several checkpoints (ordered by checkpoint index,
// then name; the first is the baseline).
//
// Coverage: when a shard folder lacks a checkpoint (no <checkpoint>/summary.json), or the runs
// recorded their shards (provenance.shard) and an index of 0..count-1 is not given, the merged
// report is marked INCOMPLETE (its tasks are not graded) and MergeResult::incomplete is set
// (exit 3), unless `allow_partial_shards`: then the merged report covers only the tasks of
// the shards given and is complete. provenance.shards lists the shard folders used.
// kInvalidArgument when two folders are the same shard index or record different counts.
struct MergeOptions {
  std::string out;
  std::vector<std::string> shard_dirs;
  std::string dataset;                           // overrides every recorded dataset path
  std::map<std::string, std::string> responses;  // checkpoint name -> responses path
  bool allow_partial_shards = false;
  // `merge --when-complete`, run by each shard after its own run (`run --merge-when-complete`):
  // merges only once every SHARD_DIR holds a complete run (a summary.json for every checkpoint
  // any shard has, and no failures.jsonl rows); otherwise merges nothing and says which shard
  // folders are not complete (not an error). Under an exclusive lock on out/.lock (waiting for
  // another merger), and a no-op when out/merged-from.sha256 records the same shard outputs
  // (their summary, verdicts and failures files and these options), written after each merge.
  bool when_complete = false;
};
struct MergeResult {
  // What `merge` prints on stdout.
  std::string message;
  // Some merged report is marked INCOMPLETE (missing shards or rows): exit 3.
  bool incomplete = false;
};
absl::StatusOr<MergeResult> RunMerge(const MergeOptions& options);

// `compare`: one view of checkpoints graded in separate runs or Jobs. Each of `dirs` is a
// checkpoint folder (it holds summary.json and tasks.jsonl) or a run folder (its
// <checkpoint>/summary.json sub-folders, ordered by checkpoint index then name). Reads only
// those files (never the dataset or responses), and writes out/comparison.{json,html}
// (WriteComparison) with the checkpoints in the order given, their folders as absolute paths,
// and `baseline` (default: the first checkpoint) as the baseline; the bootstrap seed is the
// baseline's. Errors (kInvalidArgument): fewer than two checkpoints, a folder with neither,
// a checkpoint name used twice (naming both folders), an unknown --baseline (listing the
// names), and a checkpoint graded on another dataset, template or grader than the baseline
// (naming the field and both values).
struct CompareOptions {
  std::string out;
  std::string baseline;
  std::vector<std::string> dirs;
};
absl::StatusOr<std::string> RunCompare(const CompareOptions& options);

// `compare` again and again over a growing list of checkpoint folders (`watch`, after each
// checkpoint): what RunCompare writes and returns, at the cost of the new or changed
// checkpoints only. A folder's tasks.jsonl is read once while its summary.json and tasks.jsonl
// stay the same files (device, inode, size, modification time: `run` replaces them by rename);
// each difference to the baseline is computed once per such pair of files. Kept in memory: the
// baseline's per-task scores, each difference and the set of tasks graded by every checkpoint
// (each checkpoint's summary.json is read again at every call). A checkpoint that changed or left
// the list restarts the common set from the folders (one read each). Not thread-safe.
class CompareSession {
 public:
  CompareSession();
  ~CompareSession();
  CompareSession(const CompareSession&) = delete;
  CompareSession& operator=(const CompareSession&) = delete;

  absl::StatusOr<std::string> Run(const CompareOptions& options);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace hb
