#include "orchestrator/run/policy_feed.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "http/url_redaction.h"
#include "orchestrator/sample/policy_request.h"

namespace hb {

struct PolicyFeed::Source {
  PolicySource spec;
  std::unique_ptr<OpenAiLlmClient> llm;
  std::unique_ptr<PolicySampler> sampler;
};

std::string PolicyJournalIdentity(const PolicySource& source) {
  return absl::StrCat("policy ", PolicySettingsFingerprint(source.sampling.request));
}

PolicyFeed::PolicyFeed(std::vector<PolicySource> sources, ReplyJournal& journal,
                       ReplyCallback on_reply, FinishedCallback on_finished)
    : journal_(journal), on_reply_(std::move(on_reply)), on_finished_(std::move(on_finished)) {
  for (PolicySource& spec : sources) {
    sources_.push_back(std::make_unique<Source>(Source{std::move(spec), nullptr, nullptr}));
  }
  absl::MutexLock lock(&mu_);
  failures_.resize(sources_.size());
}

absl::StatusOr<std::unique_ptr<PolicyFeed>> PolicyFeed::Start(
    std::vector<PolicySource> sources, std::vector<std::vector<const Example*>> tasks,
    ReplyJournal& journal, ReplyCallback on_reply, FinishedCallback on_finished) {
  CurlHttpClientOptions http_options;
  http_options.max_in_flight = 1;
  http_options.connect_timeout = absl::Seconds(5);
  for (const PolicySource& source : sources) {
    http_options.max_in_flight += source.sampling.max_in_flight;
  }
  std::unique_ptr<PolicyFeed> feed(
      new PolicyFeed(std::move(sources), journal, std::move(on_reply), std::move(on_finished)));
  HB_ASSIGN_OR_RETURN(feed->http_, CurlMultiHttpClient::Create(http_options));
  int64_t total = 0;
  for (size_t i = 0; i < feed->sources_.size(); ++i) {
    Source& source = *feed->sources_[i];
    OpenAiLlmClientOptions llm_options;
    llm_options.base_url = source.spec.sampling.policy_base_url;
    llm_options.api_key = source.spec.sampling.api_key;
    source.llm = std::make_unique<OpenAiLlmClient>(*feed->http_, llm_options);
    PolicyFeed* raw = feed.get();
    source.sampler = std::make_unique<PolicySampler>(
        *source.llm, *feed->http_, MakePolicySamplerOptions(source.spec.sampling),
        [raw, i](PolicySampleResult result) { raw->OnResult(i, std::move(result)); });
    total += static_cast<int64_t>(tasks[i].size());
  }
  {
    absl::MutexLock lock(&feed->mu_);
    feed->tasks_ = total;
  }
  for (size_t i = 0; i < feed->sources_.size(); ++i) {
    HB_RETURN_IF_ERROR(feed->Probe(i, tasks[i]));
  }
  for (size_t i = 0; i < feed->sources_.size(); ++i) {
    Source& source = *feed->sources_[i];
    for (const Example* example : tasks[i]) {
      source.sampler->Add({example->prompt_id,
                           BuildPolicyRequestBody(source.spec.sampling.request, example->prompt)});
    }
    source.sampler->Start();
  }
  if (total == 0) feed->on_finished_();
  return feed;
}

absl::Status PolicyFeed::Probe(size_t source_index, std::vector<const Example*>& tasks) {
  if (tasks.empty()) return absl::OkStatus();
  Source& source = *sources_[source_index];
  const SampleOptions& options = source.spec.sampling;
  absl::StatusOr<ChatResult> probe = ProbePolicy(
      *source.llm, options, BuildPolicyRequestBody(options.request, tasks.front()->prompt));
  if (!probe.ok()) {
    const absl::Status error = PolicyProbeError(options, probe.status());
    if (!error.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--policy ", source.spec.checkpoint, "=", options.request.model, "@",
                       RedactUrl(options.policy_base_url), ": ", error.message()));
    }
    return absl::OkStatus();  // transient: the sampler asks again
  }
  Journal(source_index, ToSampledReply(tasks.front()->prompt_id, options, *std::move(probe)));
  tasks.erase(tasks.begin());
  return absl::OkStatus();
}

void PolicyFeed::OnResult(size_t source, PolicySampleResult result) {
  if (result.reply.ok()) {
    Journal(source, ToSampledReply(result.prompt_id, sources_[source]->spec.sampling,
                                   *std::move(result.reply)));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    // After Stop, a failure is a cancelled call, not the task's fault.
    if (!stopped_) failures_[source].push_back(std::move(result));
  }
  TaskDone();
}

void PolicyFeed::Journal(size_t source, SampledReply reply) {
  {
    absl::MutexLock lock(&mu_);
    ++committing_;
  }
  ReplyRecord record{sources_[source]->spec.checkpoint, reply.prompt_id, FormatSampledReply(reply),
                     absl::Now()};
  journal_.AppendReply(std::move(record), [this, source, reply = std::move(reply)](
                                              const absl::Status& status) mutable {
    if (status.ok()) {
      on_reply_(source, std::move(reply));
    } else {
      absl::MutexLock lock(&mu_);
      failures_[source].push_back(PolicySampleResult{reply.prompt_id, status, 1});
    }
    {
      absl::MutexLock lock(&mu_);
      --committing_;
    }
    TaskDone();
  });
}

void PolicyFeed::TaskDone() {
  bool fire = false;
  {
    absl::MutexLock lock(&mu_);
    ++done_;
    fire = !stopped_ && !finished_ && done_ >= tasks_;
    if (fire) finished_ = true;
  }
  if (fire) on_finished_();
}

void PolicyFeed::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  for (std::unique_ptr<Source>& source : sources_) {
    if (source->sampler != nullptr) source->sampler->Stop();
  }
  // Completes the calls in flight with kCancelled and fires pending timers, here and now.
  http_.reset();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int64_t* committing) { return *committing == 0; }, &committing_));
}

PolicyFeed::~PolicyFeed() {
  Stop();
  sources_.clear();
}

PolicyFeed::Progress PolicyFeed::progress() const {
  Progress progress;
  for (const std::unique_ptr<Source>& source : sources_) {
    if (source->sampler != nullptr) progress.in_flight += source->sampler->Stats().in_flight;
  }
  absl::MutexLock lock(&mu_);
  progress.tasks = tasks_;
  progress.done = done_;
  return progress;
}

std::vector<std::vector<PolicySampleResult>> PolicyFeed::Failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

}  // namespace hb
