// The reports of one graded checkpoint (a set of responses graded against a dataset), and the
// comparison of several checkpoints graded on the same tasks.
//
//   HB_ASSIGN_OR_RETURN(CheckpointResult result,
//                       WriteCheckpointReport(dataset, responses, verdicts, failures, ctx, dir));
//
// WriteCheckpointReport writes into `dir` (created when missing):
//   tasks.jsonl    one line per task in dataset order: prompt_id, score (null plus an "error"
//                  string when the task is not graded), completion_id, response, system_prompt,
//                  metrics (the task's OrderedMetrics, in order), rubric_items [{criterion,
//                  points, tags, criteria_met, explanation}] (nulls for rows without verdict).
//   summary.json   checkpoint, score (HeadlineOf: the length-adjusted score when there is one),
//                  raw_score (the clipped mean of the task scores, the reference's "score"),
//                  score_length_adjusted, metrics (ReferenceMetricsMap order and key names),
//                  counts, usage, provenance; indent 2. "usage": attempts and the tokens spent
//                  upstream (prompt_tokens, cached_tokens, completion_tokens), cost_usd at
//                  context.prices (given as prices_usd_per_mtok; batch_rows, the rows graded
//                  through the Batch API, at batch_price_factor x those), from_cache_rows,
//                  saved_tokens and saved_usd (verdict-cache hits), wall_seconds.
//   verdicts.jsonl every graded row, sorted by (task in dataset order, rubric_index): the file
//                  `score --verdicts` and `merge` read back (see verdict_file.h).
//   failures.jsonl every failed row without a verdict, same order.
//   report.html    self-contained page; every piece of data text is HTML-escaped.
//
// A task is graded when it has a response and a verdict for every rubric row. A task without a
// response, with a failed row or with a missing row is "not graded": it is reported with its
// reason and left out of every aggregate (never scored as zero). A row with both a verdict and
// a failure counts as graded (the failure was retried away).
//
// Numbers: scores and metric means print as Python's repr (like the reference's json.dumps);
// n_samples and counts as integers; NaN as null.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grading/scoring.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/responses.h"
#include "common/healthbench/types.h"
#include "common/healthbench/unscorable_tasks.h"
#include "llm/token_prices.h"
#include "orchestrator/report/html_report.h"
#include "orchestrator/report/verdict_file.h"

namespace hb {

// Everything a report records about how the checkpoint was graded (summary.json "provenance").
struct ReportContext {
  // The checkpoint's name (the report title; the folder name in multi-checkpoint runs).
  std::string checkpoint;
  std::string dataset_path, dataset_sha256, responses_path, responses_sha256, template_sha256;
  // The official subset graded ("main", "hard", "consensus"; SPEC §12), empty when not given.
  std::string subset;
  // Responses for tasks outside the dataset that were ignored (ResponseSet::ignored_extra).
  int64_t responses_ignored_extra = 0;
  // Tasks of the selection left out of `dataset` because they cannot be scored (`run
  // --skip-unscorable-tasks`): summary.json "skipped_unscorable_tasks" [{prompt_id, line,
  // reason}] and a line of report.html's facts.
  std::vector<UnscorableTask> unscorable_tasks;
  GraderSettings grader;
  // simple-evals PR #108's length adjustment: when set, every graded task also gets
  // overall_score_length_adjusted (tasks.jsonl, summary.json metrics, report.html).
  std::optional<LengthAdjustment> length_adjustment;
  // What the grader reported through GetInfo (empty when unknown: `score`, older runs): its
  // upstream base URL, its build, and the replicas that answered (a gRPC --grader).
  std::string grader_upstream, grader_version;
  std::vector<std::string> grader_replicas;
  // The shard a run graded (`run --shard-index/--shard-count`; 0 of 1 unsharded);
  // shard_count 0 records none (provenance.shard null: `score`, `merge`).
  int shard_index = 0, shard_count = 0;
  // `merge`: the shard folders joined (provenance.shards); empty otherwise.
  std::vector<std::string> shards;
  // numpy seed of the bootstrap (AggregateOptions::seed).
  uint32_t seed = 0;
  // The verdicts are simulated, not a real grader model's (red banner), and why we know:
  // "the grader endpoint identified itself as hb-llm-sim" or "declared by --simulated-verdicts"
  // (empty: not said, e.g. a merge of simulated shards).
  bool simulated = false;
  std::string simulated_reason;
  // The run stopped before every row was attempted. The report also marks itself incomplete
  // when some row of a task with a response has neither a verdict nor a failure.
  bool incomplete = false;
  // Where the grader was reached. Every URL shown (this, grader_upstream) is written through
  // RedactUrl (http/url_redaction.h): credentials never reach summary.json or report.html.
  std::string grader_endpoint;
  // `--examples N` of the run, or -1 for the whole dataset.
  int64_t examples = -1;
  // Position of this checkpoint in a multi-checkpoint run (0 = the baseline); `merge` orders
  // checkpoints by it (then by name) so its comparison matches the unsharded run's.
  int checkpoint_index = 0;
  // The prices the dollar figures of summary.json "usage" and report.html are computed at.
  TokenPrices prices;
  // The Batch API's price as a fraction of `prices`, for the rows graded through it.
  double batch_price_factor = 0.5;
  // Wall time of the grading that produced the verdicts (summed over a run and its resumes);
  // nullopt when unknown (`score`, `merge`): written as null.
  std::optional<absl::Duration> wall_time;
  // summary.json "generated_at". Empty: the environment variable HB_FIXED_TIME when set
  // (tests), else the current UTC time as "YYYY-MM-DDTHH:MM:SSZ".
  std::string generated_at;
};

// What the caller needs for a comparison or a console summary.
// What the graded rows of a report cost, summed over them (ReportUsage::Add); += sums the
// reports of several checkpoints (run's final line). The token counts are those spent upstream.
struct ReportUsage {
  int64_t attempts = 0, prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  // Rows answered from the verdict cache, and the tokens their cached gradings had cost.
  int64_t from_cache_rows = 0;
  TokenCounts saved;
  // Rows graded through the Batch API, and their part of the spent tokens.
  int64_t batch_rows = 0;
  TokenCounts batch;

  TokenCounts spent() const { return {prompt_tokens, cached_tokens, completion_tokens}; }
  void Add(const VerdictRow& row);
  ReportUsage& operator+=(const ReportUsage& other);
  // The spent tokens in dollars at `prices`, the batch rows' at `batch_price_factor` x those.
  double CostUsd(const TokenPrices& prices, double batch_price_factor) const;
};

struct CheckpointResult {
  std::string checkpoint;
  // Clipped mean of the graded tasks' scores; NaN when no task is graded.
  double score = 0;
  int64_t tasks = 0, graded = 0, not_graded = 0;
  // rows: rubric rows of the tasks that have a response (the rows a run plans);
  // graded_rows: those with a verdict; failed_rows: those with a failure and no verdict.
  int64_t rows = 0, graded_rows = 0, failed_rows = 0;
  AggregateResult aggregate;
  // Per task in dataset order; nullopt = not graded.
  std::vector<std::optional<double>> task_scores;
  // Per task in the same order, its overall_score_length_adjusted (nullopt = not graded);
  // empty when the checkpoint has no length adjustment.
  std::vector<std::optional<double>> adjusted_task_scores;
  // The dataset's prompt ids in the same order (comparisons pair tasks by them).
  std::vector<std::string> prompt_ids;
  // aggregate's "score" bootstrap std (0 when no task is graded).
  double score_bootstrap_std = 0;
  // Tokens the graded rows spent upstream (verdict-cache hits excluded), the rows answered from
  // the verdict cache and what they saved, the rows graded through the Batch API.
  ReportUsage usage;
  // The report's SIMULATED and INCOMPLETE marks, carried into comparisons.
  bool simulated = false, incomplete = false;
  // The checkpoint's folder as an absolute path when it was graded elsewhere (`compare`);
  // empty for a checkpoint written beside the comparison (out_dir/<checkpoint>).
  std::string dir;
};

// The score a checkpoint leads with (the last line of `run`, `score` and `compare`, summary.json's
// "score", report.html's headline): with a length adjustment (simple-evals PR #108) the
// length-adjusted score, the raw score beside it; else the raw score.
struct HeadlineScore {
  bool graded = false;  // some task is graded (else every number is NaN)
  bool length_adjusted = false;
  double score = 0, bootstrap_std = 0;
  double raw = 0, raw_bootstrap_std = 0;

  // "0.5123 (bootstrap std 0.0100)", or with a length adjustment "0.5123 length-adjusted
  // (bootstrap std 0.0100; raw 0.5400, bootstrap std 0.0110)"; "n/a" when nothing is graded.
  std::string Text() const;
};
HeadlineScore HeadlineOf(const CheckpointResult& result);

// Scores the checkpoint and writes the five files above into `dir`. Errors:
// kInvalidArgument when a verdict or failure names a prompt_id not in `dataset`, a rubric index
// out of range, a duplicate verdict, or a verdict for a task without a response; MakeDirs /
// AtomicFileWriter errors (naming the path) when `dir` cannot be written. The files are
// streamed to disk (each through a temporary file renamed into place, so each appears whole),
// never built in memory: the memory used is the inputs plus one task at a time.
absl::StatusOr<CheckpointResult> WriteCheckpointReport(
    const Dataset& dataset, const ResponseSet& responses, const std::vector<VerdictRow>& verdicts,
    const std::vector<RowFailure>& failures, const ReportContext& context, const std::string& dir);

// Writes out_dir/comparison.json and out_dir/comparison.html for `results`, in their order, with
// results[baseline] as the baseline: each checkpoint's score and bootstrap std, per-theme and
// per-axis scores, SIMULATED / INCOMPLETE marks and folder; the number of tasks graded by every
// checkpoint; and for each other checkpoint the difference to the baseline with a
// paired-bootstrap 95% CI (PairedBootstrap with `seed`) over the tasks both graded, paired by
// prompt_id in the baseline's order, and that n. kInvalidArgument when fewer than two results
// are given, `baseline` is out of range, or two share a name ("checkpoint name 'x' used twice");
// write errors name the path.
absl::Status WriteComparison(const std::vector<CheckpointResult>& results, uint32_t seed,
                             const std::string& out_dir, size_t baseline = 0);

// The parts of a comparison that read every task's score: the difference of each non-baseline
// checkpoint to the baseline (in the results' order) and the number of tasks graded by every
// checkpoint. WriteComparison computes them; a caller that rewrites a comparison as checkpoints
// accumulate (`watch`) computes each difference once (ComparisonPairOf) and keeps the common
// tasks as an intersection of GradedPromptIds, then writes with WriteComparisonOf, whose
// `results` need no per-task vectors.
struct ComparisonParts {
  std::vector<HtmlComparisonPair> pairs;
  int64_t common_tasks = 0;
};
// `other`'s paired-bootstrap difference to `baseline` as WriteComparison computes it: of the
// length-adjusted scores when both have them (raw beside it), else of the raw scores.
HtmlComparisonPair ComparisonPairOf(const CheckpointResult& baseline, const CheckpointResult& other,
                                    uint32_t seed);
// The prompt_ids of the tasks `result` graded.
absl::flat_hash_set<std::string> GradedPromptIds(const CheckpointResult& result);
// WriteComparison with the per-task parts given: the same files, byte for byte, as
// WriteComparison(results, ...) when `parts` are those of the same results. kInvalidArgument
// as WriteComparison, and when parts.pairs does not hold one difference per non-baseline result.
absl::Status WriteComparisonOf(const std::vector<CheckpointResult>& results,
                               const ComparisonParts& parts, uint32_t seed,
                               const std::string& out_dir, size_t baseline);

// The tool version recorded in summary.json (PROJECT_VERSION, plus "+git.<describe>" when the
// build came from a git checkout).
const char* ToolVersion();

}  // namespace hb
