#include "orchestrator/sample/sample_command.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/subsets.h"
#include "http/curl_http_client.h"
#include "http/url_redaction.h"
#include "llm/openai_llm_client.h"
#include "orchestrator/report/progress.h"
#include "orchestrator/sample/policy_sampler.h"
#include "orchestrator/sample/sample_journal.h"

namespace hb {
namespace {

// Replies and failures from the sampler's threads, flushed to the journal by the main thread.
struct Inbox {
  absl::Mutex mu;
  std::vector<SampledReply> replies ABSL_GUARDED_BY(mu);
  std::vector<PolicySampleResult> failures ABSL_GUARDED_BY(mu);
  std::optional<absl::StatusOr<ChatResult>> probe ABSL_GUARDED_BY(mu);
  bool ready ABSL_GUARDED_BY(mu) = false;

  // Waits up to 50 ms for something to arrive (group commit: whatever arrives within 50 ms
  // shares one journal write and one fdatasync), moves the replies into `replies` and the
  // failures into `failures`, and returns the probe's answer if it came.
  std::optional<absl::StatusOr<ChatResult>> Take(std::vector<SampledReply>& out_replies,
                                                 std::vector<PolicySampleResult>& out_failures) {
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(50));
    for (SampledReply& r : replies) out_replies.push_back(std::move(r));
    replies.clear();
    for (PolicySampleResult& f : failures) out_failures.push_back(std::move(f));
    failures.clear();
    ready = false;
    std::optional<absl::StatusOr<ChatResult>> out = std::move(probe);
    probe.reset();
    return out;
  }
};

std::string FormatFailure(const PolicySampleResult& failure) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("prompt_id");
    WriteJsonString(w, failure.prompt_id);
    w.Key("attempts");
    w.Int(failure.attempts);
    w.Key("reason");
    WriteJsonString(w, failure.reply.status().ToString());
    w.EndObject();
  });
}

std::string FormatSummary(const SampleOptions& options, const SampleSummary& s) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("policy_model");
    WriteJsonString(w, options.request.model);
    w.Key("policy_base_url");
    WriteJsonString(w, RedactUrl(options.policy_base_url));
    w.Key("settings");
    WriteRawJson(w, PolicySettingsFingerprint(options.request), rapidjson::kObjectType);
    w.Key("dataset");
    WriteJsonString(w, options.dataset);
    w.Key("examples");
    w.Int64(options.examples);
    for (const auto& [key, value] : std::vector<std::pair<const char*, int64_t>>{
             {"tasks", s.tasks},
             {"replies", s.replies},
             {"from_journal", s.from_journal},
             {"failed", s.failed},
             {"length_truncated", s.length_truncated},
             {"empty", s.empty},
             {"retries", s.retries},
             {"prompt_tokens", s.usage.prompt_tokens},
             {"completion_tokens", s.usage.completion_tokens}}) {
      w.Key(key);
      w.Int64(value);
    }
    w.Key("elapsed_seconds");
    w.Double(absl::ToDoubleSeconds(s.elapsed));
    w.EndObject();
  });
}

std::string ProgressLine(const SampleOptions& options, int64_t done, int64_t total,
                         int64_t this_run, const PolicySamplerStats& stats,
                         absl::Duration elapsed) {
  const double rate = this_run / std::max(1e-9, absl::ToDoubleSeconds(elapsed));
  return absl::StrFormat(
      "%s: tasks %d/%d | %.1f tasks/s | ETA %s | in flight %d (window %d) | retries %d | tokens "
      "in %s out %s",
      options.log_name, done, total, rate,
      rate > 0 ? FormatEta(absl::Seconds((total - done) / rate)) : std::string("-"),
      stats.in_flight, stats.window, stats.retries, FormatTokenCount(stats.usage.prompt_tokens),
      FormatTokenCount(stats.usage.completion_tokens));
}

// Sends `body` alone, once (no retry), with the probe's timeout; `on_done` runs on the LLM
// client's thread.
void SendProbe(LlmClient& llm, const SampleOptions& options, const std::string& body,
               std::function<void(absl::StatusOr<ChatResult>)> on_done) {
  ChatRequest request;
  request.body = body;
  request.timeout = std::min(options.probe_timeout, options.attempt_timeout);
  llm.Complete(std::move(request), std::move(on_done));
}

// What the first task's lone request (the probe) says: its reply joins `batch`; a failure no
// retry can fix is the error (PolicyProbeError); a transient one puts the task back into
// `sampler`, to be sampled like any other.
absl::Status TakeProbe(const SampleOptions& options, PolicySampleTask first,
                       absl::StatusOr<ChatResult> probe, PolicySampler& sampler,
                       std::vector<SampledReply>& batch, SampleSummary& summary) {
  if (probe.ok()) {
    summary.usage += probe->usage;
    batch.push_back(ToSampledReply(first.prompt_id, options, *std::move(probe)));
    return absl::OkStatus();
  }
  HB_RETURN_IF_ERROR(PolicyProbeError(options, probe.status()));
  sampler.Add(std::move(first));
  return absl::OkStatus();
}

// Samples `first` through the probe and `rest` through the sampler at the same time (so the
// probe costs no round trip of its own), and journals replies as they arrive; returns the
// failures. Errors: the probe's (PolicyProbeError: the sampler is stopped and its calls in
// flight are waited for) or the journal's.
absl::StatusOr<std::vector<PolicySampleResult>> SampleAll(
    const SampleOptions& options, LlmClient& llm, Scheduler& scheduler, SampleJournal& journal,
    PolicySampleTask first, std::vector<PolicySampleTask> rest, int64_t done_before, int64_t total,
    std::vector<SampledReply>& received, SampleSummary& summary, std::FILE* log) {
  Inbox inbox;
  // At most --max-in-flight requests, the probe's included: the sampler gets one slot less,
  // and with a single slot it waits for the probe.
  PolicySamplerOptions sampler_options = MakePolicySamplerOptions(options);
  sampler_options.max_in_flight = std::max(1, options.max_in_flight - 1);
  const bool start_with_probe = options.max_in_flight > 1;
  PolicySampler sampler(llm, scheduler, std::move(sampler_options), [&](PolicySampleResult result) {
    absl::MutexLock lock(&inbox.mu);
    if (result.reply.ok()) {
      inbox.replies.push_back(ToSampledReply(result.prompt_id, options, *std::move(result.reply)));
    } else {
      inbox.failures.push_back(std::move(result));
    }
    inbox.ready = true;
  });
  for (PolicySampleTask& task : rest) sampler.Add(std::move(task));
  const absl::Time start = absl::Now();
  SendProbe(llm, options, first.body, [&inbox](absl::StatusOr<ChatResult> result) {
    absl::MutexLock lock(&inbox.mu);
    inbox.probe = std::move(result);
    inbox.ready = true;
  });
  if (start_with_probe) sampler.Start();
  std::vector<PolicySampleResult> failures;
  absl::Time next_progress = start + options.progress_interval;
  int64_t done = done_before;
  bool probing = true;
  absl::Status status;
  while (status.ok()) {
    const bool finished = sampler.Pending() == 0 && !probing;
    std::vector<SampledReply> batch;
    std::optional<absl::StatusOr<ChatResult>> probe = inbox.Take(batch, failures);
    if (probe.has_value()) {
      probing = false;
      status = TakeProbe(options, std::move(first), *std::move(probe), sampler, batch, summary);
      if (!start_with_probe) sampler.Start();
    }
    if (status.ok()) status = journal.Append(batch);
    done += static_cast<int64_t>(batch.size());
    for (SampledReply& reply : batch) received.push_back(std::move(reply));
    if (absl::Now() >= next_progress || finished) {
      std::fprintf(log, "%s\n",
                   ProgressLine(options, done + static_cast<int64_t>(failures.size()), total,
                                done - done_before, sampler.Stats(), absl::Now() - start)
                       .c_str());
      next_progress = absl::Now() + options.progress_interval;
    }
    if (finished) break;
  }
  if (!status.ok()) {
    sampler.Stop();  // the calls in flight (and the probe) capture the sampler and the inbox
    std::vector<SampledReply> discarded;
    while (sampler.Pending() > 0 || probing) {
      if (inbox.Take(discarded, failures).has_value()) probing = false;
    }
    return status;
  }
  const PolicySamplerStats stats = sampler.Stats();
  summary.retries += stats.retries;
  summary.usage += stats.usage;
  return failures;
}

absl::Status WriteOutputs(const SampleOptions& options, const Dataset& dataset,
                          const std::vector<SampledReply>& replies,
                          const std::vector<PolicySampleResult>& failures, SampleSummary& summary) {
  absl::flat_hash_map<std::string, const SampledReply*> by_id;
  for (const SampledReply& reply : replies) by_id.emplace(reply.prompt_id, &reply);
  std::string out;
  for (const Example& example : dataset.examples) {
    auto it = by_id.find(example.prompt_id);
    if (it == by_id.end()) continue;
    const SampledReply& reply = *it->second;
    ++summary.replies;
    if (reply.finish_reason == "length") ++summary.length_truncated;
    if (reply.response.empty()) ++summary.empty;
    absl::StrAppend(&out, FormatSampledReply(reply), "\n");
  }
  summary.failed = summary.tasks - summary.replies;
  HB_RETURN_IF_ERROR(WriteFileAtomically(options.out, out));
  std::string failed;
  for (const PolicySampleResult& f : failures) absl::StrAppend(&failed, FormatFailure(f), "\n");
  HB_RETURN_IF_ERROR(WriteFileAtomically(absl::StrCat(options.out, ".failures.jsonl"), failed));
  return WriteFileAtomically(absl::StrCat(options.out, ".summary.json"),
                             absl::StrCat(FormatSummary(options, summary), "\n"));
}

}  // namespace

SampledReply ToSampledReply(const std::string& prompt_id, const SampleOptions& options,
                            ChatResult result) {
  SampledReply reply;
  reply.prompt_id = prompt_id;
  reply.response = std::move(result.content);
  reply.system_prompt = options.request.system_prompt;
  reply.model = result.model.empty() ? options.request.model : std::move(result.model);
  reply.finish_reason = std::move(result.finish_reason);
  reply.usage = result.usage;
  return reply;
}

absl::Status PolicyProbeError(const SampleOptions& options, const absl::Status& status) {
  const FailureKind kind = AttemptOutcomeOf(status).kind;
  std::string hint;
  switch (kind) {
    case FailureKind::kConnection:
      hint =
          "the policy endpoint is unreachable; check --policy-base-url and that the server is "
          "up";
      break;
    case FailureKind::kHttp401:
    case FailureKind::kHttp403:
      hint =
          "the policy endpoint refused the API key; set POLICY_API_KEY or "
          "--policy-api-key-file";
      break;
    case FailureKind::kHttp404:
      hint = absl::StrCat("the endpoint does not serve model '", options.request.model,
                          "' (or --policy-base-url lacks the /v1 part); check --policy-model");
      break;
    case FailureKind::kHttp400:
    case FailureKind::kOtherHttp4xx:
      hint =
          "the policy endpoint rejected the request; check --policy-extra-body and the "
          "sampling flags";
      break;
    default:
      return absl::OkStatus();  // transient: the sampler retries it
  }
  return absl::FailedPreconditionError(
      absl::StrCat("probe request to ", RedactUrl(options.policy_base_url),
                   " failed: ", status.message(), " (", hint, ")"));
}

absl::StatusOr<ChatResult> ProbePolicy(LlmClient& llm, const SampleOptions& options,
                                       const std::string& body) {
  absl::Notification done;
  absl::StatusOr<ChatResult> out = absl::UnknownError("probe not answered");
  SendProbe(llm, options, body, [&](absl::StatusOr<ChatResult> result) {
    out = std::move(result);
    done.Notify();
  });
  done.WaitForNotification();
  return out;
}

PolicySamplerOptions MakePolicySamplerOptions(const SampleOptions& options) {
  PolicySamplerOptions sampler_options;
  sampler_options.max_in_flight = options.max_in_flight;
  sampler_options.adaptive = options.adaptive_concurrency;
  sampler_options.retry = options.retry;
  sampler_options.attempt_timeout = options.attempt_timeout;
  auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
  sampler_options.jitter = [rng] { return std::uniform_real_distribution<double>(0, 1)(*rng); };
  return sampler_options;
}

absl::Status ValidateSampleOptions(const SampleOptions& options) {
  if (options.dataset.empty()) return absl::InvalidArgumentError("--dataset is required");
  if (options.out.empty()) return absl::InvalidArgumentError("--out is required");
  if (options.policy_base_url.empty()) {
    return absl::InvalidArgumentError("--policy-base-url is required (e.g. http://vllm:8000/v1)");
  }
  if (!absl::StartsWith(options.policy_base_url, "http://") &&
      !absl::StartsWith(options.policy_base_url, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--policy-base-url must start with http:// or https://, got '",
                     RedactUrl(options.policy_base_url), "'"));
  }
  if (options.examples < -1 || options.examples == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--examples must be -1 (every task) or positive, got ", options.examples));
  }
  if (options.max_in_flight < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-in-flight must be >= 1, got ", options.max_in_flight));
  }
  return ValidatePolicyRequestSettings(options.request);
}

absl::StatusOr<SampleSummary> SampleToFile(const SampleOptions& options, LlmClient& llm,
                                           Scheduler& scheduler, std::FILE* log) {
  const absl::Time start = absl::Now();
  HB_RETURN_IF_ERROR(ValidateSampleOptions(options));
  HB_ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(options.dataset, {}));
  if (options.examples >= 0) SelectExamples(dataset, static_cast<size_t>(options.examples));
  HB_ASSIGN_OR_RETURN(
      std::vector<size_t> positions,
      ShardTaskPositions(dataset.examples.size(), options.shard_index, options.shard_count));
  if (options.shard_count > 1) {
    std::vector<Example> mine;
    for (size_t p : positions) mine.push_back(std::move(dataset.examples[p]));
    dataset.examples = std::move(mine);
  }
  const size_t slash = options.out.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    HB_RETURN_IF_ERROR(MakeDirs(options.out.substr(0, slash)));
  }
  SampleJournalHeader header{dataset.sha256, options.examples,
                             PolicySettingsFingerprint(options.request),
                             absl::StrCat(options.shard_index, "/", options.shard_count)};
  HB_ASSIGN_OR_RETURN(SampleJournal journal,
                      SampleJournal::Open(absl::StrCat(options.out, ".journal"), header));

  SampleSummary summary;
  summary.tasks = static_cast<int64_t>(dataset.examples.size());
  std::vector<SampledReply> replies = journal.replies();
  summary.from_journal = static_cast<int64_t>(replies.size());
  absl::flat_hash_map<std::string, bool> have;
  for (const SampledReply& reply : replies) have[reply.prompt_id] = true;
  std::vector<PolicySampleTask> tasks;
  for (const Example& example : dataset.examples) {
    if (have.contains(example.prompt_id)) continue;
    tasks.push_back({example.prompt_id, BuildPolicyRequestBody(options.request, example.prompt)});
  }
  std::fprintf(log, "%s: %zu tasks, %lld from the journal, %zu to sample from %s (model %s)\n",
               options.log_name.c_str(), dataset.examples.size(),
               static_cast<long long>(summary.from_journal), tasks.size(),
               RedactUrl(options.policy_base_url).c_str(), options.request.model.c_str());

  std::vector<PolicySampleResult> failures;
  if (!tasks.empty()) {
    PolicySampleTask first = std::move(tasks.front());
    tasks.erase(tasks.begin());
    HB_ASSIGN_OR_RETURN(failures, SampleAll(options, llm, scheduler, journal, std::move(first),
                                            std::move(tasks), static_cast<int64_t>(replies.size()),
                                            summary.tasks, replies, summary, log));
  }
  summary.elapsed = absl::Now() - start;
  HB_RETURN_IF_ERROR(WriteOutputs(options, dataset, replies, failures, summary));
  for (const PolicySampleResult& f : failures) {
    std::fprintf(log, "%s: task %s failed: %s\n", options.log_name.c_str(), f.prompt_id.c_str(),
                 f.reply.status().ToString().c_str());
  }
  std::fprintf(log,
               "%s: %lld/%lld tasks have a reply (%lld from the journal), %lld failed, %lld cut "
               "by max_tokens (finish_reason length), %lld empty; wrote %s (+ .summary.json, "
               ".failures.jsonl)\n",
               options.log_name.c_str(), static_cast<long long>(summary.replies),
               static_cast<long long>(summary.tasks), static_cast<long long>(summary.from_journal),
               static_cast<long long>(summary.failed),
               static_cast<long long>(summary.length_truncated),
               static_cast<long long>(summary.empty), options.out.c_str());
  return summary;
}

int RunSample(const SampleOptions& options) {
  if (absl::Status valid = ValidateSampleOptions(options); !valid.ok()) {
    std::fprintf(stderr, "hb-orchestrator sample: %s\n", std::string(valid.message()).c_str());
    return kSampleExitUsage;
  }
  CurlHttpClientOptions http_options;
  http_options.max_in_flight = options.max_in_flight + 1;
  http_options.connect_timeout = absl::Seconds(5);
  absl::StatusOr<std::unique_ptr<CurlMultiHttpClient>> http =
      CurlMultiHttpClient::Create(http_options);
  if (!http.ok()) {
    std::fprintf(stderr, "hb-orchestrator sample: %s\n", http.status().ToString().c_str());
    return kSampleExitInternal;
  }
  OpenAiLlmClientOptions llm_options;
  llm_options.base_url = options.policy_base_url;
  llm_options.api_key = options.api_key;
  OpenAiLlmClient llm(**http, llm_options);
  absl::StatusOr<SampleSummary> summary = SampleToFile(options, llm, **http, stderr);
  if (!summary.ok()) {
    std::fprintf(stderr, "hb-orchestrator sample: %s\n",
                 std::string(summary.status().message()).c_str());
    const absl::StatusCode code = summary.status().code();
    return code == absl::StatusCode::kInternal || code == absl::StatusCode::kUnknown
               ? kSampleExitInternal
               : kSampleExitUsage;
  }
  return summary->failed > 0 ? kSampleExitTasksFailed : kSampleExitOk;
}

}  // namespace hb
