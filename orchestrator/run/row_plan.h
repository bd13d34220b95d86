// Planning a run: checkpoint names, the shard's tasks, the rows (task x rubric item) still to
// grade, and the GradeItem request of one row. Pure functions over the data model; the
// dispatcher (dispatcher.h) sends what is planned here.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "common/healthbench/subsets.h"
#include "common/healthbench/types.h"
#include "orchestrator/run/verdict_store.h"

namespace hb {

// One `--responses` entry: a checkpoint name and its responses file.
struct CheckpointSpec {
  std::string name;
  std::string path;
};

// The error of a run given no checkpoint at all.
inline constexpr char kNoCheckpointsError[] =
    "no --responses or --policy given: name at least one responses file (--responses "
    "NAME=FILE) or served checkpoint to sample (--policy NAME=MODEL@URL)";

// Parses `--responses` values: "NAME=PATH", or "PATH" whose name is the file name without its
// folder and without a trailing ".gz" and then ".jsonl"/".json" ("runs/step-100.jsonl.gz" ->
// "step-100"). A name must be 1-100 characters of [A-Za-z0-9._-], must not start with '.' and
// must not be "journal.sqlite..."; names must be unique. kInvalidArgument naming the entry
// otherwise ("--responses 'a b=x.jsonl': checkpoint name 'a b' ..."), and when `specs` is
// empty.
absl::StatusOr<std::vector<CheckpointSpec>> ParseCheckpointSpecs(
    const std::vector<std::string>& specs);

// One row to grade. Pointers refer to the caller's dataset and responses, which must outlive
// the plan.
struct PlannedRow {
  const std::string* checkpoint = nullptr;
  const Example* example = nullptr;
  const Response* response = nullptr;
  int rubric_index = 0;

  RowKey Key() const { return RowKey{*checkpoint, example->prompt_id, rubric_index}; }
};

// The responses of one checkpoint, keyed by prompt_id (pointers into the caller's data).
struct CheckpointRows {
  const std::string* name = nullptr;
  // prompt_id -> response; a task without a response is not planned.
  std::function<const Response*(const std::string& prompt_id)> find_response;
};

// Every row of `tasks` (in order) for every checkpoint (checkpoint-major, then task, then
// rubric item), skipping tasks a checkpoint has no response for and rows in `done`. A task's
// rubric items stay adjacent, so they are sent together (shared prompt-cache prefix).
std::vector<PlannedRow> PlanRows(const std::vector<const Example*>& tasks,
                                 const std::vector<CheckpointRows>& checkpoints,
                                 const absl::flat_hash_set<RowKey>& done);

}  // namespace hb
