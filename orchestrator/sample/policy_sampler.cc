#include "orchestrator/sample/policy_sampler.h"

#include <memory>
#include <utility>

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
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  queue_.Close("the sampler stopped");
}

int64_t PolicySampler::Pending() const {
  absl::MutexLock lock(&mu_);
  return pending_;
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
  llm_.Complete(std::move(request), [this, entry = std::move(entry),
                                     ticket](absl::StatusOr<ChatResult> result) mutable {
    OnResult(std::move(entry), ticket, std::move(result));
  });
}

void PolicySampler::OnResult(Entry entry, DispatchTicket ticket,
                             absl::StatusOr<ChatResult> result) {
  queue_.Finish(ticket, ReplySignalOf(result));
  std::optional<PolicySampleResult> done;
  {
    absl::MutexLock lock(&mu_);
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
        scheduler_.Schedule(decision.delay, [this, requeue] {
          {
            absl::MutexLock timer_lock(&mu_);
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
