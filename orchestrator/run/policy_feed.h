// PolicyFeed: the sampling half of a pipelined `run --policy NAME=MODEL@URL`. It asks each
// policy checkpoint's served model for one reply per task it lacks, all policies at once
// (a PolicySampler each, on one libcurl client), journals every reply in the run's journal
// (ReplyJournal: the same SQLite file as the verdicts) and hands it on once committed, so the
// run grades a task's rubric rows while other tasks are still being sampled. A reply handed on
// is durable: a run killed at any point and started again never asks for it again.
//
//   auto feed = PolicyFeed::Start(sources, tasks, journal, on_reply, on_finished);
//   ...  // on_reply(source, reply) per committed reply; on_finished() once every task is done
//   feed->reset();  // or Stop(): stops asking, cancels the calls in flight, waits
//
// Thread-safety: Progress() and Failures() are thread-safe. The callbacks run on the journal's
// writer thread or the HTTP client's loop thread, never under the feed's lock; they must not
// block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/healthbench/types.h"
#include "http/curl_http_client.h"
#include "llm/openai_llm_client.h"
#include "orchestrator/run/verdict_store.h"
#include "orchestrator/sample/policy_sampler.h"
#include "orchestrator/sample/sample_command.h"
#include "orchestrator/sample/sample_journal.h"

namespace hb {

// One policy checkpoint of a run.
struct PolicySource {
  // The run's checkpoint name (the journal's `checkpoint` of its replies).
  std::string checkpoint;
  // Endpoint, request settings, API key, in flight, retries, timeouts; dataset, examples,
  // shard and out are not used (the run's tasks are given to Start).
  SampleOptions sampling;
};

// What the run journal records as a policy checkpoint's identity in place of a responses
// file's sha256: "policy " + PolicySettingsFingerprint (model and every request setting). A
// journal is resumed only with the same identity: other settings would mix replies.
std::string PolicyJournalIdentity(const PolicySource& source);

class PolicyFeed {
 public:
  // Runs once per reply, after the journal committed it (journal writer thread).
  using ReplyCallback = std::function<void(size_t source, SampledReply reply)>;
  // Runs once, when every task of every source is done (committed, or failed for good), or at
  // once from Start when there is nothing to sample.
  using FinishedCallback = std::function<void()>;

  // Samples tasks[i] (not owned; must outlive the feed) from sources[i]. First each source's
  // first task is sent alone (the probe, as `sample`'s): an unreachable URL, a refused key or
  // an unknown model fails here with kFailedPrecondition naming the checkpoint, before any
  // other request. kInternal when the HTTP client cannot start. `journal` must outlive the feed.
  static absl::StatusOr<std::unique_ptr<PolicyFeed>> Start(
      std::vector<PolicySource> sources, std::vector<std::vector<const Example*>> tasks,
      ReplyJournal& journal, ReplyCallback on_reply, FinishedCallback on_finished);

  // Stop(), then releases the samplers.
  ~PolicyFeed();

  // Stops asking: tasks not started are dropped, calls in flight are cancelled (a reply that
  // already arrived is still journaled and handed on), and returns once no callback can run
  // any more. on_finished does not run after Stop unless it already had. Idempotent.
  void Stop();

  struct Progress {
    int64_t tasks = 0;  // tasks given to Start, every source
    int64_t done = 0;   // committed or failed
    int64_t in_flight = 0;
  };
  Progress progress() const;

  // The tasks that failed for good (after their attempts), with the reason, per source.
  std::vector<std::vector<PolicySampleResult>> Failures() const;

 private:
  struct Source;
  PolicyFeed(std::vector<PolicySource> sources, ReplyJournal& journal, ReplyCallback on_reply,
             FinishedCallback on_finished);
  absl::Status Probe(size_t source, std::vector<const Example*>& tasks);
  void OnResult(size_t source, PolicySampleResult result);
  void Journal(size_t source, SampledReply reply);
  // A task is done; runs on_finished after the last.
  void TaskDone();

  ReplyJournal& journal_;
  const ReplyCallback on_reply_;
  const FinishedCallback on_finished_;
  std::unique_ptr<CurlMultiHttpClient> http_;
  std::vector<std::unique_ptr<Source>> sources_;

  mutable absl::Mutex mu_;
  int64_t tasks_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  // Replies handed to the journal whose commit callback has not run yet.
  int64_t committing_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::vector<PolicySampleResult>> failures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
