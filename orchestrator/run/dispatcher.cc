#include "orchestrator/run/dispatcher.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/retry/retry_after.h"
#include "common/retry/retry_status.h"
#include "grader_client/reply_signal.h"
#include "orchestrator/run/row_request.h"

namespace hb {

using healthbench::grader::v1::GradeItemRequest;
using healthbench::grader::v1::GradeItemResponse;

RetryPolicy RowRetryPolicy(const DispatcherOptions& options) {
  RetryPolicy policy;
  policy.max_attempts = options.row_attempts;
  policy.base = options.backoff_base;
  policy.cap = options.backoff_cap;
  return policy;
}

namespace {

PacedQueueOptions QueueOptions(const DispatcherOptions& options) {
  PacedQueueOptions queue;
  queue.max_in_flight = std::max(1, options.max_in_flight);
  queue.adaptive = options.adaptive_concurrency;
  queue.limiter = options.limiter;
  queue.start_paused = true;  // Run starts it
  queue.clock = options.clock;
  return queue;
}

}  // namespace

Dispatcher::Dispatcher(GraderClient* client, VerdictStore* store, DispatcherOptions options)
    : client_(client),
      store_(store),
      options_(std::move(options)),
      owned_scheduler_(options_.scheduler == nullptr ? std::make_unique<ThreadScheduler>()
                                                     : nullptr),
      scheduler_(options_.scheduler != nullptr ? options_.scheduler : owned_scheduler_.get()),
      queue_(*scheduler_, QueueOptions(options_)) {}

Dispatcher::~Dispatcher() { queue_.Close("the dispatcher was destroyed"); }

void Dispatcher::RequestStop() {
  absl::MutexLock lock(&mu_);
  if (!stop_requested_) drain_deadline_ = options_.clock->Now() + options_.drain_timeout;
  stop_requested_ = true;
  changed_ = true;
  cv_.SignalAll();
}

void Dispatcher::ArmWakeupLocked(absl::Time wake, absl::Time now) {
  if (wake_timer_ != 0 && wake_due_ == wake) return;
  DisarmWakeupLocked();
  const uint64_t generation = ++wake_generation_;
  ++live_timers_;
  wake_due_ = wake;
  wake_timer_ = scheduler_->Schedule(wake - now, [this, generation] {
    absl::MutexLock lock(&mu_);
    --live_timers_;
    if (generation == wake_generation_) wake_timer_ = 0;
    changed_ = true;
    cv_.SignalAll();
  });
}

void Dispatcher::DisarmWakeupLocked() {
  if (wake_timer_ != 0 && scheduler_->CancelTimer(wake_timer_)) --live_timers_;
  wake_timer_ = 0;
  wake_due_ = absl::InfiniteFuture();
}

absl::Status Dispatcher::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

absl::Status Dispatcher::last_failure() const {
  absl::MutexLock lock(&mu_);
  return last_failure_;
}

DispatchStats Dispatcher::Stats() const {
  absl::MutexLock lock(&mu_);
  return StatsLocked();
}

DispatchStats Dispatcher::StatsLocked() const {
  DispatchStats stats;
  stats.planned_rows = static_cast<int64_t>(rows_.size());
  stats.ok_rows = ok_rows_;
  stats.failed_rows = failed_rows_;
  stats.in_flight = in_flight_;
  stats.waiting_retry = static_cast<int64_t>(retries_.size()) + queued_retries_;
  stats.retries = retry_count_;
  stats.prompt_tokens = prompt_tokens_;
  stats.cached_tokens = cached_tokens_;
  stats.from_cache_rows = from_cache_rows_;
  stats.completion_tokens = completion_tokens_;
  stats.rate_limited_replies = rate_limited_replies_;
  const PacedQueueStats queue = queue_.Stats();
  stats.window = queue.window;
  stats.paced_rate = queue.paced_rate;
  stats.elapsed = options_.clock->Now() - started_;
  stats.stopping = stop_requested_;
  stats.gave_up = gave_up_;
  return stats;
}

void Dispatcher::AddRows(std::vector<PlannedRow> rows) {
  if (rows.empty()) return;
  if (options_.metrics != nullptr) options_.metrics->RowsPlanned(static_cast<int64_t>(rows.size()));
  absl::MutexLock add_lock(&add_mu_);
  size_t first;
  {
    absl::MutexLock lock(&mu_);
    first = rows_.size();
    rows_.insert(rows_.end(), std::make_move_iterator(rows.begin()),
                 std::make_move_iterator(rows.end()));
    state_.resize(rows_.size());
    queued_ += static_cast<int64_t>(rows_.size() - first);
    changed_ = true;
    cv_.SignalAll();
  }
  std::vector<PacedQueue::Work> works;
  works.reserve(rows.size());
  for (size_t row = first; row < first + rows.size(); ++row) works.push_back(RowWork(row));
  queue_.PushAll(std::move(works));
}

void Dispatcher::CloseInput() {
  absl::MutexLock lock(&mu_);
  input_closed_ = true;
  changed_ = true;
  cv_.SignalAll();
}

DispatchStats Dispatcher::Run(std::vector<PlannedRow> rows) {
  AddRows(std::move(rows));
  CloseInput();
  return Run();
}

bool Dispatcher::StoppingLocked() const { return stop_requested_ || !status_.ok() || gave_up_; }

void Dispatcher::ChangedLocked() {
  changed_ = true;
  const bool quiet = queued_ == 0 && in_flight_ == 0 && finishing_ == 0 && awaiting_commit_ == 0;
  if (options_.on_idle || StoppingLocked() || quiet) cv_.SignalAll();
}

DispatchStats Dispatcher::Run() {
  RunClock clock;
  {
    absl::MutexLock lock(&mu_);
    started_ = options_.clock->Now();
    clock.next_progress = started_ + options_.progress_interval;
  }
  queue_.Start();
  while (true) {
    RunStep step;
    {
      absl::MutexLock lock(&mu_);
      step = NextStepLocked(clock);
    }
    if (step.done) break;
    TakeStep(step);
  }
  return FinishRun();
}

Dispatcher::RunStep Dispatcher::NextStepLocked(RunClock& clock) {
  RunStep step;
  const absl::Time now = options_.clock->Now();
  const bool stopping = StoppingLocked();
  if (stopping && drain_deadline_ == absl::InfiniteFuture()) {
    drain_deadline_ = now + options_.drain_timeout;  // a journal error, or gave up
  }
  if (stopping && !queue_closed_) {
    queue_closed_ = true;  // rows not sent stay unrecorded
    step.close_queue = true;
  }
  if (!stopping) TakeDueRetriesLocked(now, step.due_retries);
  if (!step.due_retries.empty() || step.close_queue) return step;
  const bool all_recorded = input_closed_ && queued_ == 0 && retries_.empty();
  if (in_flight_ == 0 && awaiting_commit_ == 0 && finishing_ == 0 && (stopping || all_recorded)) {
    step.done = true;
    return step;
  }
  if (stopping && !clock.cancelled && in_flight_ > 0 && now >= drain_deadline_) {
    clock.cancelled = true;
    step.cancel_now = true;
  }
  if (now >= clock.next_progress) {
    step.report_progress = true;
    step.snapshot = StatsLocked();
    clock.next_progress = now + options_.progress_interval;
  }
  if (step.cancel_now || step.report_progress) return step;
  absl::Time wake = clock.next_progress;
  if (!stopping && !retries_.empty()) wake = std::min(wake, retries_.top().due);
  if (stopping && !clock.cancelled && in_flight_ > 0) wake = std::min(wake, drain_deadline_);
  ArmWakeupLocked(wake, now);
  step.idle = !changed_;
  if (step.idle) step.snapshot = StatsLocked();
  changed_ = false;
  return step;
}

void Dispatcher::TakeDueRetriesLocked(absl::Time now, std::vector<size_t>& due) {
  while (!retries_.empty() && retries_.top().due <= now) {
    due.push_back(retries_.top().row);
    retries_.pop();
  }
  queued_ += static_cast<int64_t>(due.size());
  queued_retries_ += static_cast<int64_t>(due.size());
  queue_.SetPendingDemand(static_cast<int64_t>(retries_.size()));
}

void Dispatcher::TakeStep(const RunStep& step) {
  if (step.close_queue) queue_.Close("the run is stopping");
  // Due retries go ahead of the rows not sent yet, in the order they became due.
  if (!step.due_retries.empty()) {
    std::vector<PacedQueue::Work> works;
    for (size_t row : step.due_retries) works.push_back(RowWork(row));
    queue_.PushAll(std::move(works), PacedQueue::Lane::kFront);
  }
  if (step.idle) {
    if (options_.on_idle) options_.on_idle(step.snapshot);
    absl::MutexLock lock(&mu_);
    while (!changed_) cv_.Wait(&mu_);
    changed_ = false;
  }
  if (step.cancel_now) client_->CancelAll();
  if (step.report_progress && options_.on_progress) options_.on_progress(step.snapshot);
}

DispatchStats Dispatcher::FinishRun() {
  // No row is being started on another thread once this returns.
  queue_.Close("the run ended");
  {
    absl::MutexLock lock(&mu_);
    DisarmWakeupLocked();
    // A timer callback that already started touches mu_: let it finish first.
    while (live_timers_ > 0) cv_.Wait(&mu_);
  }
  DispatchStats final_stats = Stats();
  if (options_.on_progress) options_.on_progress(final_stats);
  return final_stats;
}

PacedQueue::Work Dispatcher::RowWork(size_t row) {
  return [this, row](absl::StatusOr<DispatchTicket> ticket) {
    if (ticket.ok()) return StartRow(row, *ticket);
    absl::MutexLock lock(&mu_);  // dropped: the run stopped or ended before it was sent
    --queued_;
    if (state_[row].attempts > 0) --queued_retries_;
    ChangedLocked();
  };
}

void Dispatcher::StartRow(size_t row, DispatchTicket ticket) {
  std::optional<GradeItemRequest> request;
  {
    absl::MutexLock lock(&mu_);
    --queued_;
    const bool retry = state_[row].attempts > 0;
    if (retry) --queued_retries_;
    ChangedLocked();
    if (!StoppingLocked()) {
      if (retry) ++retry_count_;
      const int attempt = ++state_[row].attempts;
      ++in_flight_;
      request = BuildGradeItemRequest(rows_[row], attempt, options_.send_prompt_cache_key);
    }
  }
  if (!request.has_value()) {
    // Stopping: nothing more is sent (Run closes the queue too; this spares the rows queued
    // behind this one a pass through the queue).
    queue_.Finish(ticket, ReplySignal{});
    queue_.Close("the run is stopping");
    return;
  }
  // Outside the lock: a client may answer inline.
  client_->GradeItem(*request, options_.row_timeout,
                     [this, row, ticket](absl::StatusOr<GradeItemResponse> result) {
                       OnReply(row, ticket, std::move(result));
                     });
}

void Dispatcher::OnReply(size_t row, DispatchTicket ticket,
                         absl::StatusOr<GradeItemResponse> result) {
  const ReplySignal signal = ReplySignalOf(result);
  RowRecord record;
  bool record_it = false;
  std::optional<absl::StatusCode> retried;  // the code of a row sent again
  absl::StatusCode outcome = absl::StatusCode::kOk;
  {
    absl::MutexLock lock(&mu_);
    --in_flight_;
    ++finishing_;
    const PlannedRow& planned = rows_[row];
    const int attempts = state_[row].attempts;
    if (signal.rate_limited) ++rate_limited_replies_;
    record.key = planned.Key();
    record.attempts = attempts;
    record.time = options_.clock->Now();
    if (result.ok()) {
      CountFinishedLocked(absl::OkStatus());
      record_it = true;
      record.ok = true;
      record.criteria_met = result->criteria_met();
      record.explanation = result->explanation();
      record.prompt_tokens = result->usage().prompt_tokens();
      record.cached_tokens = result->usage().cached_prompt_tokens();
      record.completion_tokens = result->usage().completion_tokens();
      record.from_cache = result->from_cache();
      record.simulated = result->simulated();
    } else {
      const absl::Status& error = result.status();
      const bool retryable = IsRetryableCode(error.code());
      if (StoppingLocked()) {
        // Interrupted: the row stays unrecorded and is graded by the next run, unless it has
        // really used up its attempts.
        record_it = !(error.code() == absl::StatusCode::kCancelled ||
                      (retryable && attempts < options_.row_attempts));
      } else if (retryable && attempts < options_.row_attempts) {
        const RetryPolicy policy = RowRetryPolicy(options_);
        // A grader's retry delay is honoured up to max_retry_after, never beyond.
        const absl::Duration backoff =
            WaitOutRetryAfter(policy, BackoffCeiling(policy, attempts), signal.retry_after).delay;
        retries_.push(Retry{options_.clock->Now() + backoff, row});
        retried = error.code();
        cv_.SignalAll();  // Run times the retry
      } else {
        record_it = true;
      }
      if (record_it) {
        record.ok = false;
        outcome = error.code();
        CountFinishedLocked(error);
        record.error = absl::StrCat(absl::StatusCodeToString(error.code()), ": ", error.message(),
                                    " (attempt ", attempts, " of ", options_.row_attempts, ")");
      }
    }
    if (record_it) ++awaiting_commit_;
    ChangedLocked();
  }
  if (options_.metrics != nullptr) {
    if (signal.rate_limited) options_.metrics->RateLimited();
    if (retried.has_value()) options_.metrics->RowRetried(*retried);
  }
  // Outside the lock: the queue may start the next row on this thread.
  queue_.Finish(ticket, signal);
  {
    absl::MutexLock lock(&mu_);
    --finishing_;
    ChangedLocked();
  }
  if (record_it) Record(std::move(record), outcome);
}

void Dispatcher::CountFinishedLocked(const absl::Status& outcome) {
  if (outcome.ok()) {
    same_failures_ = 0;
    return;
  }
  const bool same = same_failures_ > 0 && outcome.code() == last_failure_.code();
  same_failures_ = same ? same_failures_ + 1 : 1;
  last_failure_ = outcome;
  if (options_.stop_after_same_failures > 0 &&
      same_failures_ >= options_.stop_after_same_failures) {
    gave_up_ = true;
  }
}

void Dispatcher::Record(RowRecord record, absl::StatusCode code) {
  const bool ok = record.ok;
  const bool from_cache = record.from_cache;
  // Spent tokens only: a cache hit's counts are what it saved.
  const int64_t prompt_tokens = from_cache ? 0 : record.prompt_tokens;
  const int64_t cached_tokens = from_cache ? 0 : record.cached_tokens;
  const int64_t completion_tokens = from_cache ? 0 : record.completion_tokens;
  store_->Append(std::move(record), [this, ok, code, from_cache, prompt_tokens, cached_tokens,
                                     completion_tokens](const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    --awaiting_commit_;
    if (!status.ok() && status_.ok()) status_ = status;
    ChangedLocked();
    if (!status.ok()) return;
    if (ok) {
      ++ok_rows_;
      if (from_cache) ++from_cache_rows_;
    } else {
      ++failed_rows_;
    }
    prompt_tokens_ += prompt_tokens;
    cached_tokens_ += cached_tokens;
    completion_tokens_ += completion_tokens;
    // Under the lock: once it is released Run may return and the dispatcher go.
    if (options_.metrics != nullptr) {
      options_.metrics->RowRecorded(code, from_cache);
      options_.metrics->TokensSpent(prompt_tokens, cached_tokens, completion_tokens);
    }
  });
}

}  // namespace hb
