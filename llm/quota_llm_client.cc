#include "llm/quota_llm_client.h"

#include <algorithm>
#include <utility>

#include "common/retry/retry_policy.h"

namespace hb {
namespace {

absl::Status CancelledWhileWaiting() {
  AttemptOutcome outcome;
  outcome.kind = FailureKind::kCancelled;
  return WithAttemptOutcome(absl::CancelledError("cancelled while waiting for the fleet quota"),
                            outcome);
}

absl::Status NoPermitBeforeDeadline() {
  AttemptOutcome outcome;
  outcome.kind = FailureKind::kTimeout;
  return WithAttemptOutcome(
      absl::DeadlineExceededError("the fleet quota (--quota-redis) has no permit before the "
                                  "call's deadline: the budget is spent or paused by a 429"),
      outcome);
}

}  // namespace

int64_t EstimateTokens(const ChatRequest& request, int64_t max_output_tokens) {
  size_t bytes = request.body.size();
  if (!request.body_parts.empty()) {
    bytes = 0;
    for (const auto& part : request.body_parts) bytes += part->size();
  }
  return static_cast<int64_t>(bytes / 4) + max_output_tokens;
}

QuotaLlmClient::QuotaLlmClient(LlmClient& inner, FleetQuota& quota, Scheduler& scheduler,
                               QuotaLlmClientOptions options)
    : inner_(inner), quota_(quota), scheduler_(scheduler), options_(options) {}

LlmClient::CallId QuotaLlmClient::Complete(ChatRequest request, ChatCallback done) {
  auto call = std::make_shared<Call>();
  call->estimate = EstimateTokens(request, options_.max_output_tokens);
  call->request = std::move(request);
  call->done = std::move(done);
  CallId id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    calls_[id] = call;
  }
  TryStart(id);
  return id;
}

void QuotaLlmClient::TryStart(CallId id) {
  std::shared_ptr<Call> call;
  {
    absl::MutexLock lock(&mu_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    call = it->second;
    call->timer = 0;
  }
  const QuotaDecision decision = quota_.Acquire(call->estimate, options_.priority);
  absl::Status failure;
  ChatRequest request;
  {
    absl::MutexLock lock(&mu_);
    if (call->cancelled) {
      failure = CancelledWhileWaiting();
    } else if (!decision.granted && decision.not_before >= call->request.deadline) {
      failure = NoPermitBeforeDeadline();
    } else if (!decision.granted) {
      const absl::Duration wait =
          std::max(absl::ZeroDuration(), decision.not_before - options_.clock->Now());
      call->timer = scheduler_.Schedule(wait, [this, id] { TryStart(id); });
      return;
    } else {
      call->started = true;
      request = std::move(call->request);
    }
    if (!failure.ok()) calls_.erase(id);
  }
  if (!failure.ok()) {
    if (decision.granted) quota_.Settle(call->estimate, 0);
    call->done(failure);
    return;
  }
  const int64_t estimate = call->estimate;
  const CallId inner = inner_.Complete(
      std::move(request),
      [this, id, estimate](absl::StatusOr<ChatResult> result) { OnReply(id, estimate, result); });
  bool cancel = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = calls_.find(id);
    if (it != calls_.end()) {
      it->second->inner = inner;
      cancel = it->second->cancelled;
    }
  }
  if (cancel) inner_.Cancel(inner);
}

void QuotaLlmClient::OnReply(CallId id, int64_t estimate,
                             const absl::StatusOr<ChatResult>& result) {
  ChatCallback done;
  {
    absl::MutexLock lock(&mu_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    done = std::move(it->second->done);
    calls_.erase(it);
  }
  if (result.ok()) {
    quota_.Settle(estimate, result->usage.prompt_tokens + result->usage.completion_tokens);
    QuotaLimits limits;
    limits.rpm = result->rate_limit.limit_requests.value_or(0);
    limits.tpm = result->rate_limit.limit_tokens.value_or(0);
    quota_.Learn(limits);
  } else {
    quota_.Settle(estimate, 0);
    const AttemptOutcome outcome = AttemptOutcomeOf(result.status());
    if (outcome.kind == FailureKind::kHttp429 && outcome.retry_after.has_value()) {
      quota_.Pause(*outcome.retry_after);
    }
  }
  done(result);
}

void QuotaLlmClient::Cancel(CallId id) {
  std::shared_ptr<Call> call;
  CallId inner = 0;
  bool finish = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    call = it->second;
    if (call->started && call->inner != 0) {
      inner = call->inner;
    } else if (!call->started && call->timer != 0 && scheduler_.CancelTimer(call->timer)) {
      calls_.erase(it);
      finish = true;
    } else {
      call->cancelled = true;  // TryStart (asking now, or starting) ends it
    }
  }
  if (finish) call->done(CancelledWhileWaiting());
  if (inner != 0) inner_.Cancel(inner);
}

}  // namespace hb
