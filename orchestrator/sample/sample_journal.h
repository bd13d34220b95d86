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
// It is the sampling engine's ReplyJournal (orchestrator/policy/policy_feed.h) for `sample`. It
// holds no reply once written: the command keeps the one copy that becomes the responses file
// (the replies found on open are handed over by TakeReplayed), and Replies reads the file.
//
// Thread-safety: AppendReply and Replies are thread-safe; one writer thread of its own writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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
  // header against `header` and reads its replies (TakeReplayed()). Errors: kFailedPrecondition "…
  // was written by another sampling job (<which field differs>); use another --out or delete
  // it" on a header mismatch; kDataLoss "<path>:<line>: …" for a corrupt line other than a
  // torn last one; kPermissionDenied / kInternal from the file system.
  static absl::StatusOr<std::unique_ptr<SampleJournal>> Open(const std::string& path,
                                                             const SampleJournalHeader& header);
  // Writes what was appended, then closes the file.
  ~SampleJournal() override;
  SampleJournal(const SampleJournal&) = delete;
  SampleJournal& operator=(const SampleJournal&) = delete;

  // The replies found on open, in file order (one per prompt_id: the first wins), moved out to
  // the caller: later calls return none. Call from the thread that opened the journal.
  std::vector<SampledReply> TakeReplayed() { return std::exchange(replayed_, {}); }

  // Queues the line for the writer thread; `on_commit` gets OK once it is synced, or the write
  // error (kInternal, sticky: later appends fail with it). reply.checkpoint is not recorded. The
  // line is dropped from memory once written.
  void AppendReply(ReplyRecord reply, CommitCallback on_commit) override;
  // Every reply synced so far (found on open or appended since; any checkpoint, recorded as
  // ""), one per prompt_id (the first wins), ordered by prompt_id. Reads them back from the
  // file, up to the last synced byte. Errors: ReadFile's; kDataLoss for a corrupt line.
  absl::StatusOr<std::vector<ReplyRecord>> Replies(const std::string& checkpoint) override;

 private:
  SampleJournal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  absl::Status Replay(const SampleJournalHeader& header, const std::string& text);
  // The replies of the journal's `text` (its header line first), one per prompt_id.
  absl::StatusOr<std::vector<SampledReply>> ParseReplies(absl::string_view text) const;
  void WriterLoop();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const int fd_;
  std::vector<SampledReply> replayed_;
  std::thread writer_;
  mutable absl::Mutex mu_;
  std::vector<std::pair<ReplyRecord, CommitCallback>> pending_ ABSL_GUARDED_BY(mu_);
  // The file's length up to the end of the last synced batch: what Replies may read.
  size_t synced_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace hb
