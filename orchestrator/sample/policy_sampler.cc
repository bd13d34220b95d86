#include "orchestrator/sample/policy_sampler.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace hb {
namespace {

AdaptiveLimiterOptions LimiterOptions(const PolicySamplerOptions& options) {
  AdaptiveLimiterOptions limiter;
  limiter.max_window = options.max_in_flight;
  limiter.clock = options.clock;
  return limiter;
}

}  // namespace

PolicySampler::PolicySampler(LlmClient& llm, Scheduler& scheduler, PolicySamplerOptions options,
                             DoneCallback on_done)
    : llm_(llm),
      scheduler_(scheduler),
      options_(std::move(options)),
      on_done_(std::move(on_done)),
      limiter_(LimiterOptions(options_)) {}

PolicySampler::~PolicySampler() {
  Scheduler::TimerId timer;
  {
    absl::MutexLock lock(&mu_);
    timer = pace_timer_;
  }
  if (timer != 0) scheduler_.CancelTimer(timer);
}

void PolicySampler::Add(PolicySampleTask task) {
  {
    absl::MutexLock lock(&mu_);
    ++pending_;
    queue_.push_back(Entry{std::move(task), 0, ""});
  }
  Pump();
}

void PolicySampler::Start() {
  {
    absl::MutexLock lock(&mu_);
    started_ = true;
  }
  Pump();
}

void PolicySampler::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  pending_ -= static_cast<int64_t>(queue_.size());
  queue_.clear();
}

int64_t PolicySampler::Pending() const {
  absl::MutexLock lock(&mu_);
  return pending_;
}

PolicySamplerStats PolicySampler::Stats() const {
  absl::MutexLock lock(&mu_);
  PolicySamplerStats stats;
  stats.in_flight = in_flight_;
  stats.queued = static_cast<int64_t>(queue_.size()) + waiting_retry_;
  stats.retries = retries_;
  stats.window = options_.adaptive ? limiter_.Window() : options_.max_in_flight;
  stats.usage = usage_;
  return stats;
}

void PolicySampler::Pump() {
  std::vector<std::pair<Entry, DispatchTicket>> launch;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopped_) return;
    const absl::Time now = options_.clock->Now();
    while (!queue_.empty()) {
      const int window = options_.adaptive ? limiter_.Window() : options_.max_in_flight;
      if (in_flight_ >= window) break;
      const absl::Time next = options_.adaptive ? limiter_.NextDispatchTime() : now;
      if (next > now) {
        if (pace_timer_ == 0) {
          pace_timer_ = scheduler_.Schedule(next - now, [this] {
            {
              absl::MutexLock timer_lock(&mu_);
              pace_timer_ = 0;
            }
            Pump();
          });
        }
        break;
      }
      ++in_flight_;
      launch.emplace_back(std::move(queue_.front()), limiter_.OnDispatch());
      queue_.pop_front();
    }
  }
  for (auto& [entry, ticket] : launch) Launch(std::move(entry), ticket);
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
  std::optional<PolicySampleResult> done;
  {
    absl::MutexLock lock(&mu_);
    --in_flight_;
    ReplySignal signal;
    signal.ok = result.ok();
    signal.attempts = 1;
    AttemptOutcome outcome;
    if (result.ok()) {
      signal.tokens = result->usage.prompt_tokens + result->usage.completion_tokens;
      usage_ += result->usage;
    } else {
      outcome = AttemptOutcomeOf(result.status());
      signal.rate_limited = outcome.kind == FailureKind::kHttp429;
      if (signal.rate_limited) signal.retry_after = outcome.retry_after;
    }
    limiter_.OnReply(ticket, signal);
    if (result.ok()) {
      done = PolicySampleResult{entry.task.prompt_id, std::move(result), entry.attempts};
    } else {
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
            if (stopped_) {
              --pending_;
            } else {
              queue_.push_front(std::move(*requeue));
            }
          }
          Pump();
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
  Pump();
}

}  // namespace hb
