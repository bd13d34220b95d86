// Tasks the reference cannot score: no rubric item has positive points (SPEC §7: P == 0; the
// reference grades them and then asserts while aggregating). `hb-orchestrator run` refuses them
// before any grader request, or leaves them out and lists them (--skip-unscorable-tasks).
#pragma once

#include <string>
#include <vector>

#include "common/healthbench/dataset.h"

namespace hb {

// One task left out of a run because it cannot be scored.
struct UnscorableTask {
  std::string prompt_id;
  // 1-based line of the record in the dataset file (0 when unknown: read back from a report).
  int line = 0;
  std::string reason;
};

// The reason every UnscorableTask carries.
inline constexpr char kUnscorableReason[] =
    "no rubric item has positive points: its score (points met / positive points) is undefined";

// The tasks of `dataset` whose rubric items' positive points sum to 0, in dataset order.
std::vector<UnscorableTask> FindUnscorableTasks(const Dataset& dataset);

// Removes `tasks` (by prompt_id) from `dataset`, keeping the order of the others.
void RemoveTasks(Dataset& dataset, const std::vector<UnscorableTask>& tasks);

}  // namespace hb
