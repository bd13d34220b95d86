// InMemoryReplyJournal: the ReplyJournal double of the sampling engine (replies kept in order,
// each committed inline, or refused with the error the test set). Thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "orchestrator/policy/reply_journal.h"

namespace hb::testing {

class InMemoryReplyJournal final : public ReplyJournal {
 public:
  // Every later append fails with `status` (nothing is kept).
  void set_commit_error(absl::Status status) {
    absl::MutexLock lock(&mu_);
    error_ = std::move(status);
  }

  void AppendReply(ReplyRecord reply, CommitCallback on_commit) override {
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      status = error_;
      if (status.ok()) records_.push_back(std::move(reply));
    }
    if (on_commit) on_commit(status);
  }

  // Every committed reply of `checkpoint`, in commit order.
  absl::StatusOr<std::vector<ReplyRecord>> Replies(const std::string& checkpoint) override {
    absl::MutexLock lock(&mu_);
    std::vector<ReplyRecord> out;
    for (const ReplyRecord& record : records_) {
      if (record.checkpoint == checkpoint) out.push_back(record);
    }
    return out;
  }

 private:
  absl::Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::vector<ReplyRecord> records_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb::testing
