// `run`'s inputs (internal to grading_job.cc and its rooms run_grading.cc, run_reports.cc):
// the dataset, the checkpoints' responses and the grader template loaded and checked, the
// grader that grades them connected, the journal opened with the replies of policy
// checkpoints journaled by earlier runs, and those replies written out as responses files once
// the grading is done. Errors follow run's exit codes (commands/run_command.h, ExitCodeFor): the
// caller's input is kInvalidArgument or kFailedPrecondition (exit 2), our own faults kInternal
// (exit 1).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/responses.h"
#include "common/healthbench/unscorable_tasks.h"
#include "grader/grader_info.h"
#include "grader_client/grader_connection.h"
#include "llm/token_prices.h"
#include "orchestrator/policy/policy_feed.h"
#include "orchestrator/policy/reply_journal.h"
#include "orchestrator/run/grading_job.h"
#include "orchestrator/run/sqlite_verdict_store.h"

namespace hb::run_internal {

// `dir`/`name` (`name` alone when `dir` is empty).
std::string JoinPath(const std::string& dir, const std::string& name);

// An error that is ours whatever its code (journal reads, dispatch, report writes): exit 1.
absl::Status AsInternal(const absl::Status& status);

// An error that is the caller's whatever its code (output folder, grader target): exit 2.
absl::Status AsUsage(const absl::Status& status);

// The --policy source of checkpoint `name`, or null when it is not sampled by this run.
const PolicySource* FindPolicy(const RunOptions& options, const std::string& name);

struct LoadedCheckpoint {
  CheckpointSpec spec;
  // For a policy checkpoint: its journaled replies until the reports, then the responses file
  // written from them (its sha256 is the identity of the policy until then).
  ResponseSet responses;
  // Set for a checkpoint sampled by this run (--policy); points into RunOptions::policies.
  const PolicySource* policy = nullptr;
};

struct RunInputs {
  std::string dataset_sha256;
  Dataset dataset;  // this run's tasks (selection and shard applied)
  std::vector<LoadedCheckpoint> checkpoints;
  GraderTemplate grader_template;
  // Tasks of the selection left out because they cannot be scored (--skip-unscorable-tasks).
  std::vector<UnscorableTask> unscorable;
};

// Phase 1: the dataset (or options.prepared_inputs), every checkpoint's responses (a policy
// checkpoint starts empty, identified by its policy), the --examples selection and the shard
// applied, the grader template, and the unscorable tasks refused or left out
// (--skip-unscorable-tasks, listed on stderr). A missing or unreadable input file is
// kInvalidArgument naming its flag, the path and the fix; content errors name file:line.
// `options` must outlive the result (LoadedCheckpoint::policy points into it).
absl::StatusOr<RunInputs> LoadInputs(const RunOptions& options);

// Whether some task of this run has a response: otherwise nothing is graded, and no grader is
// needed (nor asked what it grades with).
bool HasRows(const RunInputs& inputs);

// The grader of a run with nothing to grade: no connection; what it would grade with is this
// command's own settings.
absl::StatusOr<std::unique_ptr<GraderConnection>> NoGrader(const RunOptions& options,
                                                           const RunInputs& inputs);

// The grader of a run with rows to grade (grader_client/grader_connection.h). A gRPC grader
// must grade with what this command line asked for (RunOptions::expected_grader): checked on
// what the replicas report, before any row is sent (kFailedPrecondition naming the field).
absl::StatusOr<std::unique_ptr<GraderConnection>> ConnectRunGrader(const RunOptions& options);

// The prices of the grader that grades: the list prices of the model it reports (GetInfo), unless
// --price-* flags were given (RunOptions::prices_follow_grader).
TokenPrices GraderPrices(const RunOptions& options,
                         const healthbench::grader::v1::GraderInfo& grader);

// Phase 2: the journal RUN_DIR/journal.sqlite, recording what `grader` grades with and the
// inputs' identities. A journal from another run is kFailedPrecondition (exit 2, the caller's
// problem); any other failure to open it is kInternal.
absl::StatusOr<std::unique_ptr<SqliteVerdictStore>> OpenJournal(
    const RunOptions& options, const RunInputs& inputs,
    const healthbench::grader::v1::GraderInfo& grader);

// Policy checkpoints start with the replies journaled by earlier runs (for this run's tasks).
// Errors: kInternal reading the journal, kDataLoss for a journaled reply that does not parse.
absl::Status LoadJournaledReplies(RunInputs& inputs, ReplyJournal& journal);

// After the grading: writes each policy checkpoint's journaled replies to its responses file
// (RUN_DIR/NAME/responses.jsonl, in task order, as `sample` writes it) and loads that file as
// the checkpoint's responses, so the reports record it as they record a --responses file.
// Errors: as LoadJournaledReplies, kInternal writing or reading the file.
absl::Status WriteSampledResponses(RunInputs& inputs, ReplyJournal& journal);

}  // namespace hb::run_internal
