// ReplyJournal: where the sampling engine (policy_feed.h) makes each policy reply durable before
// handing it on, so a job killed at any point and started again never asks the policy for it
// again. Two implementations: `run --policy` journals replies in the run's SQLite journal
// (orchestrator/run/sqlite_verdict_store.h, beside the verdicts), `sample` in its JSONL journal
// beside the responses file (orchestrator/sample/sample_journal.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hb {

// One policy reply (a checkpoint's answer to one task).
struct ReplyRecord {
  // The run's checkpoint name; empty for `sample` (one policy per job).
  std::string checkpoint;
  std::string prompt_id;
  // The reply as one responses-file line (FormatSampledReply), opaque to the journal.
  std::string reply;
  absl::Time time = absl::UnixEpoch();
};

class ReplyJournal {
 public:
  // Runs once per appended reply, after it is durable (OK) or could not be written (the
  // journal's error), on the journal's writer thread; it must not block.
  using CommitCallback = std::function<void(const absl::Status& status)>;

  virtual ~ReplyJournal() = default;

  // Queues `reply` for the next durable write and returns at once. The first reply of a
  // (checkpoint, prompt_id) is kept; later ones are ignored. Thread-safe.
  virtual void AppendReply(ReplyRecord reply, CommitCallback on_commit) = 0;

  // Every committed reply of `checkpoint`, ordered by prompt_id. Thread-safe.
  virtual absl::StatusOr<std::vector<ReplyRecord>> Replies(const std::string& checkpoint) = 0;
};

}  // namespace hb
