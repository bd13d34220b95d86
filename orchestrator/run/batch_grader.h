// BatchGrader: grading planned rows through the OpenAI Batch API (`run --grader-mode batch`).
//
// Each row's request body is exactly the online grader's (BuildRowRequestBody, what `dry-run`
// prints), written as one Batch API input line {"custom_id": "<checkpoint>/<prompt_id>/<rubric
// index>", "method": "POST", "url": "/v1/chat/completions" (or "/v1/responses" for a Responses
// grader), "body": ...} to <dir>/batch-NNNNNN.jsonl, streamed to disk and split at `max_requests`
// lines or `max_file_bytes` bytes per file. Each file is journaled (BatchJournal), uploaded, turned
// into a batch (journaled before anything waits on it), and polled every `poll_interval` on the
// injected scheduler. A finished batch's output and error files are read line by line; an
// answer goes through the online path's parsers (InterpretLlmResponse, then ParseGraderReply)
// and its verdict is recorded in the VerdictStore. A line that failed, expired, was malformed,
// or is missing (a cancelled or failed batch) is sent again in a follow-up batch (or returned
// for online grading with `fallback_online`) until the row has had `max_attempts` attempts;
// then, or at once for a final error (HTTP 400/401/403/404, a reply over
// max_grader_reply_bytes), it is recorded as failed, never as a verdict.
//
// A run killed at any point resumes from the journal: batches already created are polled
// again, never re-created; a file uploaded but not yet turned into a batch is looked up in the
// endpoint's batch list (by input_file_id) before a batch is created for it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/scheduler.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/types.h"
#include "grader/grader.h"
#include "orchestrator/run/batch_api.h"
#include "orchestrator/run/batch_journal.h"
#include "orchestrator/run/row_plan.h"
#include "orchestrator/run/verdict_store.h"

namespace hb {

struct BatchGradingOptions {
  // Where input files are written (created if missing).
  std::string dir;
  // The Batch API's limits per input file.
  int64_t max_requests = 50000;
  int64_t max_file_bytes = int64_t{200} << 20;
  absl::Duration poll_interval = absl::Seconds(30);
  // Attempts per row, the first included (online grading's --max-attempts).
  int max_attempts = 6;
  // Rows to re-send are returned (BatchOutcome::fallback_rows) instead of batched again.
  bool fallback_online = false;
  GraderSettings settings;
  // max_grader_reply_bytes: a longer answer is a final failure, as online.
  GraderLimits limits;
  bool send_prompt_cache_key = false;
  // Scrubbed from every error message.
  std::string api_key;
  // Called after each poll round (on Run's thread).
  std::function<void(const struct BatchProgress&)> on_progress;
};

struct BatchProgress {
  // Batches of this run's journal by their last known status (validating, in_progress, ...,
  // "written"/"uploaded" before they exist upstream, "done" once recorded).
  std::map<std::string, int64_t> states;
  // request_counts summed over this run's batches (as last polled).
  int64_t requests_completed = 0;
  int64_t requests_failed = 0;
  // Rows recorded by this run, and rows queued for another attempt.
  int64_t ok_rows = 0;
  int64_t failed_rows = 0;
  int64_t retried_rows = 0;
  // Usage of every answer read (paid, whether or not it parsed).
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t batches_created = 0;
};

struct BatchOutcome {
  BatchProgress progress;
  // With fallback_online: rows to grade online (they keep their journaled attempts).
  std::vector<PlannedRow> fallback_rows;
  // RequestStop was called: the batches keep running upstream; the next run resumes them.
  bool interrupted = false;
};

// "<checkpoint>/<prompt_id>/<rubric_index>".
std::string BatchCustomId(const RowKey& key);

class BatchGrader {
 public:
  // Not owned; must outlive the grader.
  BatchGrader(BatchApi& api, VerdictStore& store, BatchJournal& journal,
              const GraderTemplate& grader_template, Scheduler& scheduler,
              BatchGradingOptions options);

  // Grades `rows` (rows not graded in the journal) as above. Errors: BatchApi's (a refusal is
  // kFailedPrecondition: exit 2), journal and file errors (kInternal).
  absl::StatusOr<BatchOutcome> Run(std::vector<PlannedRow> rows);

  // --batch-cancel: cancels every journaled batch not finished, waits until each is terminal,
  // records the answers they have (a cancelled batch keeps the lines it completed), and
  // returns. Rows left unanswered are sent again by the next run. `rows` as for Run.
  absl::StatusOr<BatchOutcome> CancelAll(std::vector<PlannedRow> rows);

  // Stops Run at its next wait. Thread-safe, non-blocking.
  void RequestStop();

 private:
  struct Active {
    BatchRecord record;
    BatchInfo info;
    std::vector<size_t> rows;
  };

  absl::Status Load(std::vector<PlannedRow> rows);
  // After Load: the rows to send now (not in an unfinished batch). Rows whose attempts are
  // spent are recorded as failed; with fallback_online, rows that failed before go to
  // fallback_.
  absl::StatusOr<std::vector<size_t>> ReadyRows();
  // Writes, journals, uploads and creates batches for `ready` rows.
  absl::Status Submit(const std::vector<size_t>& ready);
  // Uploads and creates the batch of `active` (state written or uploaded).
  absl::Status Start(Active& active);
  // Polls the unfinished batches once; records the terminal ones. Appends rows to re-send.
  absl::Status PollOnce(std::vector<size_t>& retry);
  absl::Status Record(Active& active, std::vector<size_t>& retry);
  // Waits `d` on the scheduler; false when a stop was requested.
  bool Wait(absl::Duration d);
  bool Stopping();
  void Report();

  BatchApi& api_;
  VerdictStore& store_;
  BatchJournal& journal_;
  const GraderTemplate& template_;
  Scheduler& scheduler_;
  const BatchGradingOptions options_;

  std::vector<PlannedRow> rows_;
  std::vector<int> attempts_;
  absl::flat_hash_map<std::string, size_t> index_;  // custom id -> row
  std::vector<Active> active_;                      // journaled batches not done
  int64_t next_batch_ = 1;
  BatchProgress progress_;
  std::vector<size_t> fallback_;

  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t wakeups_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace hb
