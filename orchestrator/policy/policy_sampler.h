// PolicySampler: asks a policy (an OpenAI-compatible chat-completions endpoint) for one reply
// per task, asynchronously, through one PacedQueue (common/flow): at most the AdaptiveLimiter's
// window of calls in flight (within max_in_flight; AIMD on 429s, held for a Retry-After, paced
// from the policy's x-ratelimit-* headers; each reply read by llm/chat_reply_signal.h's
// ReplySignalOf), each task retried on a timer with
// exponential backoff and full jitter within RetryPolicy (common/retry) on connection errors,
// timeouts, 408/409/429/5xx and null content; 400/401/403/404 are final at once.
//
//   PolicySampler sampler(llm, scheduler, options, [&](PolicySampleResult r) { ... });
//   sampler.Add({prompt_id, body});  ...  sampler.Start();
//
// Thread-safety: every method is thread-safe. `on_done` runs once per task on the LLM client's
// or the scheduler's thread, never under the sampler's lock; it must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/clock.h"
#include "common/base/scheduler.h"
#include "common/flow/paced_queue.h"
#include "common/retry/retry_policy.h"
#include "llm/llm_client.h"

namespace hb {

struct PolicySampleTask {
  std::string prompt_id;
  std::string body;  // BuildPolicyRequestBody
};

struct PolicySampleResult {
  std::string prompt_id;
  // The reply, or the last failure: "<failure kind>: <message>" after `attempts` attempts.
  absl::StatusOr<ChatResult> reply;
  int attempts = 0;
};

struct PolicySamplerOptions {
  int max_in_flight = 64;
  // AIMD + Retry-After holds (AdaptiveLimiter); false keeps max_in_flight calls outstanding.
  bool adaptive = true;
  RetryPolicy retry;
  absl::Duration attempt_timeout = absl::Seconds(300);
  // Not owned.
  Clock* clock = &Clock::Real();
  // Uniform draws in [0, 1] for the backoff jitter; called under the sampler's lock.
  std::function<double()> jitter;
};

struct PolicySamplerStats {
  int64_t in_flight = 0;
  int64_t queued = 0;   // waiting for a slot or a backoff timer
  int64_t retries = 0;  // attempts after a task's first
  int64_t window = 0;
  ChatUsage usage;  // summed over successful replies
};

class PolicySampler {
 public:
  using DoneCallback = std::function<void(PolicySampleResult)>;

  // `llm` and `scheduler` are not owned and must outlive the sampler and its calls.
  PolicySampler(LlmClient& llm, Scheduler& scheduler, PolicySamplerOptions options,
                DoneCallback on_done);
  // Every task must be done (Pending() == 0): calls and retry timers capture the sampler.
  ~PolicySampler();

  // Queues a task; it starts when a slot is free (after Start).
  void Add(PolicySampleTask task);
  // Starts dispatching (and dispatches tasks added later as slots free up).
  void Start();
  // Stops dispatching for good: tasks not started (queued, or waiting for a retry: its timer is
  // cancelled) are dropped without a call to `on_done`, calls in flight are cancelled
  // (LlmClient::Cancel) and a failed attempt is not retried (its task is done with that
  // failure, e.g. kCancelled). Calls in flight still end in `on_done`.
  void Stop();
  // Tasks added and not yet done.
  int64_t Pending() const;
  // Blocks until Pending() == 0 (after Stop: once the calls in flight ended).
  void WaitIdle() const;
  PolicySamplerStats Stats() const;

 private:
  struct Entry {
    PolicySampleTask task;
    int attempts = 0;
    std::string last_failure;
  };
  // Queues `entry` (kFront: a retry, ahead of the tasks not yet tried).
  void Enqueue(Entry entry, PacedQueue::Lane lane);
  void Launch(Entry entry, DispatchTicket ticket);
  void OnResult(uint64_t call_key, Entry entry, DispatchTicket ticket,
                absl::StatusOr<ChatResult> result);

  LlmClient& llm_;
  Scheduler& scheduler_;
  const PolicySamplerOptions options_;
  const DoneCallback on_done_;
  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int64_t pending_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t waiting_retry_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t retries_ ABSL_GUARDED_BY(mu_) = 0;
  // Calls in flight by a key of their own, with their id once Complete returned it (Stop
  // cancels them).
  uint64_t next_call_key_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, std::optional<LlmClient::CallId>> calls_ ABSL_GUARDED_BY(mu_);
  // Retry timers not fired yet, by a key of their own (Stop cancels them).
  uint64_t next_retry_key_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, Scheduler::TimerId> retry_timers_ ABSL_GUARDED_BY(mu_);
  ChatUsage usage_ ABSL_GUARDED_BY(mu_);
  // Declared last: destroyed (closed) first, while the fields its items touch still exist.
  PacedQueue queue_;
};

}  // namespace hb
