// ResultCache: graded results by submission key (the task's TaskCacheId, sha256 of the reply,
// grader fingerprint), bounded in entries with least-recently-used eviction, so a resubmitted reply
// is answered without calling the judge again.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "environment/environment.h"

namespace hb::env {

// What a task is graded on: "<prompt_id>#<sha256 of its conversation and rubric>" (every
// message's role and content; every rubric item's points as printed, criterion, tags and
// rendering), so that two splits holding one prompt_id with different rubrics (HealthBench's
// main and Consensus) have different ids, and splits holding the same record share one.
std::string TaskCacheId(const Example& example);

// The cache key of one submission: `task` (TaskCacheId), sha256 of `reply` and
// `grader_fingerprint` (IdentityFingerprint of the grader, grader/grader_identity.h), joined so
// that no two different triples collide.
std::string SubmissionKey(absl::string_view task, absl::string_view reply,
                          absl::string_view grader_fingerprint);

// Where cached results outlive the process (SqliteResultStore), written through by ResultCache.
class ResultStore {
 public:
  virtual ~ResultStore() = default;
  // Every stored (key, result), oldest first.
  virtual absl::StatusOr<std::vector<std::pair<std::string, SubmitResult>>> LoadAll() = 0;
  // Stores or replaces; drops. Failures are logged, never fatal (the cache is an optimisation).
  // Thread-safe.
  virtual void Put(const std::string& key, const SubmitResult& result) = 0;
  virtual void Erase(const std::string& key) = 0;
};

class ResultCache {
 public:
  // Holds at most `max_entries` results; 0 disables the cache (Find never hits, Put drops).
  // `store` (optional, not owned, must outlive the cache) receives every Put and eviction.
  explicit ResultCache(size_t max_entries, ResultStore* store = nullptr)
      : max_entries_(max_entries), store_(store) {}

  // Fills the cache from `store` (the newest entries when it holds more than fit), without
  // writing back. Errors: the store's.
  absl::Status Preload();

  // The result stored under `key` (marked most recently used), or nullopt. Thread-safe; the
  // lock is held only to find the entry, the copy is made after.
  std::optional<SubmitResult> Find(const std::string& key);
  // Stores `result` under `key`, evicting the least recently used entry when full. Thread-safe.
  void Put(const std::string& key, SubmitResult result);
  size_t size() const;

 private:
  // Results are immutable once stored; shared so that Find copies outside the lock.
  using Entry = std::pair<std::string, std::shared_ptr<const SubmitResult>>;
  void Insert(const std::string& key, SubmitResult result, bool write_through);

  const size_t max_entries_;
  ResultStore* const store_;
  mutable absl::Mutex mu_;
  // Most recently used first.
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb::env
