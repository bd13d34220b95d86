// Reading back what a graded checkpoint folder (OUT/<checkpoint>/ of `run`, `score` or `merge`)
// says about itself: summary.json (provenance, score, metrics) and the per-task scores of
// tasks.jsonl. `merge` and `compare` read checkpoints graded elsewhere through this one reader.
//
//   HB_ASSIGN_OR_RETURN(std::vector<std::string> names, ListCheckpointFolders(run_dir, "run"));
//   HB_ASSIGN_OR_RETURN(CheckpointSummary s, ReadCheckpointSummary(run_dir + "/" + names[0]));
//
// Errors are kInvalidArgument naming the file and the field ("<dir>/summary.json: field
// 'provenance.seed': missing"), or the read errors of common/base/file.h. Thread-safe (no
// shared state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/grading/scoring.h"
#include "common/healthbench/types.h"
#include "common/healthbench/unscorable_tasks.h"

namespace hb::commands_internal {

struct CheckpointSummary {
  std::string dir;  // the checkpoint folder, as given
  std::string checkpoint;
  std::string dataset_path, dataset_sha256, responses_path, responses_sha256, template_sha256;
  std::string subset;  // "" when not recorded
  int64_t examples = -1;
  GraderSettings grader;
  // provenance.length_adjustment (simple-evals PR #108); nullopt when null or absent.
  std::optional<LengthAdjustment> length_adjustment;
  std::string grader_endpoint;
  // What the graders reported (GetInfo); empty in summaries written before it existed.
  std::string grader_upstream, grader_version;
  std::vector<std::string> grader_replicas;
  // The shard the run graded; shard_count 0 in summaries written before it was recorded.
  int shard_index = 0, shard_count = 0;
  uint32_t seed = 0;
  int checkpoint_index = 0;
  bool simulated = false;
  // provenance.simulated_reason; empty when null or absent (summaries written before it).
  std::string simulated_reason;
  bool incomplete = false;
  // "skipped_unscorable_tasks" (`run --skip-unscorable-tasks`); empty when absent.
  std::vector<UnscorableTask> unscorable_tasks;
  // "score" (NaN when no task is graded) and the metrics rebuilt from the reference's map:
  // every key with its mean, n and bootstrap std, in file order ("score" where its
  // score:n_samples is).
  double score = 0;
  int64_t tasks = 0, graded = 0, not_graded = 0;
  std::vector<MetricSummary> metrics;
};

// Reads `dir`/summary.json.
absl::StatusOr<CheckpointSummary> ReadCheckpointSummary(const std::string& dir);

// The per-task scores of `dir`/tasks.jsonl in file order: prompt_ids, scores (nullopt for a
// task not graded) and length-adjusted scores. Errors name the file and line.
struct TaskScores {
  std::vector<std::string> prompt_ids;
  std::vector<std::optional<double>> scores;
  // Each task's metrics.overall_score_length_adjusted (nullopt when absent).
  std::vector<std::optional<double>> adjusted;
};
absl::StatusOr<TaskScores> ReadTaskScores(const std::string& dir);

// The sub-folders of `parent` that hold a summary.json, sorted by name. kInvalidArgument when
// `parent` is not a folder or has none ("<what> '<parent>' has no <checkpoint>/summary.json").
absl::StatusOr<std::vector<std::string>> ListCheckpointFolders(const std::string& parent,
                                                               const std::string& what);

// The first field in which `b` disagrees with `a` among those that make two gradings of one
// checkpoint the same grading (checkpoint name, dataset and responses sha256, examples,
// template, grader settings, seed, checkpoint index), as "<name> ('x' vs 'y')", or "".
// `compare_responses` is false for checkpoints sampled per shard (`run --policy`): each shard
// then graded its own responses file.
std::string ShardDisagreement(const CheckpointSummary& a, const CheckpointSummary& b,
                              bool compare_responses = true);

// The first field in which `b` disagrees with `a` among those that make two checkpoints'
// scores comparable (dataset sha256, then the grader identity's fields: "grader model",
// "grader temperature", ..., "grader template_sha256"), as "<name> ('x' vs 'y')", or "".
std::string GradingDisagreement(const CheckpointSummary& a, const CheckpointSummary& b);

}  // namespace hb::commands_internal
