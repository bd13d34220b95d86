// SqliteVerdictStore: the run journal in DIR/journal.sqlite (SQLite, WAL).
//
// Durability: the journal uses journal_mode=WAL with synchronous=NORMAL. A commit appends the
// transaction to the -wal file with write(2) before COMMIT returns; the WAL is fsync'ed only at
// checkpoints. So a committed transaction survives the death of the process (SIGKILL, OOM kill,
// pod eviction: the bytes are in the kernel's page cache), which is what a resumable grading
// job needs. Only an OS crash or power loss can lose the last transactions (never corrupt the
// database); those rows are graded again by the next run, so the cost is money, not
// correctness. FULL would fsync on every commit for no benefit against the failures we care
// about.
//
// Writes are batched: one writer thread commits queued rows in one transaction when
// `batch_rows` are waiting or `batch_interval` after the first queued row, whichever first.
//
// Schema:
//   meta(key TEXT PRIMARY KEY, value TEXT)
//   rows(checkpoint, prompt_id, rubric_index, status 'ok'|'failed', criteria_met, explanation,
//        attempts, prompt_tokens, cached_tokens, completion_tokens, error, time_unix_ms,
//        from_cache, batch, simulated (added to older journals on open), PRIMARY KEY
//        (checkpoint, prompt_id, rubric_index))
//   runs(started_unix_ms, wall_ms): one row per run that graded, so the reports' wall time
//        adds up across resumes like the rows' tokens do
//   batches(name PRIMARY KEY, input_path, requests, file_id, batch_id, state)   (batch_journal.h)
//   batch_rows(checkpoint, prompt_id, rubric_index, batch, attempts,
//              PRIMARY KEY (checkpoint, prompt_id, rubric_index))
// The batch tables are written synchronously by the calling thread (not batched).
//   replies(checkpoint, prompt_id, reply, time_unix_ms, PRIMARY KEY (checkpoint, prompt_id))
//        (run --policy: the sampled replies, ReplyJournal; same batching and durability)
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/sqlite/database.h"
#include "orchestrator/policy/reply_journal.h"
#include "orchestrator/run/batch_journal.h"
#include "orchestrator/run/verdict_store.h"

struct sqlite3;

namespace hb {

// The journal's file name inside the output folder.
inline constexpr char kJournalFileName[] = "journal.sqlite";

struct SqliteVerdictStoreOptions {
  // The journal file (normally DIR/journal.sqlite). Its folder must exist.
  std::string path;
  // The identity of this run; see Open.
  JournalMeta meta;
  // Always start a new, empty journal: an existing one (whatever its meta) is MOVED ASIDE,
  // never deleted, to "<path>.old-<YYYYmmdd-HHMMSS>" (plus its -wal file when one is left).
  bool force_new = false;
  // Batching of the writer thread.
  int batch_rows = 256;
  absl::Duration batch_interval = absl::Milliseconds(50);
};

class SqliteVerdictStore final : public VerdictStore, public ReplyJournal, public BatchJournal {
 public:
  // The same type in both bases.
  using CommitCallback = VerdictStore::CommitCallback;

  // Opens or creates the journal and starts the writer thread.
  //
  // A new journal records `options.meta`. An existing journal must match it: a differing
  // dataset sha256, template sha256, grader model / temperature / max_tokens / system message
  // or tool version, or a checkpoint recorded with another responses sha256, fails with
  // kFailedPrecondition:
  //   "journal <path> belongs to another run: dataset_sha256 is 'X' in the journal but 'Y'
  //    for this run; use another --out folder, or --force-new to move the old journal aside"
  // (unless `force_new`). Checkpoints new to the journal are added to its meta. An existing
  // 0-byte file (a truncated journal, which SQLite would take for a new one) fails with
  // kFailedPrecondition "journal <path> is empty (0 bytes): ..." unless `force_new`.
  // kInternal / kPermissionDenied / kDataLoss for SQLite errors (the message names the path).
  static absl::StatusOr<std::unique_ptr<SqliteVerdictStore>> Open(
      const SqliteVerdictStoreOptions& options);

  // Flushes, stops the writer thread and closes the database.
  ~SqliteVerdictStore() override;

  void Append(RowRecord row, CommitCallback on_commit) override;
  absl::Status Flush() override;
  absl::StatusOr<std::vector<RowRecord>> Rows(const std::string& checkpoint) override;
  void AppendReply(ReplyRecord reply, CommitCallback on_commit) override;
  absl::StatusOr<std::vector<ReplyRecord>> Replies(const std::string& checkpoint) override;

  absl::StatusOr<std::vector<BatchRecord>> Batches() override;
  absl::Status SaveBatch(const BatchRecord& batch, const std::vector<BatchRowEntry>& rows) override;
  absl::StatusOr<std::vector<BatchRowEntry>> BatchRows() override;
  absl::Status ForgetBatchRows(const std::vector<RowKey>& keys) override;
  // Records one run's grading wall time (`started` is when it began). kInternal & co. for
  // SQLite errors naming the path. Thread-safe.
  absl::Status AddRunTime(absl::Time started, absl::Duration wall);
  // The wall time of every run recorded by AddRunTime, summed. Thread-safe.
  absl::StatusOr<absl::Duration> TotalRunTime();
  // Whether any row, of any checkpoint and any run, holds a simulated verdict
  // (RowRecord::simulated: hb-llm-sim identified itself).
  absl::StatusOr<bool> AnySimulatedRow();

  // The path the old journal was moved to by `force_new` (empty when nothing was moved).
  const std::string& moved_aside_path() const { return moved_aside_path_; }
  // Transactions committed by the writer thread so far (for tests).
  int64_t transactions_committed() const;

 private:
  SqliteVerdictStore(std::string path, std::unique_ptr<Database> database,
                     SqliteVerdictStoreOptions options);
  // A queued row or reply (exactly one of them) and its callback.
  struct Queued {
    std::optional<RowRecord> row;
    std::optional<ReplyRecord> reply;
    CommitCallback on_commit;
  };
  void Enqueue(Queued entry);
  void WriterLoop();
  absl::Status WriteBatch(const std::vector<Queued>& batch);
  absl::Status WriteRow(Statement& insert, const RowRecord& row)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_mu_);
  absl::Status WriteReply(Statement& insert, const ReplyRecord& reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_mu_);
  // Runs `body` (statements on db_) in one IMMEDIATE transaction; rolls back on error.
  absl::Status InTransaction(const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_mu_);

  const std::string path_;
  const SqliteVerdictStoreOptions options_;
  std::string moved_aside_path_;

  // Serialises every use of db_ (the writer thread and Rows()).
  absl::Mutex db_mu_;
  std::unique_ptr<Database> database_ ABSL_GUARDED_BY(db_mu_);
  // database_->get(), for the statements.
  sqlite3* db_ ABSL_GUARDED_BY(db_mu_);

  mutable absl::Mutex mu_;
  // Signalled when rows are queued, a flush is requested or the store shuts down.
  absl::CondVar queue_cv_;
  // Signalled when a batch completed.
  absl::CondVar completed_cv_;
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  // Rows appended / completed (committed or failed) so far; Flush waits for equality.
  int64_t appended_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t transactions_ ABSL_GUARDED_BY(mu_) = 0;
  bool flush_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status write_error_ ABSL_GUARDED_BY(mu_);
  std::thread writer_;
};

}  // namespace hb
