// `hb-orchestrator meta-eval`: the reference's meta-eval (simple-evals healthbench_meta_eval.py,
// SPEC §15) through the same grading job as `run`: each meta-eval row becomes one task with one
// verbatim rubric item (the row's rubric text as it stands, MetaEvalRubricItem) and the row's
// completion as its response, graded by the same grader stack (embedded or remote, online or
// batch, verdict cache, any API), journaled in OUT/journal.sqlite and resumable like `run`
// (same progress lines, cost line and exit codes). Then the grader's verdicts are set against
// the physicians' labels (ComputeMetaEval) and written to OUT/meta_eval.json and
// OUT/meta_eval.html; OUT/meta-eval/ holds run's per-row reports (every verdict with its
// explanation, failures.jsonl, summary.json with the cost).
//
// A row graded without a boolean criteria_met within its attempts (the grader's --max-attempts,
// then --row-attempts) failed: it is counted and listed (its file line) in meta_eval.json and on
// stderr, left out of the model's metrics and never used as a label. The reference retries such
// a row forever.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/healthbench/meta_eval_dataset.h"
#include "orchestrator/commands/run_command.h"
#include "orchestrator/report/meta_eval_report.h"

namespace hb {

// The checkpoint name of the graded rows (OUT/meta-eval/).
inline constexpr const char* kMetaEvalCheckpoint = kMetaEvalCheckpointFolder;

struct MetaEvalCommandOptions {
  // Everything `run` takes: run.dataset is the meta-eval JSONL, run.out the output folder,
  // run.seed the bootstrap seed; run.examples is the reference's --examples N (its
  // random.Random(0).sample of the rows). run.checkpoints and run.prepared_inputs are set by
  // RunMetaEval.
  RunOptions run;
};

// The task id of a row: "line-<N>" (lines are unique in a file; rows need not be).
std::string MetaEvalTaskId(const MetaEvalRow& row);

// The rows of `data` as `run`'s tasks and responses, in row order: task MetaEvalTaskId(row)
// with the row's prompt, one MetaEvalRubricItem and the row's category as its tag; response =
// the row's completion. Both carry data.path and data.sha256 (the journal's identity).
PreparedRunInputs MetaEvalRunInputs(const MetaEvalDataset& data);

// kInvalidArgument naming the flag, as ValidateRunOptions (after it: --policy, --responses and
// sharding are `run`'s only).
absl::Status ValidateMetaEvalOptions(const MetaEvalCommandOptions& options);

// Runs the meta-eval; returns run's exit code (0, 3 when rows failed or are missing, 4 when
// interrupted: meta_eval.json is then written over the rows graded so far, the others listed
// as failed_rows, and meta_eval.html is marked INCOMPLETE; 2 bad input, 1 internal error).
int RunMetaEval(const MetaEvalCommandOptions& options);

}  // namespace hb
