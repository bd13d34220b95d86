// HealthBenchEnvironment: the Environment that grades. Datasets are loaded at start as named
// splits; a submitted reply is graded item by item through a GraderClient (in-process or
// hb-grader replicas), exactly as the orchestrator grades (the transcript is the task's
// messages plus the reply, no system prompt added) and scored with the reference's per-task
// score (common/grading/scoring.h).
//
// Splits may overlap: a task is (split, prompt_id), graded against the rubric of its own split
// (TaskRef in environment.h says how a request names one). Retries are idempotent and cheap:
// results are cached by SubmissionKey (the task's TaskCacheId, which hashes its conversation
// and rubric, the reply's sha256, the grader fingerprint) in a bounded LRU, so a reply graded
// against one split's rubric never answers for another split's rubric of the same prompt_id;
// identical submissions in flight at the same time share one grading. Load is controlled globally:
// judge calls go through one PacedQueue (common/flow), at most `max_upstream_in_flight` at once
// across every submission, paced by its AdaptiveLimiter on the relayed rate-limit signals, and a
// submission that would push the backlog past `max_pending` gradings is refused with
// kResourceExhausted (with a retry delay, marked server-busy: common/retry/retry_status.h) instead
// of queueing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/clock.h"
#include "common/base/rate_limited_log.h"
#include "common/base/scheduler.h"
#include "common/flow/paced_queue.h"
#include "common/grading/scoring.h"
#include "common/healthbench/dataset.h"
#include "environment/env_metrics.h"
#include "environment/environment.h"
#include "environment/result_cache.h"
#include "grader_client/grader_client.h"

namespace hb::env {

// One dataset given at start (`--split NAME=PATH`).
struct SplitSpec {
  std::string name;
  std::string path;
};

struct Split {
  std::string name;
  Dataset dataset;
};

// Loads every split with the orchestrator's loader (LoadDataset, strict). A prompt_id may be in
// several splits (each keeps its own record). Errors: the loader's (kInvalidArgument
// "<path>:<line>: ..." and file errors, a prompt_id twice in one file); kInvalidArgument for an
// empty or repeated split name.
absl::StatusOr<std::vector<Split>> LoadSplits(const std::vector<SplitSpec>& specs);

struct HealthBenchEnvironmentOptions {
  // A reply longer than this is kInvalidArgument.
  size_t max_reply_bytes = 1 << 20;
  // Gradings (distinct submissions being graded) admitted at once; more are refused with
  // kResourceExhausted marked MarkServerBusy (common/retry/retry_status.h).
  int64_t max_pending = 4096;
  // Judge calls in flight at once, across every submission.
  int max_upstream_in_flight = 512;
  // Adapt the window and pace dispatch from the upstream's rate-limit signals.
  bool adaptive = true;
  // The retry delay a kResourceExhausted refusal carries.
  absl::Duration backlog_retry_delay = absl::Seconds(1);
  // Timeout of one judge call when the submission has no deadline.
  absl::Duration item_timeout = absl::Minutes(10);
  // Result cache entries (0: no cache).
  size_t cache_entries = 100000;
  // IdentityFingerprint of the grader behind the client, plus the scoring options below when
  // set (ScoringFingerprint): part of every cache key.
  std::string grader_fingerprint;
  // simple-evals PR #108's length adjustment: when set, every result's tag_scores also holds
  // overall_score_length_adjusted (per task, unclipped).
  std::optional<LengthAdjustment> length_adjustment;
  // The reward is overall_score_length_adjusted instead of the raw score (--reward
  // length_adjusted; needs `length_adjustment`). reward_clipped clips whichever it is.
  bool reward_length_adjusted = false;
  // Where cached results persist (`--cache-db`); optional, not owned, must outlive the
  // environment.
  ResultStore* cache_store = nullptr;
};

// `grader_fingerprint` with the options' length adjustment and reward choice appended when set,
// so a result scored one way is never answered for another.
std::string ScoringFingerprint(const std::string& grader_fingerprint,
                               const HealthBenchEnvironmentOptions& options);

class HealthBenchEnvironment final : public Environment {
 public:
  // `grader`, `clock`, `scheduler` (pacing timers) and `metrics` (optional) are not owned and
  // must outlive the environment.
  HealthBenchEnvironment(std::vector<Split> splits, GraderClient& grader, Clock& clock,
                         Scheduler& scheduler, HealthBenchEnvironmentOptions options,
                         EnvMetrics* metrics = nullptr);
  // Fails every grading still queued or in flight with kCancelled (GraderClient::CancelAll)
  // and waits until their callbacks have run.
  ~HealthBenchEnvironment() override;

  std::vector<SplitInfo> ListSplits() const override;
  absl::StatusOr<std::vector<TaskSummary>> ListTasks(absl::string_view split, int64_t start,
                                                     int64_t stop) const override;
  absl::StatusOr<TaskPrompt> GetTask(const TaskRef& ref) const override;
  // Answers a cache hit inline (from_cache = true, zero usage). Identical submissions in
  // flight share the first one's grading, and so its `deadline`.
  void Submit(const TaskRef& ref, std::string reply, absl::Time deadline,
              SubmitCallback done) override;

  // Fills the result cache from options.cache_store (call once, before serving). Errors: the
  // store's.
  absl::Status LoadCache() { return cache_.Preload(); }

  // Judge calls in flight now and gradings admitted (tests, metrics).
  int64_t upstream_in_flight() const;
  int64_t pending() const;

  // The log of gradings that failed (one warning per failed grading, kind = its status code,
  // rate-limited: the operator hears why callers get errors, without a flood).
  RateLimitedLog& failure_log() { return failure_log_; }

 private:
  struct TaskLocation {
    size_t split = 0;
    size_t index = 0;
  };
  struct Grading;

  absl::StatusOr<TaskLocation> Resolve(const TaskRef& ref) const;
  absl::StatusOr<TaskLocation> ResolveId(const TaskRef& ref) const;
  // The position of split `name` in splits_, or kNotFound "unknown split 'name'".
  absl::StatusOr<size_t> SplitIndex(absl::string_view name) const;
  // "'a', 'b'": the splits of `locations`.
  std::string SplitNames(const std::vector<TaskLocation>& locations) const;
  const Example& ExampleAt(TaskLocation at) const;
  TaskSummary SummaryOf(TaskLocation at) const;
  // The dispatch queue's item for rubric item `item` of `grading`: starts its judge call when
  // admitted, ends the item when dropped.
  PacedQueue::Work ItemWork(std::shared_ptr<Grading> grading, size_t item);
  void StartItem(const std::shared_ptr<Grading>& grading, size_t item, DispatchTicket ticket);
  // `sent`: when the judge call started (for the slowest-call latency).
  void OnItemDone(const std::shared_ptr<Grading>& grading, size_t item, DispatchTicket ticket,
                  absl::Time sent,
                  absl::StatusOr<healthbench::grader::v1::GradeItemResponse> result);
  // One item of `grading` is over (`failure`: why it was not graded, OK otherwise); the last one
  // answers the grading's waiters.
  void ItemEnded(const std::shared_ptr<Grading>& grading, const absl::Status& failure);
  // Answers the waiters of a grading whose items are all over (and caches a result).
  void Complete(Grading& grading);
  // The rate-limited warning of a grading that failed with `status`.
  void LogFailure(const Grading& grading, const absl::Status& status);
  // Builds the result (or the failure) of a grading whose items have all come back.
  absl::StatusOr<SubmitResult> Finish(const Grading& grading) const;

  const std::vector<Split> splits_;
  // Every split's tasks of each prompt_id, in split order.
  absl::flat_hash_map<std::string, std::vector<TaskLocation>> by_id_;
  // TaskCacheId of every task, by split and index.
  std::vector<std::vector<std::string>> cache_ids_;
  GraderClient& grader_;
  Clock& clock_;
  const HealthBenchEnvironmentOptions options_;
  EnvMetrics* const metrics_;
  ResultCache cache_;
  RateLimitedLog failure_log_;
  // Every judge call goes through it, in submission order.
  PacedQueue dispatch_;

  mutable absl::Mutex mu_;
  // Gradings in progress by SubmissionKey (for in-flight de-duplication).
  absl::flat_hash_map<std::string, std::shared_ptr<Grading>> gradings_ ABSL_GUARDED_BY(mu_);
  // Identifies a grading's items in the dispatch queue (PacedQueue::Group).
  uint64_t next_grading_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Judge calls started whose callback has not returned.
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar idle_cv_;
};

}  // namespace hb::env
