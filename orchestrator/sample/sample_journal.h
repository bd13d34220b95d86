// SampleJournal: the durable record of `hb-orchestrator sample` — the policy replies received so
// far — so that a sampling job killed at any point (SIGKILL included) and run again with the same
// command asks the policy only for the tasks it had not durably received.
//
// Format: an append-only JSONL file. The first line is a header
//   {"journal":"hb-sample/1","dataset_sha256":...,"examples":N,"shard":"i/n","settings":{...}}
// and every further line is one SampledReply in the responses format (FormatSampledReply). An
// append-only file rather than SQLite (orchestrator/run/sqlite_verdict_store.h) because a
// sampled task is written once and never updated, the records are exactly the output lines (a
// reader can inspect or salvage them with any JSONL tool), and a whole batch costs one write()
// and one fdatasync(). Crash safety: lines are appended in batches (whatever arrived while the
// writer thread wrote the last batch), each batch followed by fdatasync before its replies
// count as done (their commit callbacks run); a torn last line (a crash mid-write) has no
// trailing newline and is dropped (and truncated away) on open. The journal is refused when its
// header differs from this run's (other dataset, --examples or policy settings): it belongs to a
// different job.
//
// It is the sampling engine's ReplyJournal (orchestrator/policy/policy_feed.h) for `sample`.
//
// Thread-safety: AppendReply and Replies are thread-safe; one writer thread of its own writes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "orchestrator/policy/reply_journal.h"
#include "orchestrator/policy/sampled_reply.h"

namespace hb {

// What a journal belongs to.
struct SampleJournalHeader {
  std::string dataset_sha256;
  int64_t examples = -1;
  std::string settings;       // PolicySettingsFingerprint, a JSON object
  std::string shard = "0/1";  // "<index>/<count>"
};

class SampleJournal final : public ReplyJournal {
 public:
  // Opens `path`, creating it (and its header) when absent; with an existing file, checks its
  // header against `header` and reads its replies (replies()). Errors: kFailedPrecondition "…
  // was written by another sampling job (<which field differs>); use another --out or delete
  // it" on a header mismatch; kDataLoss "<path>:<line>: …" for a corrupt line other than a
  // torn last one; kPermissionDenied / kInternal from the file system.
  static absl::StatusOr<std::unique_ptr<SampleJournal>> Open(const std::string& path,
                                                             const SampleJournalHeader& header);
  // Writes what was appended, then closes the file.
  ~SampleJournal() override;
  SampleJournal(const SampleJournal&) = delete;
  SampleJournal& operator=(const SampleJournal&) = delete;

  // The replies found on open, in file order (one per prompt_id: the first wins).
  const std::vector<SampledReply>& replies() const { return replies_; }

  // Queues the line for the writer thread; `on_commit` gets OK once it is synced, or the write
  // error (kInternal, sticky: later appends fail with it). reply.checkpoint is not recorded.
  void AppendReply(ReplyRecord reply, CommitCallback on_commit) override;
  // The replies found on open and those appended since (any checkpoint), in file order.
  absl::StatusOr<std::vector<ReplyRecord>> Replies(const std::string& checkpoint) override;

 private:
  SampleJournal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  absl::Status Replay(const SampleJournalHeader& header, const std::string& text);
  void WriterLoop();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const int fd_;
  std::vector<SampledReply> replies_;
  std::thread writer_;
  mutable absl::Mutex mu_;
  std::vector<std::pair<ReplyRecord, CommitCallback>> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<ReplyRecord> written_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace hb
