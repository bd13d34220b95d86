#include "orchestrator/run/run_grading.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "grader/grader_settings.h"
#include "http/curl_http_client.h"
#include "orchestrator/report/progress.h"
#include "orchestrator/run/batch_api.h"
#include "orchestrator/run/batch_grader.h"
#include "orchestrator/run/dispatcher.h"
#include "orchestrator/run/row_feed.h"

namespace hb::run_internal {

absl::StatusOr<RunPlan> Plan(const RunOptions& options, const RunInputs& inputs,
                             VerdictStore& store) {
  absl::flat_hash_set<RowKey> done;
  for (const LoadedCheckpoint& c : inputs.checkpoints) {
    absl::StatusOr<std::vector<RowRecord>> rows = store.Rows(c.spec.name);
    HB_RETURN_IF_ERROR(AsInternal(rows.status()));
    for (RowRecord& row : *rows) {
      if (row.ok) done.insert(std::move(row.key));
    }
  }
  std::vector<const Example*> tasks;
  for (const Example& e : inputs.dataset.examples) tasks.push_back(&e);
  std::vector<CheckpointRows> plan_inputs;
  RunPlan plan;
  int64_t rows_to_sample = 0;
  for (size_t i = 0; i < inputs.checkpoints.size(); ++i) {
    const LoadedCheckpoint& c = inputs.checkpoints[i];
    const ResponseSet* responses = &c.responses;
    plan_inputs.push_back(CheckpointRows{
        &c.spec.name, [responses](const std::string& id) { return responses->Find(id); }});
    if (c.policy != nullptr) {
      plan.to_sample.emplace_back(i, std::vector<const Example*>());
      plan.replies_journaled += static_cast<int64_t>(responses->responses.size());
    }
    for (const Example* e : tasks) {
      const bool sampled_later = c.policy != nullptr && responses->Find(e->prompt_id) == nullptr;
      if (sampled_later) {
        plan.to_sample.back().second.push_back(e);
        rows_to_sample += static_cast<int64_t>(e->rubrics.size());
      }
      if (sampled_later || responses->Find(e->prompt_id) != nullptr) {
        plan.total_rows += static_cast<int64_t>(e->rubrics.size());
      }
    }
  }
  plan.rows = PlanRows(tasks, plan_inputs, done);
  plan.already_done = plan.total_rows - rows_to_sample - static_cast<int64_t>(plan.rows.size());
  plan.done = std::move(done);
  HB_LOG_INFO(
      "run: {} checkpoint(s), {} task(s) in shard {}/{}, {} rows: {} already graded in the "
      "journal, {} to grade; writing to {}",
      inputs.checkpoints.size(), inputs.dataset.examples.size(), options.shard_index,
      options.shard_count, plan.total_rows, plan.already_done, plan.total_rows - plan.already_done,
      options.RunDir());
  for (const auto& [index, missing] : plan.to_sample) {
    HB_LOG_INFO("run: {}: {} task(s) with a reply in the journal, {} to sample from {} (model {})",
                inputs.checkpoints[index].spec.name,
                inputs.dataset.examples.size() - missing.size(), missing.size(),
                inputs.checkpoints[index].policy->options.policy_base_url,
                inputs.checkpoints[index].policy->options.request.model);
  }
  return plan;
}

namespace {

// ---- Phase 4: grading. SIGTERM/SIGINT reach `stop` (stop_switch.h), which stops the active
// dispatcher.

// What the progress line shows of the sampling (run --policy). Read on the dispatcher's
// thread, which is the thread that sets `feed`.
struct SamplingProgress {
  int64_t journaled = 0;  // replies from earlier runs
  int64_t total = 0;      // tasks x policy checkpoints; 0 without policies
  const PolicyFeed* feed = nullptr;
};

DispatcherOptions MakeDispatcherOptions(const RunOptions& options, const RunPlan& plan,
                                        ProgressReporter& reporter,
                                        const SamplingProgress& sampling) {
  DispatcherOptions dispatcher_options;
  dispatcher_options.max_in_flight = options.max_in_flight;
  dispatcher_options.adaptive_concurrency = options.adaptive_concurrency;
  dispatcher_options.row_attempts = options.row_attempts;
  dispatcher_options.row_timeout = options.row_timeout;
  dispatcher_options.stop_after_same_failures = options.stop_after_same_failures;
  dispatcher_options.drain_timeout = options.drain_timeout;
  dispatcher_options.send_prompt_cache_key = options.send_prompt_cache_key;
  dispatcher_options.metrics = options.metrics;
  // A live line redraws often; log lines follow --progress-interval.
  dispatcher_options.progress_interval =
      reporter.mode() == ProgressMode::kTty
          ? std::min(options.progress_interval, absl::Milliseconds(250))
          : options.progress_interval;
  const int64_t total_rows = plan.total_rows;
  const int64_t already_done = plan.already_done;
  const bool adaptive = options.adaptive_concurrency;
  dispatcher_options.on_progress = [&reporter, &sampling, total_rows, already_done,
                                    adaptive](const DispatchStats& s) {
    ProgressSnapshot snapshot;
    snapshot.sample_total = sampling.total;
    snapshot.sampled = sampling.journaled;
    if (sampling.feed != nullptr) {
      const PolicyFeed::Progress sampled = sampling.feed->progress();
      snapshot.sampled += sampled.done;
      snapshot.sampling_in_flight = sampled.in_flight;
    }
    snapshot.total_rows = total_rows;
    snapshot.done_this_run = s.ok_rows + s.failed_rows;
    snapshot.done_rows = already_done + snapshot.done_this_run;
    snapshot.failed_rows = s.failed_rows;
    snapshot.retries = s.retries;
    snapshot.in_flight = s.in_flight;
    if (adaptive) {
      snapshot.window = s.window;
      snapshot.paced_rate = s.paced_rate;
    }
    snapshot.prompt_tokens = s.prompt_tokens;
    snapshot.cached_tokens = s.cached_tokens;
    snapshot.completion_tokens = s.completion_tokens;
    snapshot.from_cache_rows = s.from_cache_rows;
    snapshot.elapsed = s.elapsed;
    snapshot.stopping = s.stopping;
    reporter.Report(snapshot);
  };
  return dispatcher_options;
}

// The outcome of one Dispatcher::Run.
struct Dispatched {
  DispatchStats stats;
  absl::Status journal;       // the first journal error
  absl::Status last_failure;  // the last failed row's error
};

Dispatched Dispatch(Dispatcher& dispatcher, StopSwitch& stop) {
  stop.Attach(&dispatcher);
  Dispatched out;
  out.stats = dispatcher.Run();
  stop.Attach(nullptr);
  out.journal = dispatcher.status();
  out.last_failure = dispatcher.last_failure();
  return out;
}

// A final error that every row would meet the same way: a bad key or token, a wrong URL or
// model, an upstream that rejects every request. (kInvalidArgument is left out: the grader also
// answers it for one oversized task, which must not stop the others.)
bool IsGraderMisconfigured(absl::StatusCode code) {
  return code == absl::StatusCode::kUnauthenticated ||
         code == absl::StatusCode::kPermissionDenied || code == absl::StatusCode::kNotFound ||
         code == absl::StatusCode::kFailedPrecondition;
}

// kFailedPrecondition (exit 2) when the probe row failed with a misconfiguration error.
absl::Status CheckProbe(const Dispatched& probe) {
  if (probe.stats.failed_rows == 0 || !IsGraderMisconfigured(probe.last_failure.code())) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "the grader cannot grade: ", probe.last_failure.message(),
      " \u2014 check --llm-api-key-file / OPENAI_API_KEY and --llm-base-url (of hb-grader for a "
      "gRPC --grader, and --grader-token-file)"));
}

// Why a dispatch that gave up (DispatchStats::gave_up) stopped, and what it left unsent.
void PrintGaveUp(const RunOptions& options, const Dispatched& dispatched) {
  const DispatchStats& stats = dispatched.stats;
  std::fprintf(stderr,
               "hb-orchestrator run: stopped dispatching: the last %d finished rows all failed "
               "with %s (last: %s); %lld row(s) not sent\n",
               options.stop_after_same_failures,
               absl::StatusCodeToString(dispatched.last_failure.code()).c_str(),
               std::string(dispatched.last_failure.message()).c_str(),
               static_cast<long long>(stats.planned_rows - stats.ok_rows - stats.failed_rows));
}

// Starts sampling plan.to_sample: each committed reply's rows go to `feed` at once; the feed
// closes when every task is done. Errors: PolicyFeed::Start's.
absl::StatusOr<std::unique_ptr<PolicyFeed>> StartSampling(const RunInputs& inputs,
                                                          const RunPlan& plan,
                                                          SqliteVerdictStore& journal,
                                                          ArrivingResponses& arriving,
                                                          RowFeed& feed) {
  std::vector<PolicySource> sources;
  std::vector<std::vector<const Example*>> tasks;
  std::vector<const std::string*> names;
  for (const auto& [index, missing] : plan.to_sample) {
    sources.push_back(*inputs.checkpoints[index].policy);
    tasks.push_back(missing);
    names.push_back(&inputs.checkpoints[index].spec.name);
  }
  return PolicyFeed::Start(
      std::move(sources), std::move(tasks), journal,
      [&arriving, &feed, names](size_t source, SampledReply reply) {
        feed.Add(arriving.Add(names[source], Response{reply.prompt_id, std::move(reply.response),
                                                      std::move(reply.system_prompt), 0}));
      },
      [&feed] { feed.Close(); });
}

// Lists the tasks a policy could not answer; returns how many.
int64_t PrintSamplingFailures(const RunInputs& inputs, const RunPlan& plan,
                              const PolicyFeed& sampling) {
  const std::vector<std::vector<PolicySampleResult>> failures = sampling.Failures();
  int64_t count = 0;
  for (size_t i = 0; i < failures.size(); ++i) {
    const std::string& name = inputs.checkpoints[plan.to_sample[i].first].spec.name;
    for (const PolicySampleResult& failure : failures[i]) {
      if (++count <= 20) {
        std::fprintf(stderr, "hb-orchestrator run: %s: task %s not sampled: %s\n", name.c_str(),
                     failure.prompt_id.c_str(), failure.reply.status().ToString().c_str());
      }
    }
  }
  if (count > 20) {
    std::fprintf(stderr, "hb-orchestrator run: ... %lld task(s) not sampled in all\n",
                 static_cast<long long>(count));
  }
  return count;
}

// Grades the first row alone (the probe: the whole grader path on one real row, journaled
// like any other), then the rest, as they come: plan.rows at once, and each policy's rows as
// its replies are journaled. Returns whether the run was interrupted; counts the tasks a policy
// could not answer in `unsampled`. Errors: PolicyFeed::Start's, CheckProbe's, or kInternal for a
// journal failure.
absl::StatusOr<bool> GradeRows(const RunOptions& options, const RunInputs& inputs, RunPlan plan,
                               GraderClient& client, SqliteVerdictStore& store,
                               ProgressReporter& reporter, StopSwitch& stop, int64_t& unsampled) {
  SamplingProgress sampling;
  sampling.journaled = plan.replies_journaled;
  sampling.total = static_cast<int64_t>(plan.to_sample.size() * inputs.dataset.examples.size());
  Dispatcher probe(&client, &store, MakeDispatcherOptions(options, plan, reporter, sampling));
  RunPlan after_probe;
  after_probe.total_rows = plan.total_rows;
  after_probe.already_done = plan.already_done + 1;  // the probe row, for the progress line
  Dispatcher rest(&client, &store, MakeDispatcherOptions(options, after_probe, reporter, sampling));
  RowFeed feed(&probe, &rest);
  feed.Add(std::move(plan.rows));
  ArrivingResponses arriving(inputs.dataset, plan.done);
  std::unique_ptr<PolicyFeed> sampler;
  if (!plan.HasTasksToSample()) {
    feed.Close();
  } else {
    HB_ASSIGN_OR_RETURN(sampler, StartSampling(inputs, plan, store, arriving, feed));
    sampling.feed = sampler.get();
  }
  const Dispatched probed = Dispatch(probe, stop);
  bool interrupted = probed.stats.stopping;
  absl::Status status = AsInternal(probed.journal);
  if (status.ok() && !interrupted) status = CheckProbe(probed);
  if (status.ok() && !interrupted) {
    const Dispatched graded = Dispatch(rest, stop);
    status = AsInternal(graded.journal);
    interrupted = graded.stats.stopping;
    if (graded.stats.gave_up) PrintGaveUp(options, graded);
  }
  if (sampler != nullptr) {
    sampler->Stop();  // at once when the rows are done, else (stopped early) mid-sampling
    unsampled = PrintSamplingFailures(inputs, plan, *sampler);
    // A fatal sampling error (a grader verdict as reply, the journal) ended the feed early.
    if (status.ok()) status = sampler->status();
  }
  HB_RETURN_IF_ERROR(status);
  return interrupted;
}

// Grades the plan online on `grader` (sampling the policies' replies as it goes).
absl::StatusOr<bool> GradeOnline(const RunOptions& options, const RunInputs& inputs, RunPlan plan,
                                 GraderConnection& grader, SqliteVerdictStore& store,
                                 StopSwitch& stop, int64_t& unsampled) {
  ProgressReporter reporter(options.progress, stderr, options.prices, options.metrics);
  absl::StatusOr<bool> interrupted = GradeRows(
      options, inputs, std::move(plan), grader.grader_client(), store, reporter, stop, unsampled);
  reporter.Finish();
  return interrupted;
}

// One progress line of a batch run: "batch: 3 batch(es) [in_progress 2, done 1] | requests 1200
// completed, 3 failed | rows 1197 graded, 0 failed, 3 re-sent | tokens ... | $0.12 at batch
// price (x0.5)".
std::string FormatBatchProgress(const BatchProgress& p, const RunOptions& options) {
  std::vector<std::string> states;
  int64_t batches = 0;
  for (const auto& [state, count] : p.states) {
    states.push_back(absl::StrCat(state, " ", count));
    batches += count;
  }
  return absl::StrFormat(
      "batch: %d batch(es) [%s] | requests %d completed, %d failed | rows %d graded, %d failed, "
      "%d re-sent | tokens in %d (cached %d) out %d | $%.4f at batch price (x%g)",
      batches, absl::StrJoin(states, ", "), p.requests_completed, p.requests_failed, p.ok_rows,
      p.failed_rows, p.retried_rows, p.prompt_tokens, p.cached_tokens, p.completion_tokens,
      CostUsd({p.prompt_tokens, p.cached_tokens, p.completion_tokens}, options.prices,
              options.batch_price_factor),
      options.batch_price_factor);
}

BatchGradingOptions MakeBatchGradingOptions(const RunOptions& options) {
  BatchGradingOptions batch_options;
  batch_options.dir = JoinPath(options.RunDir(), "batch");
  batch_options.max_requests = options.batch.max_requests;
  batch_options.max_file_bytes = options.batch.max_file_bytes;
  batch_options.poll_interval = options.batch.poll_interval;
  batch_options.max_attempts = options.grader_options.retry.max_attempts;
  batch_options.fallback_online = options.batch.fallback == "online";
  batch_options.settings = options.grader_options.settings;
  batch_options.limits = options.grader_options.limits;
  batch_options.send_prompt_cache_key = options.send_prompt_cache_key;
  batch_options.api_key = options.grader_options.llm.api_key;
  const bool show = options.progress != ProgressMode::kOff;
  batch_options.on_progress = [&options, show](const BatchProgress& p) {
    if (show) std::fprintf(stderr, "%s\n", FormatBatchProgress(p, options).c_str());
  };
  return batch_options;
}

// Grades `plan.rows` through the Batch API (or, with --batch-cancel, cancels the journal's
// unfinished batches). Rows to re-send online (--batch-fallback online) go to GradeOnline.
absl::StatusOr<bool> GradeBatch(const RunOptions& options, const RunInputs& inputs, RunPlan plan,
                                GraderConnection& online_grader, SqliteVerdictStore& journal,
                                StopSwitch& stop) {
  const LlmOptions& llm = options.grader_options.llm;
  CurlHttpClientOptions http_options;
  http_options.max_in_flight = 4;
  http_options.verify_tls = llm.verify_tls;
  http_options.ca_file = llm.ca_file;
  HB_ASSIGN_OR_RETURN(std::unique_ptr<CurlMultiHttpClient> http,
                      CurlMultiHttpClient::Create(http_options));
  BatchApiOptions api_options;
  api_options.base_url = llm.base_url;
  api_options.api_key = llm.api_key;
  api_options.retry = options.grader_options.retry;
  api_options.api = options.grader_options.settings.api;
  api_options.headers = WireHeaders(options.grader_options.settings.headers);
  BatchApi api(*http, *http, api_options);
  HB_RETURN_IF_ERROR(api.Probe());
  BatchGradingOptions batch_options = MakeBatchGradingOptions(options);
  BatchGrader grader(api, journal, journal, inputs.grader_template, *http, batch_options);
  stop.Attach(&grader);
  absl::StatusOr<BatchOutcome> outcome = options.batch.cancel
                                             ? grader.CancelAll(std::move(plan.rows))
                                             : grader.Run(std::move(plan.rows));
  stop.Attach(nullptr);
  HB_RETURN_IF_ERROR(outcome.status());
  std::fprintf(stderr, "hb-orchestrator run: %s\n",
               FormatBatchProgress(outcome->progress, options).c_str());
  if (options.batch.cancel) return true;
  if (outcome->interrupted || outcome->fallback_rows.empty()) return outcome->interrupted;
  std::fprintf(stderr, "hb-orchestrator run: grading %zu row(s) online (--batch-fallback online)\n",
               outcome->fallback_rows.size());
  std::vector<RowKey> keys;
  for (const PlannedRow& row : outcome->fallback_rows) keys.push_back(row.Key());
  RunPlan online;
  online.rows = std::move(outcome->fallback_rows);
  online.total_rows = plan.total_rows;
  online.already_done = plan.total_rows - static_cast<int64_t>(keys.size());
  int64_t unsampled = 0;  // batch mode samples nothing (ValidateBatchOptions)
  absl::StatusOr<bool> interrupted =
      GradeOnline(options, inputs, std::move(online), online_grader, journal, stop, unsampled);
  HB_RETURN_IF_ERROR(interrupted.status());
  HB_RETURN_IF_ERROR(AsInternal(journal.Flush()));
  HB_RETURN_IF_ERROR(AsInternal(journal.ForgetBatchRows(keys)));
  return interrupted;
}

}  // namespace

absl::StatusOr<bool> Grade(const RunOptions& options, const RunInputs& inputs, RunPlan plan,
                           GraderConnection& grader, SqliteVerdictStore& store, StopSwitch& stop,
                           int64_t& unsampled) {
  absl::StatusOr<bool> interrupted = false;
  if (options.grader_mode == "batch" && (!plan.rows.empty() || options.batch.cancel)) {
    interrupted = GradeBatch(options, inputs, std::move(plan), grader, store, stop);
  } else if (!plan.rows.empty() || plan.HasTasksToSample()) {
    interrupted = GradeOnline(options, inputs, std::move(plan), grader, store, stop, unsampled);
  }
  grader.Close();
  const absl::Status flushed = store.Flush();  // even after a dispatch failure
  HB_RETURN_IF_ERROR(interrupted.status());
  HB_RETURN_IF_ERROR(AsInternal(flushed));
  return interrupted;
}

}  // namespace hb::run_internal
