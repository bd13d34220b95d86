// VerdictStore: the journal of graded rows (one row = one rubric item of one task of one
// checkpoint). The dispatcher appends rows as verdicts arrive; a row counts (progress, "done"
// set, reports) only once the store reports it committed. SqliteVerdictStore
// (sqlite_verdict_store.h) is the production implementation; tests use an in-memory fake.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grader/grader_identity.h"

namespace hb {

// Identifies one row.
struct RowKey {
  std::string checkpoint;
  std::string prompt_id;
  int rubric_index = 0;

  bool operator==(const RowKey& o) const {
    return rubric_index == o.rubric_index && prompt_id == o.prompt_id && checkpoint == o.checkpoint;
  }
  bool operator!=(const RowKey& o) const { return !(*this == o); }
  template <typename H>
  friend H AbslHashValue(H h, const RowKey& k) {
    return H::combine(std::move(h), k.checkpoint, k.prompt_id, k.rubric_index);
  }
};

// One journal row: a verdict ("ok") or a row that exhausted its attempts ("failed").
struct RowRecord {
  RowKey key;
  // true: `criteria_met` and `explanation` hold the verdict. false: `error` says why the row
  // failed; it is graded again on the next run.
  bool ok = false;
  bool criteria_met = false;
  std::string explanation;
  // Attempts made for this row. The journal sums them across runs (a row that failed once with
  // 3 attempts and then succeeded at the first attempt of the next run has 4).
  int attempts = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  // The verdict came from the grader's verdict cache: no upstream request was made, and the
  // token counts are the cached grading's (saved, not spent).
  bool from_cache = false;
  // The verdict (or failure) came from a Batch API answer: its tokens are billed at the batch
  // price (--batch-price-factor).
  bool batch = false;
  // The verdict came from hb-llm-sim (it identified itself): the run is simulated.
  bool simulated = false;
  std::string error;
  // When the row was recorded.
  absl::Time time = absl::UnixEpoch();
};

// The identity of a run, recorded once per journal. A journal only ever holds verdicts of one
// dataset, grader template and grader configuration, so rows can be reused across runs.
struct JournalMeta {
  std::string dataset_sha256;
  // What the grader grades with (recorded as its IdentityFields' journal keys).
  GraderIdentity grader;
  std::string tool_version;
  // checkpoint name -> sha256 of its responses file, for the checkpoints of this run.
  // Checkpoints already in the journal must keep their sha256; new ones are added.
  std::vector<std::pair<std::string, std::string>> responses_sha256;
};

class VerdictStore {
 public:
  // Called once the transaction holding a row committed (OK) or failed (the row is not
  // recorded). Runs on the store's writer thread: must not block, may take the caller's locks.
  using CommitCallback = std::function<void(const absl::Status& status)>;

  virtual ~VerdictStore() = default;

  // Queues `row` for the next transaction and returns at once. An "ok" row replaces a
  // "failed" one with the same key; an "ok" row is never replaced. Thread-safe.
  virtual void Append(RowRecord row, CommitCallback on_commit) = 0;

  // Blocks until every row appended before the call is committed. Returns the first write
  // error the store met (kInternal / kDataLoss / kResourceExhausted from the backend), which is
  // sticky: once a write failed, later Flush calls fail too. Thread-safe.
  virtual absl::Status Flush() = 0;

  // Every committed row of `checkpoint`, ordered by (prompt_id, rubric_index). Thread-safe.
  virtual absl::StatusOr<std::vector<RowRecord>> Rows(const std::string& checkpoint) = 0;
};

}  // namespace hb
