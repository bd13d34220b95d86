// `run`'s grading (internal to grading_job.cc): the plan of the rows still to grade after the
// journal, and their grading online (dispatcher.h, a probe row first, sampling the policies'
// replies as it goes: policy_feed.h) or through the Batch API (batch_grader.h). SIGTERM/SIGINT
// reach `stop` (stop_switch.h), which stops the active dispatcher or batch grader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "grader_client/grader_connection.h"
#include "orchestrator/run/grading_job.h"
#include "orchestrator/run/row_plan.h"
#include "orchestrator/run/run_inputs.h"
#include "orchestrator/run/sqlite_verdict_store.h"
#include "orchestrator/run/stop_switch.h"
#include "orchestrator/run/verdict_store.h"

namespace hb::run_internal {

// Phase 3: the rows still to grade, after those the journal holds as graded.
struct RunPlan {
  std::vector<PlannedRow> rows;
  int64_t total_rows = 0;
  int64_t already_done = 0;
  // Rows graded in the journal (rows arriving with a policy's replies are checked against it).
  absl::flat_hash_set<RowKey> done;
  // Per policy checkpoint (index into RunInputs::checkpoints): the tasks without a reply yet.
  // The pointers point into RunInputs::dataset.
  std::vector<std::pair<size_t, std::vector<const Example*>>> to_sample;
  int64_t replies_journaled = 0;

  bool HasTasksToSample() const {
    for (const auto& [index, missing] : to_sample) {
      if (!missing.empty()) return true;
    }
    return false;
  }
};

// The plan of `inputs` (which must outlive it) against the rows `store` holds as graded; logs
// what it found. Errors: kInternal reading the journal.
absl::StatusOr<RunPlan> Plan(const RunOptions& options, const RunInputs& inputs,
                             VerdictStore& store);

// Phase 4: grades the plan online on `grader` (sampling the policies' replies as it goes; the
// first row alone as a probe) or through the Batch API (--grader-mode batch, or cancels the
// journal's unfinished batches with --batch-cancel), then closes the grader; returns whether
// the run was interrupted, and counts the tasks a policy could not answer in `unsampled`. The
// journal is flushed whatever happened. Errors: kFailedPrecondition when the probe row shows the
// grader cannot grade (a bad key, URL or model: exit 2), PolicyFeed::Start's and the Batch API's,
// kInternal for a journal failure.
absl::StatusOr<bool> Grade(const RunOptions& options, const RunInputs& inputs, RunPlan plan,
                           GraderConnection& grader, SqliteVerdictStore& store, StopSwitch& stop,
                           int64_t& unsampled);

}  // namespace hb::run_internal
