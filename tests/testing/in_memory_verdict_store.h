// InMemoryVerdictStore: the VerdictStore double of the run pipeline (rows kept in a map, commits
// inline or deferred until the test says so). Thread-safe.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "orchestrator/run/verdict_store.h"

namespace hb::testing {

// A VerdictStore in memory. Commits inline (the callback runs inside Append) unless
// `set_deferred(true)`, in which case rows wait for CommitPending().
class InMemoryVerdictStore final : public VerdictStore {
 public:
  void set_deferred(bool deferred) {
    absl::MutexLock lock(&mu_);
    deferred_ = deferred;
  }
  // Makes every later commit fail with `status`.
  void set_commit_error(absl::Status status) {
    absl::MutexLock lock(&mu_);
    commit_error_ = std::move(status);
  }
  void Preload(RowRecord row) {
    absl::MutexLock lock(&mu_);
    rows_[Key(row.key)] = std::move(row);
  }

  void Append(RowRecord row, CommitCallback on_commit) override {
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      ++appends_;
      if (deferred_) {
        queue_.emplace_back(std::move(row), std::move(on_commit));
        return;
      }
      status = CommitLocked(std::move(row));
    }
    if (on_commit) on_commit(status);
  }

  // Commits the deferred rows; returns how many.
  int CommitPending() {
    std::vector<std::pair<CommitCallback, absl::Status>> done;
    {
      absl::MutexLock lock(&mu_);
      for (auto& [row, cb] : queue_) done.emplace_back(std::move(cb), CommitLocked(std::move(row)));
      queue_.clear();
    }
    for (auto& [cb, status] : done) {
      if (cb) cb(status);
    }
    return static_cast<int>(done.size());
  }

  absl::Status Flush() override {
    CommitPending();
    absl::MutexLock lock(&mu_);
    return commit_error_;
  }

  absl::StatusOr<std::vector<RowRecord>> Rows(const std::string& checkpoint) override {
    absl::MutexLock lock(&mu_);
    std::vector<RowRecord> out;
    for (const auto& [key, row] : rows_) {
      if (row.key.checkpoint == checkpoint) out.push_back(row);
    }
    return out;
  }

  // Every committed row, keyed "checkpoint/prompt_id/index".
  std::map<std::string, RowRecord> rows() const {
    absl::MutexLock lock(&mu_);
    return rows_;
  }
  int appends() const {
    absl::MutexLock lock(&mu_);
    return appends_;
  }
  int queued() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(queue_.size());
  }

  static std::string Key(const RowKey& key) {
    return key.checkpoint + "/" + key.prompt_id + "/" + std::to_string(key.rubric_index);
  }

 private:
  absl::Status CommitLocked(RowRecord row) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!commit_error_.ok()) return commit_error_;
    auto it = rows_.find(Key(row.key));
    if (it != rows_.end() && it->second.ok) return absl::OkStatus();  // ok rows are final
    if (it != rows_.end()) row.attempts += it->second.attempts;
    rows_[Key(row.key)] = std::move(row);
    return absl::OkStatus();
  }

  mutable absl::Mutex mu_;
  bool deferred_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status commit_error_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<RowRecord, CommitCallback>> queue_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, RowRecord> rows_ ABSL_GUARDED_BY(mu_);
  int appends_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace hb::testing
