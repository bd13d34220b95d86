// Dispatcher: sends planned rows to a GraderClient through the one PacedQueue (common/flow) with
// at most `max_in_flight` calls outstanding (with `adaptive_concurrency`, the queue's
// AdaptiveLimiter narrows that window and paces dispatch from the upstream rate-limit signals
// the graders relay, job-wide), retries rows that
// failed with a retryable code (after a backoff kept on a timer queue, never a sleeping thread),
// and records every outcome in a VerdictStore. A row counts as done only once the store committed
// it. Rows may arrive while it runs (AddRows, then CloseInput: `run --policy` grades a task's rows
// as soon as its reply is sampled).
//
//   Dispatcher dispatcher(&client, &store, options);
//   std::thread watcher([&] { WaitForSignal(); dispatcher.RequestStop(); });
//   DispatchStats stats = dispatcher.Run(std::move(rows));
//   // or: dispatcher.AddRows(...) from any thread, ..., dispatcher.CloseInput(); Run() meanwhile.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/clock.h"
#include "common/base/scheduler.h"
#include "common/base/thread_scheduler.h"
#include "common/flow/paced_queue.h"
#include "common/retry/retry_policy.h"
#include "grader_client/grader_client.h"
#include "orchestrator/report/run_metrics.h"
#include "orchestrator/run/row_plan.h"
#include "orchestrator/run/verdict_store.h"

namespace hb {

// Counters of one Run, as seen at one moment. Rows count once committed.
struct DispatchStats {
  // Rows given to this dispatcher so far (rows already ok in the journal excluded).
  int64_t planned_rows = 0;
  int64_t ok_rows = 0;
  int64_t failed_rows = 0;
  int64_t in_flight = 0;
  // Rows waiting for a retry timer.
  int64_t waiting_retry = 0;
  // Attempts started beyond each row's first.
  int64_t retries = 0;
  // Tokens spent upstream (verdict-cache hits excluded).
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  // Of ok_rows, those answered from the grader's verdict cache.
  int64_t from_cache_rows = 0;
  // Calls allowed in flight now: max_in_flight, or the adaptive window.
  int64_t window = 0;
  // Calls per second the adaptive pacing allows now; 0 when not pacing.
  double paced_rate = 0;
  // Replies that reported upstream 429s (rate_limited_attempts > 0, or RESOURCE_EXHAUSTED not
  // marked server-busy: a grader refusing past its own --max-concurrent-rpcs is not counted).
  int64_t rate_limited_replies = 0;
  // Time since Run started (by the injected clock).
  absl::Duration elapsed;
  // RequestStop was called.
  bool stopping = false;
  // Dispatching stopped because the last `stop_after_same_failures` finished rows all failed
  // with the same code (Dispatcher::last_failure() holds the last of them).
  bool gave_up = false;
};

struct DispatcherOptions {
  // Calls outstanding at most (>= 1).
  int max_in_flight = 512;
  // Adapt the window within [1, max_in_flight] and pace dispatch (AdaptiveLimiter) instead of
  // keeping max_in_flight calls outstanding. `limiter` configures it (its max_window and clock
  // are taken from this struct).
  bool adaptive_concurrency = false;
  AdaptiveLimiterOptions limiter;
  // Attempts per row, the first included (>= 1).
  int row_attempts = 3;
  // Deadline of each call.
  absl::Duration row_timeout = absl::Seconds(120);
  // Backoff before retry k (k = 1, 2, ...): BackoffCeiling (common/retry), i.e.
  // min(backoff_cap, backoff_base * 2^(k-1)), no jitter (round_robin already spreads retries
  // over replicas). An error carrying a retry delay (RetryDelay, common/retry/retry_status.h:
  // the upstream's Retry-After relayed by the grader) waits at least that long.
  absl::Duration backoff_base = absl::Milliseconds(250);
  absl::Duration backoff_cap = absl::Seconds(4);
  // After RequestStop, how long in-flight calls may finish before they are cancelled.
  absl::Duration drain_timeout = absl::Seconds(20);
  // Send each task's prompt_id as the upstream `prompt_cache_key` (--prompt-cache-key=prompt_id)
  // so its rubric items share OpenAI's prompt cache. Off by default, like the reference.
  bool send_prompt_cache_key = false;
  // Stop dispatching once this many rows in a row finished failed with the same status code: a
  // broken upstream or grader fails every row alike, and the rest would only burn time and
  // quota. Rows in flight still finish; rows not sent stay unrecorded (the next run grades
  // them). 0 never stops.
  int stop_after_same_failures = 0;
  // Called from Run's thread about every `progress_interval` and once at the end.
  std::function<void(const DispatchStats&)> on_progress;
  absl::Duration progress_interval = absl::Seconds(5);
  // Told of rows planned, recorded and retried, upstream 429s and tokens spent, as they happen
  // (outside the dispatcher's lock). Not owned; null: none.
  RunMetrics* metrics = nullptr;
  // Time source for backoff, drain and progress; not owned, must outlive the dispatcher.
  Clock* clock = &Clock::Real();
  // Where Run's wake-ups are timed (the next retry due, pacing, progress, the drain deadline),
  // by `clock`'s time: one timer at a time, cancelled before Run returns. Not owned; must
  // outlive the dispatcher. Null: the dispatcher runs its own ThreadScheduler (real time).
  // Tests pass a FakeScheduler over the FakeClock and fire its timers.
  Scheduler* scheduler = nullptr;
  // Called from Run's thread, with a snapshot of the stats, each time Run has nothing to do
  // until a reply, a commit, a timer or RequestStop. The hook tests wait on instead of polling
  // (tests/testing/dispatcher_watcher.h). Runs outside the dispatcher's lock.
  std::function<void(const DispatchStats&)> on_idle;
};

// The retry policy of rows: max_attempts = row_attempts, base/cap = backoff_base/backoff_cap.
// A row is retried when IsRetryableCode (common/retry/retry_status.h) holds for its error, after
// BackoffCeiling(RowRetryPolicy(options), attempts made). Pure.
RetryPolicy RowRetryPolicy(const DispatcherOptions& options);

class Dispatcher {
 public:
  // `client` and `store` are not owned and must outlive the dispatcher.
  Dispatcher(GraderClient* client, VerdictStore* store, DispatcherOptions options);
  // Drops the rows still queued (a dispatcher that never ran, e.g. the rest of a run whose probe
  // row failed) while the state their callbacks touch is alive.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Grades the rows added (AddRows) and returns once the input is closed (CloseInput) and each
  // row is recorded (ok or failed), or, after RequestStop,
  // once the calls in flight finished or were cancelled at the drain deadline (rows not
  // finished are not recorded: the next run grades them). Rows are sent in order; a retry
  // goes first once its backoff expired. A row that fails with a non-retryable code, or
  // exhausts `row_attempts`, is recorded as failed with the reason
  // "<CODE>: <message> (attempt N of M)". While the input is open and every row is recorded, Run
  // waits for more. Call once.
  //
  // Returns the final stats; `status()` afterwards holds the first journal write error (the run
  // stops dispatching at once when a commit fails).
  DispatchStats Run();
  // AddRows(rows), CloseInput(), Run().
  DispatchStats Run(std::vector<PlannedRow> rows);

  // Queues `rows` behind those added before. Thread-safe, non-blocking; callable before, during
  // or after Run (rows added after Run returned are never sent). The rows' pointers must stay
  // valid until Run returned.
  void AddRows(std::vector<PlannedRow> rows);
  // No rows will be added any more. Thread-safe, non-blocking.
  void CloseInput();

  // Stops dispatching (see Run). Thread-safe, non-blocking; callable from any thread.
  void RequestStop();

  // OK, or the first journal error. Valid after Run returned.
  absl::Status status() const;
  // The error of the row last recorded as failed (its final attempt's status), or OK when no
  // row failed. Thread-safe.
  absl::Status last_failure() const;
  // A snapshot of the counters. Thread-safe.
  DispatchStats Stats() const;

 private:
  struct RowState {
    // Attempts started.
    int attempts = 0;
  };
  struct Retry {
    absl::Time due;
    size_t row;
    bool operator>(const Retry& o) const { return due > o.due || (due == o.due && row > o.row); }
  };

  // Run's state from one turn of its loop to the next.
  struct RunClock {
    absl::Time next_progress;
    bool cancelled = false;  // in-flight rows were cancelled at the drain deadline
  };
  // What one turn of Run's loop does once mu_ is released (NextStepLocked decides it).
  struct RunStep {
    std::vector<size_t> due_retries;  // go ahead of the rows not sent yet
    bool close_queue = false;         // the run is stopping: no row is sent any more
    bool cancel_now = false;          // the drain deadline passed: cancel the rows in flight
    bool report_progress = false;     // on_progress(snapshot)
    bool idle = false;                // nothing changed: on_idle(snapshot), then wait for a change
    bool done = false;                // every row recorded, or the run stopped and drained
    DispatchStats snapshot;
  };

  // Run's decision for this turn: takes the due retries, starts draining once stopping, arms
  // the wake-up timer when there is nothing to do now.
  RunStep NextStepLocked(RunClock& clock) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the retries due at `now` out of retries_, counted as queued, into `due`.
  void TakeDueRetriesLocked(absl::Time now, std::vector<size_t>& due)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Acts on `step` (queue, hooks, cancelling); waits for a change when idle.
  void TakeStep(const RunStep& step) ABSL_LOCKS_EXCLUDED(mu_);
  // Closes the queue, waits out the timers and reports the final counters (Run's end).
  DispatchStats FinishRun() ABSL_LOCKS_EXCLUDED(mu_);
  DispatchStats StatsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes sure a timer wakes Run at `wake` (replacing a timer due at another time).
  void ArmWakeupLocked(absl::Time wake, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Cancels the wake-up timer and waits until no timer callback can still run.
  void DisarmWakeupLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool StoppingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Notes a change of the counters for Run, and wakes Run only when it may have to act on it
  // now: the run is stopping, or nothing is queued, in flight or awaiting its commit (the run
  // may be over). Rows starting and finishing mid-run change nothing Run does; waking it for each
  // cost a futex wake-up and a context switch per row. With an on_idle hook every change wakes
  // Run (tests wait for states through it). Retries, timers, RequestStop and new input wake Run
  // themselves.
  void ChangedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The queue's item for `row`: starts its next attempt when admitted.
  PacedQueue::Work RowWork(size_t row);
  void StartRow(size_t row, DispatchTicket ticket);
  void OnReply(size_t row, DispatchTicket ticket,
               absl::StatusOr<healthbench::grader::v1::GradeItemResponse> result);
  // Counts a finished row (OK: graded) towards the run of same-code failures.
  void CountFinishedLocked(const absl::Status& outcome) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Journals `record`; `code` is its outcome (OK when graded).
  void Record(RowRecord record, absl::StatusCode code);

  GraderClient* const client_;
  VerdictStore* const store_;
  const DispatcherOptions options_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  bool changed_ ABSL_GUARDED_BY(mu_) = false;
  // Null when options.scheduler was given. Declared after mu_: destroyed (joined) first.
  std::unique_ptr<ThreadScheduler> owned_scheduler_;
  Scheduler* const scheduler_;
  // The armed wake-up timer (0: none), when it is due, and the timer callbacks that may still
  // run (scheduled, neither fired nor cancelled).
  Scheduler::TimerId wake_timer_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time wake_due_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  uint64_t wake_generation_ ABSL_GUARDED_BY(mu_) = 0;
  int live_timers_ ABSL_GUARDED_BY(mu_) = 0;
  // Every attempt goes through it: rows in order, due retries ahead of them (Lane::kFront).
  // Closed once the run stops or ends. Declared after the scheduler: destroyed first.
  PacedQueue queue_;
  // Serializes AddRows, so rows enter the queue in the order added.
  absl::Mutex add_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<PlannedRow> rows_ ABSL_GUARDED_BY(mu_);
  std::vector<RowState> state_ ABSL_GUARDED_BY(mu_);
  bool input_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool queue_closed_ ABSL_GUARDED_BY(mu_) = false;
  // Retries waiting for their backoff (then pushed to the queue).
  std::priority_queue<Retry, std::vector<Retry>, std::greater<Retry>> retries_ ABSL_GUARDED_BY(mu_);
  // Attempts in the queue (neither started nor dropped), and the retries among them.
  int64_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t queued_retries_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // Replies still telling the queue (PacedQueue::Finish): Run does not return before they did.
  int64_t finishing_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t awaiting_commit_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t ok_rows_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t failed_rows_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t retry_count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t prompt_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t cached_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t from_cache_rows_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t completion_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rate_limited_replies_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time started_ ABSL_GUARDED_BY(mu_);
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  // When calls still in flight get cancelled (set by RequestStop).
  absl::Time drain_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Status last_failure_ ABSL_GUARDED_BY(mu_);
  // Rows finished in a row that failed with last_failure_'s code.
  int64_t same_failures_ ABSL_GUARDED_BY(mu_) = 0;
  bool gave_up_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace hb
