#include "orchestrator/policy/policy_feed.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "http/url_redaction.h"
#include "llm/openai_llm_client.h"
#include "orchestrator/policy/policy_request.h"

namespace hb {

struct PolicyFeed::Source {
  PolicySource spec;
  LlmClient* llm = nullptr;
  std::unique_ptr<PolicySampler> sampler;
  // With a single slot the sampler starts once the probe answered.
  bool start_after_probe = false;
  // The probe's share of SourceStats (guarded by the feed's mu_).
  int64_t probe_in_flight = 0;
  ChatUsage probe_usage;
};

std::string PolicyJournalIdentity(const PolicySource& source) {
  return absl::StrCat("policy ", PolicySettingsFingerprint(source.options.request));
}

PolicyFeed::PolicyFeed(std::vector<PolicySource> sources, ReplyJournal& journal,
                       ReplyCallback on_reply, FinishedCallback on_finished)
    : journal_(journal), on_reply_(std::move(on_reply)), on_finished_(std::move(on_finished)) {
  for (PolicySource& spec : sources) {
    auto source = std::make_unique<Source>();
    source->spec = std::move(spec);
    sources_.push_back(std::move(source));
  }
  absl::MutexLock lock(&mu_);
  failures_.resize(sources_.size());
}

absl::StatusOr<std::unique_ptr<PolicyFeed>> PolicyFeed::Start(
    std::vector<PolicySource> sources, std::vector<std::vector<const Example*>> tasks,
    ReplyJournal& journal, ReplyCallback on_reply, FinishedCallback on_finished) {
  CurlHttpClientOptions http_options;
  // Each source keeps at most its --policy-max-in-flight calls out, its probe included (Begin).
  http_options.max_in_flight = 0;
  http_options.connect_timeout = absl::Seconds(5);
  for (const PolicySource& source : sources) {
    http_options.max_in_flight += source.options.max_in_flight;
  }
  HB_ASSIGN_OR_RETURN(std::unique_ptr<CurlMultiHttpClient> http,
                      CurlMultiHttpClient::Create(http_options));
  PolicyClients clients;
  clients.scheduler = http.get();
  std::vector<std::unique_ptr<LlmClient>> llms;
  for (const PolicySource& source : sources) {
    OpenAiLlmClientOptions llm_options;
    llm_options.base_url = source.options.policy_base_url;
    llm_options.api_key = source.options.api_key;
    llms.push_back(std::make_unique<OpenAiLlmClient>(*http, llm_options));
    clients.llms.push_back(llms.back().get());
  }
  std::unique_ptr<PolicyFeed> feed(
      new PolicyFeed(std::move(sources), journal, std::move(on_reply), std::move(on_finished)));
  feed->http_ = std::move(http);
  feed->owned_llms_ = std::move(llms);
  if (absl::Status begun = feed->Begin(std::move(clients), std::move(tasks)); !begun.ok()) {
    feed->Stop();
    return begun;
  }
  return feed;
}

absl::StatusOr<std::unique_ptr<PolicyFeed>> PolicyFeed::StartOn(
    PolicyClients clients, std::vector<PolicySource> sources,
    std::vector<std::vector<const Example*>> tasks, ReplyJournal& journal, ReplyCallback on_reply,
    FinishedCallback on_finished) {
  if (clients.scheduler == nullptr || clients.llms.size() != sources.size()) {
    return absl::InternalError("PolicyFeed::StartOn needs a scheduler and one client per source");
  }
  std::unique_ptr<PolicyFeed> feed(
      new PolicyFeed(std::move(sources), journal, std::move(on_reply), std::move(on_finished)));
  if (absl::Status begun = feed->Begin(std::move(clients), std::move(tasks)); !begun.ok()) {
    feed->Stop();
    return begun;
  }
  return feed;
}

absl::Status PolicyFeed::Begin(PolicyClients clients,
                               std::vector<std::vector<const Example*>> tasks) {
  int64_t total = 0;
  for (size_t i = 0; i < sources_.size(); ++i) {
    Source& source = *sources_[i];
    source.llm = clients.llms[i];
    PolicySamplerOptions sampler_options = MakePolicySamplerOptions(source.spec.options);
    // The probe takes one of the --max-in-flight slots.
    sampler_options.max_in_flight = std::max(1, source.spec.options.max_in_flight - 1);
    source.start_after_probe = source.spec.options.max_in_flight <= 1;
    source.sampler = std::make_unique<PolicySampler>(
        *source.llm, *clients.scheduler, std::move(sampler_options),
        [this, i](PolicySampleResult result) { OnResult(i, std::move(result)); });
    total += static_cast<int64_t>(tasks[i].size());
  }
  {
    absl::MutexLock lock(&mu_);
    tasks_ = total;
  }
  if (total == 0) FinishOnce();
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (tasks[i].empty()) continue;
    Source& source = *sources_[i];
    for (size_t t = 1; t < tasks[i].size(); ++t) {
      source.sampler->Add(
          {tasks[i][t]->prompt_id,
           BuildPolicyRequestBody(source.spec.options.request, tasks[i][t]->prompt)});
    }
    SendProbe(i, *tasks[i].front());
    if (!source.start_after_probe) source.sampler->Start();
  }
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &PolicyFeed::ProbesAnsweredOrFailed));
  return fatal_;
}

void PolicyFeed::SendProbe(size_t index, const Example& task) {
  Source& source = *sources_[index];
  const PolicyOptions& options = source.spec.options;
  PolicySampleTask probe{task.prompt_id, BuildPolicyRequestBody(options.request, task.prompt)};
  ChatRequest request;
  request.body = probe.body;
  request.timeout = std::min(options.probe_timeout, options.attempt_timeout);
  {
    absl::MutexLock lock(&mu_);
    ++probes_out_;
    source.probe_in_flight = 1;
  }
  source.llm->Complete(std::move(request),
                       [this, index, probe = std::move(probe)](absl::StatusOr<ChatResult> result) {
                         OnProbe(index, probe, std::move(result));
                       });
}

void PolicyFeed::OnProbe(size_t index, PolicySampleTask task, absl::StatusOr<ChatResult> result) {
  Source& source = *sources_[index];
  const PolicyOptions& options = source.spec.options;
  if (result.ok()) {
    {
      absl::MutexLock lock(&mu_);
      source.probe_usage += result->usage;
    }
    if (absl::Status verdict = CheckNotGraderVerdict(options, result->content); !verdict.ok()) {
      Fail(std::move(verdict));
    } else {
      Journal(index, ToSampledReply(task.prompt_id, options, *std::move(result)));
    }
  } else if (absl::Status error = PolicyProbeError(options, result.status()); !error.ok()) {
    Fail(source.spec.checkpoint.empty()
             ? error
             : absl::FailedPreconditionError(
                   absl::StrCat("--policy ", source.spec.checkpoint, "=", options.request.model,
                                "@", RedactUrl(options.policy_base_url), ": ", error.message())));
  } else {
    source.sampler->Add(std::move(task));  // transient: sampled again like any other task
  }
  if (source.start_after_probe && status().ok()) source.sampler->Start();
  absl::MutexLock lock(&mu_);  // last: Stop waits for it before the feed may go
  source.probe_in_flight = 0;
  --probes_out_;
}

void PolicyFeed::OnResult(size_t index, PolicySampleResult result) {
  const PolicyOptions& options = sources_[index]->spec.options;
  if (result.reply.ok()) {
    // A grader route answers every task with a verdict: never journaled, and the job stops.
    if (absl::Status verdict = CheckNotGraderVerdict(options, result.reply->content);
        !verdict.ok()) {
      Fail(std::move(verdict));
      return;
    }
    Journal(index, ToSampledReply(result.prompt_id, options, *std::move(result.reply)));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    // After Stop, a failure is a cancelled call, not the task's fault.
    if (!stopped_) failures_[index].push_back(std::move(result));
  }
  TaskDone();
}

void PolicyFeed::Journal(size_t index, SampledReply reply) {
  {
    absl::MutexLock lock(&mu_);
    ++committing_;
  }
  ReplyRecord record{sources_[index]->spec.checkpoint, reply.prompt_id, FormatSampledReply(reply),
                     absl::Now()};
  journal_.AppendReply(std::move(record), [this, index, reply = std::move(reply)](
                                              const absl::Status& status) mutable {
    if (status.ok()) {
      on_reply_(index, std::move(reply));
      TaskDone();
    } else {
      Fail(absl::InternalError(absl::StrCat("cannot journal the policy reply of task ",
                                            reply.prompt_id, ": ", status.message())));
    }
    absl::MutexLock lock(&mu_);  // last: Stop waits for it before the feed may go
    --committing_;
  });
}

bool PolicyFeed::ProbesAnsweredOrFailed() const { return probes_out_ == 0 || !fatal_.ok(); }

bool PolicyFeed::NoCallbackLeft() const { return committing_ == 0 && probes_out_ == 0; }

void PolicyFeed::Fail(absl::Status error) {
  {
    absl::MutexLock lock(&mu_);
    if (fatal_.ok()) fatal_ = std::move(error);
  }
  FinishOnce();
}

void PolicyFeed::TaskDone() {
  bool last = false;
  {
    absl::MutexLock lock(&mu_);
    last = ++done_ >= tasks_;
  }
  if (last) FinishOnce();
}

void PolicyFeed::FinishOnce() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_ || finished_) return;
    finished_ = true;
  }
  on_finished_();
}

void PolicyFeed::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  for (std::unique_ptr<Source>& source : sources_) {
    if (source->sampler != nullptr) source->sampler->Stop();
  }
  // The feed's own client completes the calls in flight with kCancelled and fires its timers,
  // here and now; given clients' calls end on their own (within the attempt timeout).
  http_.reset();
  for (std::unique_ptr<Source>& source : sources_) {
    if (source->sampler != nullptr) source->sampler->WaitIdle();
  }
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &PolicyFeed::NoCallbackLeft));
}

PolicyFeed::~PolicyFeed() {
  Stop();
  sources_.clear();
}

absl::Status PolicyFeed::status() const {
  absl::MutexLock lock(&mu_);
  return fatal_;
}

PolicyFeed::Progress PolicyFeed::progress() const {
  Progress progress;
  for (size_t i = 0; i < sources_.size(); ++i) progress.in_flight += SourceStats(i).in_flight;
  absl::MutexLock lock(&mu_);
  progress.tasks = tasks_;
  progress.done = done_;
  return progress;
}

PolicySamplerStats PolicyFeed::SourceStats(size_t index) const {
  const Source& source = *sources_[index];
  PolicySamplerStats stats;
  if (source.sampler != nullptr) stats = source.sampler->Stats();
  absl::MutexLock lock(&mu_);
  stats.in_flight += source.probe_in_flight;
  stats.usage += source.probe_usage;
  return stats;
}

std::vector<std::vector<PolicySampleResult>> PolicyFeed::Failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

}  // namespace hb
