#include "orchestrator/policy/policy_sampler.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "llm/chat_reply_signal.h"

namespace hb {
namespace {

PacedQueueOptions QueueOptions(const PolicySamplerOptions& options) {
  PacedQueueOptions queue;
  queue.max_in_flight = options.max_in_flight;
  queue.adaptive = options.adaptive;
  queue.start_paused = true;
  queue.clock = options.clock;
  return queue;
}

}  // namespace

PolicySampler::PolicySampler(LlmClient& llm, Scheduler& scheduler, PolicySamplerOptions options,
                             DoneCallback on_done)
    : llm_(llm),
      scheduler_(scheduler),
      options_(std::move(options)),
      on_done_(std::move(on_done)),
      queue_(scheduler, QueueOptions(options_)) {}

PolicySampler::~PolicySampler() { queue_.Close("the sampler was destroyed"); }

void PolicySampler::Add(PolicySampleTask task) {
  {
    absl::MutexLock lock(&mu_);
    ++pending_;
  }
  Enqueue(Entry{std::move(task), 0, ""}, PacedQueue::Lane::kBack);
}

void PolicySampler::Enqueue(Entry entry, PacedQueue::Lane lane) {
  queue_.Push(
      [this, entry = std::move(entry)](absl::StatusOr<DispatchTicket> ticket) mutable {
        if (ticket.ok()) return Launch(std::move(entry), *ticket);
        absl::MutexLock lock(&mu_);  // dropped (Stop): done without a call to on_done
        --pending_;
      },
      lane);
}

void PolicySampler::Start() { queue_.Start(); }

void PolicySampler::Stop() {
  absl::flat_hash_map<uint64_t, Scheduler::TimerId> timers;
  std::vector<LlmClient::CallId> calls;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    timers = retry_timers_;
    for (const auto& [key, id] : calls_) {
      if (id.has_value()) calls.push_back(*id);
    }
  }
  queue_.Close("the sampler stopped");
  for (LlmClient::CallId id : calls) llm_.Cancel(id);
  // Outside the lock: a timer that already fires waits for it (its task then meets the closed
  // queue and is dropped there).
  for (const auto& [key, timer] : timers) {
    if (!scheduler_.CancelTimer(timer)) continue;
    absl::MutexLock lock(&mu_);
    retry_timers_.erase(key);
    --waiting_retry_;
    --pending_;
  }
}

int64_t PolicySampler::Pending() const {
  absl::MutexLock lock(&mu_);
  return pending_;
}

void PolicySampler::WaitIdle() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](const int64_t* pending) { return *pending == 0; }, &pending_));
}

PolicySamplerStats PolicySampler::Stats() const {
  const PacedQueueStats queue = queue_.Stats();
  absl::MutexLock lock(&mu_);
  PolicySamplerStats stats;
  stats.in_flight = queue.in_flight;
  stats.queued = queue.queued + waiting_retry_;
  stats.retries = retries_;
  stats.window = queue.window;
  stats.usage = usage_;
  return stats;
}

void PolicySampler::Launch(Entry entry, DispatchTicket ticket) {
  ++entry.attempts;
  ChatRequest request;
  request.body = entry.task.body;
  request.timeout = options_.attempt_timeout;
  uint64_t key;
  {
    absl::MutexLock lock(&mu_);
    key = next_call_key_++;
    calls_.emplace(key, std::nullopt);
  }
  const LlmClient::CallId id = llm_.Complete(
      std::move(request),
      [this, key, entry = std::move(entry), ticket](absl::StatusOr<ChatResult> result) mutable {
        OnResult(key, std::move(entry), ticket, std::move(result));
      });
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(key);
  if (it != calls_.end()) it->second = id;  // else: already answered (maybe inline)
}

void PolicySampler::OnResult(uint64_t call_key, Entry entry, DispatchTicket ticket,
                             absl::StatusOr<ChatResult> result) {
  queue_.Finish(ticket, ReplySignalOf(result));
  std::optional<PolicySampleResult> done;
  {
    absl::MutexLock lock(&mu_);
    calls_.erase(call_key);
    if (result.ok()) {
      usage_ += result->usage;
      done = PolicySampleResult{entry.task.prompt_id, std::move(result), entry.attempts};
    } else {
      const AttemptOutcome outcome = AttemptOutcomeOf(result.status());
      entry.last_failure =
          absl::StrCat(FailureKindName(outcome.kind), ": ", result.status().message());
      const absl::Time now = options_.clock->Now();
      const RetryDecision decision =
          Decide(options_.retry, entry.attempts, outcome, now, absl::InfiniteFuture(),
                 options_.jitter ? options_.jitter() : 1.0);
      if (decision.retry && !stopped_) {
        ++retries_;
        ++waiting_retry_;
        auto requeue = std::make_shared<Entry>(std::move(entry));
        const uint64_t key = next_retry_key_++;
        retry_timers_[key] = scheduler_.Schedule(decision.delay, [this, requeue, key] {
          {
            absl::MutexLock timer_lock(&mu_);
            retry_timers_.erase(key);
            --waiting_retry_;
          }
          // After Stop the queue drops it (and counts it done).
          Enqueue(std::move(*requeue), PacedQueue::Lane::kFront);
        });
      } else {
        done = PolicySampleResult{
            entry.task.prompt_id,
            absl::Status(result.status().code(),
                         absl::StrCat("after ", entry.attempts, " attempt(s) (", decision.detail,
                                      "): ", entry.last_failure)),
            entry.attempts};
      }
    }
  }
  if (done.has_value()) {
    on_done_(*std::move(done));
    absl::MutexLock lock(&mu_);  // after on_done_: Pending() == 0 means every result was handed
    --pending_;
  }
}

}  // namespace hb
