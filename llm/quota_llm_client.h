// QuotaLlmClient: an LlmClient that admits every upstream attempt through the fleet's quota
// (common/quota/fleet_quota.h) before handing it to the real client. It is the one place where
// a grading process's upstream calls are admitted: GraderStack wraps its OpenAiLlmClient in it
// when --quota-redis is given, so hb-grader, the embedded grader of `hb-orchestrator run` /
// meta-eval and hb-env all pass through it, retries included (hb::Grader calls Complete once
// per attempt).
//
// Per call: the estimate is the request body's bytes / 4 plus `max_output_tokens`; a granted
// call goes to the inner client at once, a refused one waits on a scheduler timer until the
// quota's not-before time and asks again (a wait past the request's deadline fails at once
// with kDeadlineExceeded). On the reply: usage settles the estimate (an error refunds it), the
// x-ratelimit-limit-requests / -tokens headers are learned, and a 429 with Retry-After pauses
// the whole budget.
//
// Thread-safe. `done` runs on the inner client's thread, or on the scheduler's for a call that
// never started (cancelled while waiting: inline in Cancel).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/base/clock.h"
#include "common/base/scheduler.h"
#include "common/quota/fleet_quota.h"
#include "llm/llm_client.h"

namespace hb {

struct QuotaLlmClientOptions {
  QuotaPriority priority = QuotaPriority::kBatch;
  // The grader's max_tokens (0 when the request sets none), added to each estimate.
  int64_t max_output_tokens = 0;
  // Not owned; must outlive the client.
  Clock* clock = &Clock::Real();
};

// Tokens a request is estimated to cost before its reply: body bytes / 4 + max_output_tokens.
int64_t EstimateTokens(const ChatRequest& request, int64_t max_output_tokens);

class QuotaLlmClient final : public LlmClient {
 public:
  // `inner`, `quota` and `scheduler` are not owned and must outlive this client; callers
  // cancel their calls before it goes.
  QuotaLlmClient(LlmClient& inner, FleetQuota& quota, Scheduler& scheduler,
                 QuotaLlmClientOptions options);

  CallId Complete(ChatRequest request, ChatCallback done) override;
  void Cancel(CallId id) override;

 private:
  struct Call {
    ChatRequest request;
    ChatCallback done;
    int64_t estimate = 0;
    // Waiting for a permit: its timer (0 while asking).
    Scheduler::TimerId timer = 0;
    // Started: the inner client's id (0 until Complete returned).
    bool started = false;
    CallId inner = 0;
    bool cancelled = false;
  };

  // Asks the quota for `id`'s permit: starts the call, or arms a timer to ask again.
  void TryStart(CallId id);
  void OnReply(CallId id, int64_t estimate, const absl::StatusOr<ChatResult>& result);

  LlmClient& inner_;
  FleetQuota& quota_;
  Scheduler& scheduler_;
  const QuotaLlmClientOptions options_;
  absl::Mutex mu_;
  CallId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<CallId, std::shared_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
