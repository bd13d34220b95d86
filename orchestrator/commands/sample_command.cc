#include "orchestrator/commands/sample_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "common/base/exit_codes.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/subsets.h"
#include "http/curl_http_client.h"
#include "http/url_redaction.h"
#include "llm/openai_llm_client.h"
#include "orchestrator/policy/policy_feed.h"
#include "orchestrator/report/progress.h"
#include "orchestrator/sample/sample_journal.h"

namespace hb {
namespace {

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

// The sampling part of a progress snapshot (no rows: `sample` grades nothing).
ProgressSnapshot SamplingSnapshot(int64_t done, int64_t total, int64_t this_run,
                                  const PolicySamplerStats& stats, absl::Duration elapsed) {
  ProgressSnapshot snapshot;
  snapshot.sample_total = total;
  snapshot.sampled = done;
  snapshot.sampling_in_flight = stats.in_flight;
  snapshot.done_this_run = this_run;
  snapshot.window = stats.window;
  snapshot.retries = stats.retries;
  snapshot.elapsed = elapsed;
  return snapshot;
}

// What the consumer of the feed learns: the replies handed on, and that the feed finished.
struct Arrivals {
  absl::Mutex mu;
  std::vector<SampledReply> replies ABSL_GUARDED_BY(mu);
  bool finished ABSL_GUARDED_BY(mu) = false;
};

// Samples `tasks` through the sampling engine (PolicyFeed: the probe alongside the others,
// every reply journaled before it counts), printing progress every progress_interval; appends
// the replies to `received` and returns the failures. Errors: the feed's (probe, a grader
// verdict as reply, the journal).
absl::StatusOr<std::vector<PolicySampleResult>> SampleAll(
    const SampleOptions& options, LlmClient& llm, Scheduler& scheduler, SampleJournal& journal,
    std::vector<const Example*> tasks, int64_t total, std::vector<SampledReply>& received,
    SampleSummary& summary, std::FILE* log) {
  Arrivals arrivals;
  const absl::Time start = absl::Now();
  const int64_t done_before = static_cast<int64_t>(received.size());
  HB_ASSIGN_OR_RETURN(std::unique_ptr<PolicyFeed> feed,
                      PolicyFeed::StartOn(
                          PolicyClients{{&llm}, &scheduler}, {PolicySource{"", options}},
                          {std::move(tasks)}, journal,
                          [&arrivals](size_t, SampledReply reply) {
                            absl::MutexLock lock(&arrivals.mu);
                            arrivals.replies.push_back(std::move(reply));
                          },
                          [&arrivals] {
                            absl::MutexLock lock(&arrivals.mu);
                            arrivals.finished = true;
                          }));
  bool finished = false;
  while (!finished) {
    {
      absl::MutexLock lock(&arrivals.mu);
      arrivals.mu.AwaitWithTimeout(absl::Condition(&arrivals.finished), options.progress_interval);
      finished = arrivals.finished;
    }
    const PolicyFeed::Progress progress = feed->progress();
    const PolicySamplerStats stats = feed->SourceStats(0);
    std::fprintf(log, "%s\n",
                 ProgressLine(options, done_before + progress.done, total, progress.done, stats,
                              absl::Now() - start)
                     .c_str());
    if (options.metrics != nullptr) {
      options.metrics->Progress(SamplingSnapshot(done_before + progress.done, total, progress.done,
                                                 stats, absl::Now() - start));
    }
  }
  feed->Stop();
  HB_RETURN_IF_ERROR(feed->status());
  const PolicySamplerStats stats = feed->SourceStats(0);
  summary.retries += stats.retries;
  summary.usage += stats.usage;
  absl::MutexLock lock(&arrivals.mu);
  for (SampledReply& reply : arrivals.replies) received.push_back(std::move(reply));
  return feed->Failures()[0];
}

absl::Status WriteOutputs(const SampleOptions& options, const Dataset& dataset,
                          const std::vector<SampledReply>& replies,
                          const std::vector<PolicySampleResult>& failures, SampleSummary& summary) {
  HB_ASSIGN_OR_RETURN(const ResponsesFileCounts counts,
                      WriteResponsesFile(options.out, dataset.examples, replies));
  summary.replies = counts.replies;
  summary.length_truncated = counts.length_truncated;
  summary.empty = counts.empty;
  summary.failed = summary.tasks - summary.replies;
  std::string failed;
  for (const PolicySampleResult& f : failures) absl::StrAppend(&failed, FormatFailure(f), "\n");
  HB_RETURN_IF_ERROR(WriteFileAtomically(absl::StrCat(options.out, ".failures.jsonl"), failed));
  return WriteFileAtomically(absl::StrCat(options.out, ".summary.json"),
                             absl::StrCat(FormatSummary(options, summary), "\n"));
}

}  // namespace

absl::Status PrepareSampleOutputs(const std::string& out) {
  const auto is_directory = [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  if (absl::EndsWith(out, "/") || is_directory(out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out ", out,
        " is a directory: sample writes one responses file (plus .journal, .failures.jsonl and "
        ".summary.json beside it); give a file path, e.g. --out ",
        absl::StripSuffix(out, "/"), "/responses.jsonl"));
  }
  for (const char* suffix : {".journal", ".failures.jsonl", ".summary.json"}) {
    const std::string path = absl::StrCat(out, suffix);
    if (is_directory(path)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--out ", out, ": ", path,
          " is a directory, where sample writes a file; move it away or choose another --out"));
    }
  }
  const size_t last = out.rfind('/');
  if (last == std::string::npos) return MakeOutputDirs("--out", out, ".");
  return MakeOutputDirs("--out", out, last == 0 ? "/" : out.substr(0, last));
}

absl::Status ValidateSampleOptions(const SampleOptions& options) {
  if (options.dataset.empty()) return absl::InvalidArgumentError("--dataset is required");
  if (options.out.empty()) return absl::InvalidArgumentError("--out is required");
  if (options.examples < -1 || options.examples == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--examples must be -1 (every task) or positive, got ", options.examples));
  }
  return ValidatePolicyOptions(options);
}

absl::StatusOr<SampleSummary> SampleToFile(const SampleOptions& options, LlmClient& llm,
                                           Scheduler& scheduler, std::FILE* log) {
  const absl::Time start = absl::Now();
  HB_RETURN_IF_ERROR(ValidateSampleOptions(options));
  HB_RETURN_IF_ERROR(PrepareSampleOutputs(options.out));
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
  SampleJournalHeader header{dataset.sha256, options.examples,
                             PolicySettingsFingerprint(options.request),
                             absl::StrCat(options.shard_index, "/", options.shard_count)};
  HB_ASSIGN_OR_RETURN(std::unique_ptr<SampleJournal> journal,
                      SampleJournal::Open(absl::StrCat(options.out, ".journal"), header));

  SampleSummary summary;
  summary.tasks = static_cast<int64_t>(dataset.examples.size());
  std::vector<SampledReply> replies = journal->TakeReplayed();
  summary.from_journal = static_cast<int64_t>(replies.size());
  absl::flat_hash_set<std::string> have;
  for (const SampledReply& reply : replies) have.insert(reply.prompt_id);
  std::vector<const Example*> tasks;
  for (const Example& example : dataset.examples) {
    if (!have.contains(example.prompt_id)) tasks.push_back(&example);
  }
  std::fprintf(log, "%s: %zu tasks, %lld from the journal, %zu to sample from %s (model %s)\n",
               options.log_name.c_str(), dataset.examples.size(),
               static_cast<long long>(summary.from_journal), tasks.size(),
               RedactUrl(options.policy_base_url).c_str(), options.request.model.c_str());

  std::vector<PolicySampleResult> failures;
  if (!tasks.empty()) {
    HB_ASSIGN_OR_RETURN(failures, SampleAll(options, llm, scheduler, *journal, std::move(tasks),
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
  absl::Status valid = ValidateSampleOptions(options);
  if (valid.ok()) valid = PreflightEndpoint(PolicyEndpoint(options));
  if (!valid.ok()) {
    std::fprintf(stderr, "hb-orchestrator sample: %s\n", std::string(valid.message()).c_str());
    return kExitUsage;
  }
  CurlHttpClientOptions http_options;
  // The probe is one of the --max-in-flight calls (PolicyFeed::Begin), not one more.
  http_options.max_in_flight = options.max_in_flight;
  http_options.connect_timeout = absl::Seconds(5);
  absl::StatusOr<std::unique_ptr<CurlMultiHttpClient>> http =
      CurlMultiHttpClient::Create(http_options);
  if (!http.ok()) {
    std::fprintf(stderr, "hb-orchestrator sample: %s\n", http.status().ToString().c_str());
    return kExitInternal;
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
    return code == absl::StatusCode::kInternal || code == absl::StatusCode::kUnknown ? kExitInternal
                                                                                     : kExitUsage;
  }
  return summary->failed > 0 ? kExitRowsFailed : kExitOk;
}

}  // namespace hb
