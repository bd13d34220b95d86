// PolicyFeed: the one sampling engine of `sample` and `run --policy`. It asks each policy (a
// PolicySource: one served model) for one reply per task it lacks, all policies at once, a
// PolicySampler each; journals every reply (ReplyJournal: the run's SQLite journal, or
// `sample`'s JSONL one) and hands it on once durable, so a job killed at any point and started
// again never asks for it again, and `run` grades a task's rubric rows while other tasks are
// still being sampled.
//
// The probe: each source's first task is sent once, without retries, alongside the others (the
// sampler gets one slot less, so --max-in-flight bounds both; with one slot it waits for the
// probe). Start returns once every probe answered: an unreachable URL, a refused key, an unknown
// model or a grader verdict as reply (CheckNotGraderVerdict: a grader route given as the
// policy) is Start's error, within seconds, with nothing journaled from that reply.
//
//   auto feed = PolicyFeed::Start(sources, tasks, journal, on_reply, on_finished);
//   ...  // on_reply(source, reply) per committed reply; on_finished() once every task is done
//   feed->Stop();  // stops asking, cancels the calls in flight, waits
//   feed->status(); feed->Failures();
//
// After Start a fatal error (a later reply that is a grader verdict, a journal write error)
// stops the sampling: status() holds it and on_finished runs, so the consumer wakes up and
// calls Stop.
//
// Thread-safety: every method is thread-safe. The callbacks run on the journal's writer thread
// or the LLM client's thread, never under the feed's lock; they must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/scheduler.h"
#include "common/healthbench/types.h"
#include "http/curl_http_client.h"
#include "llm/llm_client.h"
#include "orchestrator/policy/policy_options.h"
#include "orchestrator/policy/policy_sampler.h"
#include "orchestrator/policy/reply_journal.h"
#include "orchestrator/policy/sampled_reply.h"

namespace hb {

// One policy of a job.
struct PolicySource {
  // The run's checkpoint name (the journal's `checkpoint` of its replies, and the prefix of its
  // probe's error: "--policy NAME=MODEL@URL: ..."); empty for `sample`.
  std::string checkpoint;
  PolicyOptions options;
};

// What the run journal records as a policy checkpoint's identity in place of a responses
// file's sha256: "policy " + PolicySettingsFingerprint (model and every request setting). A
// journal is resumed only with the same identity: other settings would mix replies.
std::string PolicyJournalIdentity(const PolicySource& source);

// Where the feed's calls go: one LLM client per source and a scheduler for retry timers (not
// owned; they must outlive the feed).
struct PolicyClients {
  std::vector<LlmClient*> llms;
  Scheduler* scheduler = nullptr;
};

class PolicyFeed {
 public:
  // Runs once per reply, after the journal committed it.
  using ReplyCallback = std::function<void(size_t source, SampledReply reply)>;
  // Runs once: when every task of every source is done (committed, or failed for good), at
  // once from Start when there is nothing to sample, or at a fatal error.
  using FinishedCallback = std::function<void()>;

  // Samples tasks[i] (not owned; must outlive the feed) from sources[i] through a libcurl
  // client of the feed's own. Errors: the probe's (kFailedPrecondition naming the checkpoint
  // and the fix), a journal error, kInternal when the HTTP client cannot start. `journal` must
  // outlive the feed.
  static absl::StatusOr<std::unique_ptr<PolicyFeed>> Start(
      std::vector<PolicySource> sources, std::vector<std::vector<const Example*>> tasks,
      ReplyJournal& journal, ReplyCallback on_reply, FinishedCallback on_finished);

  // The same on the given clients (clients.llms[i] for sources[i]).
  static absl::StatusOr<std::unique_ptr<PolicyFeed>> StartOn(
      PolicyClients clients, std::vector<PolicySource> sources,
      std::vector<std::vector<const Example*>> tasks, ReplyJournal& journal, ReplyCallback on_reply,
      FinishedCallback on_finished);

  // Stop(), then releases the samplers.
  ~PolicyFeed();

  // Stops asking: tasks not started are dropped, calls in flight are cancelled when the feed
  // owns its client (else waited for), a reply that already arrived is still journaled and
  // handed on, and returns once no callback can run any more. on_finished does not run after
  // Stop unless it already had. Idempotent.
  void Stop();

  // OK, or the fatal error that stopped the sampling.
  absl::Status status() const;

  struct Progress {
    int64_t tasks = 0;  // tasks given to Start, every source
    int64_t done = 0;   // committed or failed
    int64_t in_flight = 0;
  };
  Progress progress() const;

  // One source's sampler figures, its probe included (in flight, usage).
  PolicySamplerStats SourceStats(size_t source) const;

  // The tasks that failed for good (after their attempts), with the reason, per source.
  std::vector<std::vector<PolicySampleResult>> Failures() const;

 private:
  struct Source;
  PolicyFeed(std::vector<PolicySource> sources, ReplyJournal& journal, ReplyCallback on_reply,
             FinishedCallback on_finished);
  absl::Status Begin(PolicyClients clients, std::vector<std::vector<const Example*>> tasks);
  void SendProbe(size_t source, const Example& task);
  void OnProbe(size_t source, PolicySampleTask task, absl::StatusOr<ChatResult> result);
  void OnResult(size_t source, PolicySampleResult result);
  void Journal(size_t source, SampledReply reply);
  // Conditions of mu_.Await.
  bool ProbesAnsweredOrFailed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NoCallbackLeft() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the first fatal error and wakes the consumer (on_finished).
  void Fail(absl::Status error);
  // A task is done; runs on_finished after the last.
  void TaskDone();
  // Runs on_finished unless it ran or the feed stopped.
  void FinishOnce();

  ReplyJournal& journal_;
  const ReplyCallback on_reply_;
  const FinishedCallback on_finished_;
  // Set by Start (the feed's own client); null with StartOn.
  std::unique_ptr<CurlMultiHttpClient> http_;
  std::vector<std::unique_ptr<LlmClient>> owned_llms_;
  std::vector<std::unique_ptr<Source>> sources_;

  mutable absl::Mutex mu_;
  int64_t tasks_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  // Probes sent and not answered.
  int64_t probes_out_ ABSL_GUARDED_BY(mu_) = 0;
  // Replies handed to the journal whose commit callback has not run yet.
  int64_t committing_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status fatal_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<PolicySampleResult>> failures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
