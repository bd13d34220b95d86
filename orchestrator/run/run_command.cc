#include "orchestrator/run/run_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "common/base/file.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/responses.h"
#include "common/healthbench/unscorable_tasks.h"
#include "grader/grader_info.h"
#include "grader/grader_settings.h"
#include "http/curl_http_client.h"
#include "http/url_redaction.h"
#include "llm/endpoint_preflight.h"
#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/run/batch_api.h"
#include "orchestrator/run/batch_grader.h"
#include "orchestrator/run/dispatcher.h"
#include "orchestrator/run/output_lock.h"
#include "orchestrator/run/row_feed.h"
#include "orchestrator/run/sqlite_verdict_store.h"

namespace hb {
namespace {

using healthbench::grader::v1::GraderInfo;

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// An error that is ours whatever its code (journal reads, dispatch, report writes): exit 1.
absl::Status AsInternal(const absl::Status& status) {
  return status.ok() ? status : absl::InternalError(status.message());
}

// An error that is the caller's whatever its code (output folder, grader target): exit 2.
absl::Status AsUsage(const absl::Status& status) {
  return status.ok() ? status : absl::InvalidArgumentError(status.message());
}

struct LoadedCheckpoint {
  CheckpointSpec spec;
  // For a policy checkpoint: its journaled replies until the reports, then the responses file
  // written from them (its sha256 is the identity of the policy until then).
  ResponseSet responses;
  // Set for a checkpoint sampled by this run (--policy).
  const PolicySource* policy = nullptr;
};

const PolicySource* FindPolicy(const RunOptions& options, const std::string& name) {
  for (const PolicySource& policy : options.policies) {
    if (policy.checkpoint == name) return &policy;
  }
  return nullptr;
}

// The tasks of `dataset` at `positions` (ascending, distinct), in that order. The examples are
// moved out of `dataset` (no copy of the largest data the run holds); its examples and index
// are cleared, its path, sha256 and skipped lines stay.
Dataset SubsetDataset(Dataset& dataset, const std::vector<size_t>& positions) {
  Dataset out;
  out.path = dataset.path;
  out.sha256 = dataset.sha256;
  out.skipped = dataset.skipped;
  out.examples.reserve(positions.size());
  for (size_t p : positions) {
    out.index[dataset.examples[p].prompt_id] = out.examples.size();
    out.examples.push_back(std::move(dataset.examples[p]));
  }
  std::vector<Example>().swap(dataset.examples);
  dataset.index.clear();
  return out;
}

// ---- Phase 1: the inputs. Every failure here is the caller's unless it is an I/O fault.
constexpr char kDatasetFix[] =
    "give the HealthBench JSONL's path (scripts/fetch_data.sh downloads the official files)";
constexpr char kGraderTemplateFix[] =
    "pass --grader-template PATH (scripts/fetch_data.sh --template-only writes "
    "data/grader_template.txt)";

// An input file given as `flag` `path` that could not be opened (`status` kNotFound,
// kPermissionDenied or kFailedPrecondition: missing, unreadable, a folder) as kInvalidArgument
// "<flag> <path>: <message>; <fix>". Other statuses (OK, a content error naming file:line) are
// returned unchanged.
absl::Status InputFileError(absl::string_view flag, absl::string_view path,
                            const absl::Status& status, absl::string_view fix) {
  if (status.code() != absl::StatusCode::kNotFound &&
      status.code() != absl::StatusCode::kPermissionDenied &&
      status.code() != absl::StatusCode::kFailedPrecondition) {
    return status;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " ", path, ": ", status.message(), "; ", fix));
}

struct RunInputs {
  std::string dataset_sha256;
  Dataset dataset;  // this run's tasks (selection and shard applied)
  std::vector<LoadedCheckpoint> checkpoints;
  GraderTemplate grader_template;
  // Tasks of the selection left out because they cannot be scored (--skip-unscorable-tasks).
  std::vector<UnscorableTask> unscorable;
};

// The tasks of `dataset` (this run's selection) that cannot be scored: without
// --skip-unscorable-tasks the first is an error naming its line and prompt_id (before any
// request is sent); with it they are removed from `dataset`, listed on stderr and returned.
absl::StatusOr<std::vector<UnscorableTask>> LeaveOutUnscorable(const RunOptions& options,
                                                               Dataset& dataset) {
  std::vector<UnscorableTask> unscorable = FindUnscorableTasks(dataset);
  if (unscorable.empty()) return unscorable;
  if (!options.skip_unscorable_tasks) {
    const UnscorableTask& first = unscorable.front();
    return absl::InvalidArgumentError(absl::StrCat(
        options.dataset, ":", first.line, ": task '", first.prompt_id,
        "' cannot be scored: ", first.reason,
        unscorable.size() > 1 ? absl::StrCat(" (", unscorable.size() - 1, " more such task(s))")
                              : "",
        ". The reference fails on such a task; fix the dataset, or pass "
        "--skip-unscorable-tasks to leave these tasks out (listed in summary.json and "
        "report.html)"));
  }
  std::vector<std::string> named;
  for (const UnscorableTask& task : unscorable) {
    named.push_back(absl::StrCat(task.prompt_id, " (line ", task.line, ")"));
  }
  std::fprintf(stderr,
               "hb-orchestrator run: --skip-unscorable-tasks: left out %zu task(s) without a "
               "rubric item of positive points (not graded, not in the score): %s\n",
               unscorable.size(), absl::StrJoin(named, ", ").c_str());
  RemoveTasks(dataset, unscorable);
  return unscorable;
}

// The dataset and every checkpoint's responses from their files.
absl::Status LoadInputFiles(const RunOptions& options, Dataset& full,
                            std::vector<LoadedCheckpoint>& checkpoints) {
  LoadOptions load_options;
  load_options.skip_invalid = options.skip_invalid;
  absl::StatusOr<Dataset> dataset = LoadDataset(options.dataset, load_options);
  HB_RETURN_IF_ERROR(InputFileError("--dataset", options.dataset, dataset.status(), kDatasetFix));
  full = *std::move(dataset);
  if (!full.skipped.empty()) {
    HB_LOG_WARN("skipped {} invalid dataset lines (--skip-invalid); first: line {}: {}",
                full.skipped.size(), full.skipped.front().line, full.skipped.front().error);
  }
  for (const CheckpointSpec& spec : options.checkpoints) {
    if (const PolicySource* policy = FindPolicy(options, spec.name); policy != nullptr) {
      ResponseSet journaled;
      journaled.path = spec.path;
      journaled.sha256 = PolicyJournalIdentity(*policy);
      checkpoints.push_back(LoadedCheckpoint{spec, std::move(journaled), policy});
      continue;
    }
    HB_ASSIGN_OR_RETURN(ResponseSet responses,
                        LoadResponses(spec.path, full, {options.ignore_extra_responses}));
    if (responses.ignored_extra > 0) {
      std::fprintf(stderr,
                   "hb-orchestrator run: %s: ignored %lld response(s) for tasks outside %s\n",
                   spec.name.c_str(), static_cast<long long>(responses.ignored_extra),
                   options.dataset.c_str());
    }
    checkpoints.push_back(LoadedCheckpoint{spec, std::move(responses), nullptr});
  }
  return absl::OkStatus();
}

absl::StatusOr<RunInputs> LoadInputs(const RunOptions& options) {
  Dataset full;
  std::vector<LoadedCheckpoint> checkpoints;
  if (options.prepared_inputs) {
    HB_ASSIGN_OR_RETURN(PreparedRunInputs prepared, options.prepared_inputs());
    full = std::move(prepared.dataset);
    checkpoints.push_back(
        LoadedCheckpoint{options.checkpoints.front(), std::move(prepared.responses), nullptr});
  } else {
    HB_RETURN_IF_ERROR(LoadInputFiles(options, full, checkpoints));
  }
  if (options.examples > 0) SelectExamples(full, static_cast<size_t>(options.examples));
  absl::StatusOr<std::vector<size_t>> positions =
      ShardTaskPositions(full.examples.size(), options.shard_index, options.shard_count);
  HB_RETURN_IF_ERROR(AsUsage(positions.status()));
  const std::string& template_path = options.grader_options.template_path;
  absl::StatusOr<GraderTemplate> grader_template =
      GraderTemplate::Load(template_path, options.grader_options.require_reference_template);
  HB_RETURN_IF_ERROR(InputFileError("--grader-template", template_path, grader_template.status(),
                                    kGraderTemplateFix));
  std::string sha256 = full.sha256;
  Dataset dataset = SubsetDataset(full, *positions);
  std::vector<UnscorableTask> unscorable;
  if (!options.prepared_inputs) {
    HB_ASSIGN_OR_RETURN(unscorable, LeaveOutUnscorable(options, dataset));
  }
  return RunInputs{std::move(sha256), std::move(dataset), std::move(checkpoints),
                   *std::move(grader_template), std::move(unscorable)};
}

// Whether some task of this run has a response: otherwise nothing is graded, and no grader is
// needed (nor asked what it grades with).
bool HasRows(const RunInputs& inputs) {
  for (const LoadedCheckpoint& c : inputs.checkpoints) {
    for (const Example& e : inputs.dataset.examples) {
      if (c.responses.Find(e.prompt_id) != nullptr) return true;
    }
  }
  return false;
}

// The grader of a run with nothing to grade: no connection; what it would grade with is this
// command's own settings.
absl::StatusOr<std::unique_ptr<GraderConnection>> NoGrader(const RunOptions& options,
                                                           const RunInputs& inputs) {
  auto connection = std::make_unique<GraderConnection>();
  const GraderStackOptions& grader = options.grader_options;
  connection->info = MakeGraderInfo(grader.settings, inputs.grader_template.sha256(),
                                    grader.llm.base_url, HB_PROJECT_VERSION);
  return connection;
}

// The grader of a run with rows to grade (grader_client/grader_connection.h). A gRPC grader
// must grade with what this command line asked for (RunOptions::expected_grader): checked on
// what the replicas report, before any row is sent.
absl::StatusOr<std::unique_ptr<GraderConnection>> ConnectRunGrader(const RunOptions& options) {
  HB_ASSIGN_OR_RETURN(GraderTarget target, ParseGraderTarget(options.grader));
  GraderConnectOptions connect;
  connect.target = std::move(target);
  connect.stack = options.grader_options;
  connect.security = options.grader_security;
  connect.ready_timeout = options.grader_ready_timeout;
  HB_ASSIGN_OR_RETURN(std::unique_ptr<GraderConnection> grader, ConnectGrader(connect));
  if (!connect.target.embedded()) {
    HB_RETURN_IF_ERROR(
        CheckGraderIsExpected(options.expected_grader, grader->info, options.grader));
  }
  return grader;
}

// The prices of the grader that grades: the list prices of the model it reports (GetInfo), unless
// --price-* flags were given (RunOptions::prices_follow_grader).
TokenPrices GraderPrices(const RunOptions& options, const GraderInfo& grader) {
  if (!options.prices_follow_grader) return options.prices;
  return ListPricesForModel(grader.model()).value_or(TokenPrices{});
}

// ---- Phase 2: the journal. A journal from another run is the caller's problem (exit 2); any
// other failure to open it is ours.
absl::StatusOr<std::unique_ptr<SqliteVerdictStore>> OpenJournal(const RunOptions& options,
                                                                const RunInputs& inputs,
                                                                const GraderInfo& grader) {
  const std::string run_dir = options.RunDir();
  SqliteVerdictStoreOptions journal_options;
  journal_options.path = JoinPath(run_dir, kJournalFileName);
  journal_options.force_new = options.force_new;
  JournalMeta& meta = journal_options.meta;
  meta.dataset_sha256 = inputs.dataset_sha256;
  meta.grader = IdentityOf(grader);
  meta.tool_version = HB_PROJECT_VERSION;
  for (const LoadedCheckpoint& c : inputs.checkpoints) {
    meta.responses_sha256.emplace_back(c.spec.name, c.responses.sha256);
  }
  absl::StatusOr<std::unique_ptr<SqliteVerdictStore>> journal =
      SqliteVerdictStore::Open(journal_options);
  if (!journal.ok() && journal.status().code() != absl::StatusCode::kFailedPrecondition) {
    return AsInternal(journal.status());
  }
  if (journal.ok() && !(*journal)->moved_aside_path().empty()) {
    HB_LOG_WARN("--force-new: moved the old journal to {}", (*journal)->moved_aside_path());
  }
  return journal;
}

// The replies of a policy checkpoint the journal holds, for this run's tasks, in journal order.
absl::StatusOr<std::vector<SampledReply>> JournaledReplies(const RunInputs& inputs,
                                                           const LoadedCheckpoint& c,
                                                           ReplyJournal& journal) {
  absl::StatusOr<std::vector<ReplyRecord>> records = journal.Replies(c.spec.name);
  HB_RETURN_IF_ERROR(AsInternal(records.status()));
  std::vector<SampledReply> replies;
  for (const ReplyRecord& record : *records) {
    if (inputs.dataset.Find(record.prompt_id) == nullptr) continue;  // another --examples
    absl::StatusOr<SampledReply> reply = ParseSampledReply(record.reply);
    if (!reply.ok()) {
      return absl::DataLossError(absl::StrCat("journal: reply of checkpoint '", c.spec.name,
                                              "' for task ", record.prompt_id, ": ",
                                              reply.status().message()));
    }
    replies.push_back(*std::move(reply));
  }
  return replies;
}

// Policy checkpoints start with the replies journaled by earlier runs.
absl::Status LoadJournaledReplies(RunInputs& inputs, ReplyJournal& journal) {
  for (LoadedCheckpoint& c : inputs.checkpoints) {
    if (c.policy == nullptr) continue;
    HB_ASSIGN_OR_RETURN(std::vector<SampledReply> replies, JournaledReplies(inputs, c, journal));
    c.responses.responses.reserve(replies.size());
    for (SampledReply& reply : replies) {
      c.responses.index[reply.prompt_id] = c.responses.responses.size();
      c.responses.responses.push_back(
          Response{reply.prompt_id, std::move(reply.response), std::move(reply.system_prompt), 0});
    }
  }
  return absl::OkStatus();
}

// ---- Phase 3: the plan. The rows still to grade, after those the journal holds as graded.
struct RunPlan {
  std::vector<PlannedRow> rows;
  int64_t total_rows = 0;
  int64_t already_done = 0;
  // Rows graded in the journal (rows arriving with a policy's replies are checked against it).
  absl::flat_hash_set<RowKey> done;
  // Per policy checkpoint (index into RunInputs::checkpoints): the tasks without a reply yet.
  std::vector<std::pair<size_t, std::vector<const Example*>>> to_sample;
  int64_t replies_journaled = 0;

  bool HasTasksToSample() const {
    for (const auto& [index, missing] : to_sample) {
      if (!missing.empty()) return true;
    }
    return false;
  }
};

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

// Grades the plan online on `grader` (sampling the policies' replies as it goes) or through the
// Batch API, then closes the grader; returns whether the run was interrupted. Errors:
// GradeRows' and GradeBatch's (exit code by RunExitCode). The journal is flushed whatever
// happened.
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

// Writes each policy checkpoint's journaled replies to its responses file (RUN_DIR/NAME/
// responses.jsonl, in task order, as `sample` writes it) and loads that file as the
// checkpoint's responses, so the reports record it as they record a --responses file.
absl::Status WriteSampledResponses(RunInputs& inputs, ReplyJournal& journal) {
  for (LoadedCheckpoint& c : inputs.checkpoints) {
    if (c.policy == nullptr) continue;
    HB_ASSIGN_OR_RETURN(std::vector<SampledReply> replies, JournaledReplies(inputs, c, journal));
    const size_t slash = c.spec.path.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      HB_RETURN_IF_ERROR(AsInternal(MakeDirs(c.spec.path.substr(0, slash))));
    }
    HB_RETURN_IF_ERROR(
        AsInternal(WriteResponsesFile(c.spec.path, inputs.dataset.examples, replies).status()));
    absl::StatusOr<ResponseSet> written = LoadResponses(c.spec.path, inputs.dataset);
    HB_RETURN_IF_ERROR(AsInternal(written.status()));
    c.responses = *std::move(written);
  }
  return absl::OkStatus();
}

// ---- Phase 5: the reports, from the journal.
struct ReportTotals {
  int64_t failed_rows = 0;
  int64_t missing_rows = 0;
  // The failed rows' errors.
  std::vector<std::string> errors;
  // Per checkpoint, this run's tasks without a response (only when some lack one).
  std::vector<std::pair<std::string, int64_t>> without_response;
  // Over every checkpoint, as the reports give them.
  ReportUsage usage;
  // Each checkpoint's report, in the run's order.
  std::vector<CheckpointResult> results;
};

// This run's tasks that have no response in `c`.
int64_t TasksWithoutResponse(const RunInputs& inputs, const LoadedCheckpoint& c) {
  int64_t n = 0;
  for (const Example& e : inputs.dataset.examples) {
    if (c.responses.Find(e.prompt_id) == nullptr) ++n;
  }
  return n;
}

// The journal's rows of `c` that belong to this run's tasks (the journal may hold others after
// a change of --examples), as verdicts and failures.
absl::Status CollectRows(const RunInputs& inputs, const LoadedCheckpoint& c, VerdictStore& store,
                         std::vector<VerdictRow>& verdicts, std::vector<RowFailure>& failures) {
  absl::StatusOr<std::vector<RowRecord>> journal_rows = store.Rows(c.spec.name);
  HB_RETURN_IF_ERROR(AsInternal(journal_rows.status()));
  const Dataset& dataset = inputs.dataset;
  verdicts.reserve(journal_rows->size());
  for (RowRecord& row : *journal_rows) {
    // Only this run's tasks (the journal may hold others after a change of --examples).
    const Example* example = dataset.Find(row.key.prompt_id);
    if (example == nullptr || c.responses.Find(row.key.prompt_id) == nullptr ||
        row.key.rubric_index >= static_cast<int>(example->rubrics.size())) {
      continue;
    }
    if (row.ok) {
      VerdictRow v;
      v.prompt_id = std::move(row.key.prompt_id);
      v.rubric_index = row.key.rubric_index;
      v.criteria_met = row.criteria_met;
      v.explanation = std::move(row.explanation);
      v.attempts = row.attempts;
      v.prompt_tokens = row.prompt_tokens;
      v.cached_tokens = row.cached_tokens;
      v.completion_tokens = row.completion_tokens;
      v.from_cache = row.from_cache;
      v.batch = row.batch;
      verdicts.push_back(std::move(v));
    } else {
      failures.push_back(RowFailure{row.key.prompt_id, row.key.rubric_index, row.error});
    }
  }
  return absl::OkStatus();
}

// `with_score` false (meta-eval, whose score is its own): the rows only.
void PrintCheckpointLine(const std::string& name, const CheckpointResult& result,
                         const std::string& report_path, bool with_score) {
  const std::string score =
      with_score ? absl::StrFormat("score %s over %d graded task(s), %d not graded; ",
                                   HeadlineOf(result).Text(), result.graded, result.not_graded)
                 : "";
  std::fprintf(stderr, "%s: %srows %lld graded, %lld failed, %lld missing -> %s\n", name.c_str(),
               score.c_str(), static_cast<long long>(result.graded_rows),
               static_cast<long long>(result.failed_rows),
               static_cast<long long>(result.rows - result.graded_rows - result.failed_rows),
               report_path.c_str());
}

// `wall_time`: of every run that wrote to the journal (this one included).
// `simulated_reason`: SimulatedReason, when options.simulated_verdicts.
absl::StatusOr<ReportTotals> WriteReports(const RunOptions& options, const RunInputs& inputs,
                                          const GraderConnection& grader, VerdictStore& store,
                                          bool interrupted, absl::Duration wall_time,
                                          const std::string& simulated_reason) {
  const std::string run_dir = options.RunDir();
  std::vector<CheckpointResult> results;
  ReportTotals totals;
  for (size_t i = 0; i < inputs.checkpoints.size(); ++i) {
    const LoadedCheckpoint& c = inputs.checkpoints[i];
    std::vector<VerdictRow> verdicts;
    std::vector<RowFailure> failures;
    HB_RETURN_IF_ERROR(CollectRows(inputs, c, store, verdicts, failures));
    ReportContext context;
    context.checkpoint = c.spec.name;
    context.dataset_path = options.dataset;
    context.dataset_sha256 = inputs.dataset_sha256;
    context.responses_path = c.spec.path;
    context.responses_sha256 = c.responses.sha256;
    context.subset = options.subset;
    context.responses_ignored_extra = c.responses.ignored_extra;
    context.unscorable_tasks = inputs.unscorable;
    context.template_sha256 = grader.info.template_sha256();
    context.grader = SettingsOf(grader.info);
    context.length_adjustment = options.length_adjustment;
    context.grader_upstream = grader.info.upstream_base_url();
    context.grader_version = grader.info.version();
    context.grader_replicas = grader.replicas;
    context.seed = options.seed;
    context.simulated = options.simulated_verdicts;
    context.simulated_reason = simulated_reason;
    const int64_t without_response = TasksWithoutResponse(inputs, c);
    if (without_response > 0) totals.without_response.emplace_back(c.spec.name, without_response);
    context.incomplete = interrupted || (without_response > 0 && !options.allow_partial_responses);
    context.grader_endpoint = options.grader == kEmbeddedGrader
                                  ? absl::StrCat("embedded (", grader.info.upstream_base_url(), ")")
                                  : options.grader;
    context.examples = options.examples;
    context.shard_index = options.shard_index;
    context.shard_count = options.shard_count;
    context.checkpoint_index = static_cast<int>(i);
    context.prices = options.prices;
    context.batch_price_factor = options.batch_price_factor;
    context.wall_time = wall_time;
    const std::string dir = JoinPath(run_dir, c.spec.name);
    absl::StatusOr<CheckpointResult> result =
        WriteCheckpointReport(inputs.dataset, c.responses, verdicts, failures, context, dir);
    HB_RETURN_IF_ERROR(AsInternal(result.status()));
    for (RowFailure& failure : failures) totals.errors.push_back(std::move(failure.reason));
    totals.failed_rows += result->failed_rows;
    totals.missing_rows += result->rows - result->graded_rows - result->failed_rows;
    totals.usage += result->usage;
    PrintCheckpointLine(c.spec.name, *result, JoinPath(dir, "report.html"),
                        !options.prepared_inputs);
    results.push_back(*std::move(result));
  }
  if (results.size() >= 2) {
    HB_RETURN_IF_ERROR(AsInternal(WriteComparison(results, options.seed, run_dir)));
  }
  totals.results = std::move(results);
  return totals;
}

// The grader endpoint as the messages name it: the embedded grader's upstream or the gRPC target.
std::string GraderEndpoint(const RunOptions& options) {
  return options.grader == kEmbeddedGrader
             ? RedactUrl(options.grader_options.llm.base_url)
             : absl::StrCat("the hb-grader replicas at ", options.grader);
}

// Why the run is simulated, as the reports say it (ReportContext::simulated_reason).
std::string SimulatedReason(bool detected) {
  return detected ? "the grader endpoint identified itself as hb-llm-sim"
                  : "declared by --simulated-verdicts";
}

// The banner of a simulated run: `detected` when a verdict came from hb-llm-sim (it says so in
// a response header), else declared by --simulated-verdicts. Names the endpoint actually called,
// never a simulator the run did not reach.
void PrintSimulatedBanner(const RunOptions& options, bool detected) {
  const std::string line =
      detected ? absl::StrCat("the grader endpoint (", GraderEndpoint(options),
                              ") identified itself as hb-llm-sim: verdicts are a deterministic "
                              "hash of the prompt")
               : absl::StrCat("declared by --simulated-verdicts; the grader endpoint is ",
                              GraderEndpoint(options));
  std::fprintf(stderr,
               "\n"
               "************************************************************************\n"
               "*  SIMULATED VERDICTS: %s.\n"
               "*  NOT a HealthBench result. Reports are marked SIMULATED.\n"
               "************************************************************************\n\n",
               line.c_str());
}

// The run's cost line: what the verdicts in the reports cost (across resumes), what the verdict
// cache saved, and the wall time.
void PrintCostLine(const RunOptions& options, const ReportTotals& totals, absl::Duration wall_time,
                   absl::Duration this_run) {
  const TokenPrices& prices = options.prices;
  const ReportUsage& usage = totals.usage;
  std::string line = absl::StrFormat(
      "hb-orchestrator run: cost $%.2f: tokens in %s (cached %s) out %s at $%.2f / $%.2f / $%.2f "
      "per million input / cached input / output tokens",
      usage.CostUsd(prices, options.batch_price_factor), FormatTokenCount(usage.prompt_tokens),
      FormatTokenCount(usage.cached_tokens), FormatTokenCount(usage.completion_tokens),
      prices.input_per_mtok, prices.cached_input_per_mtok, prices.output_per_mtok);
  if (usage.batch_rows > 0) {
    absl::StrAppend(&line, absl::StrFormat("; %d row(s) through the Batch API at x%g",
                                           usage.batch_rows, options.batch_price_factor));
  }
  if (usage.from_cache_rows > 0) {
    absl::StrAppend(&line, absl::StrFormat("; %d verdict(s) from the verdict cache saved $%.2f",
                                           usage.from_cache_rows, CostUsd(usage.saved, prices)));
  }
  absl::StrAppend(&line, "; wall time ", FormatEta(wall_time));
  if (wall_time - this_run >= absl::Seconds(1)) {
    absl::StrAppend(&line, " over every run (this one ", FormatEta(this_run), ")");
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

void PrintTopFailureReasons(const std::vector<std::string>& errors) {
  const std::vector<std::pair<std::string, int64_t>> top = TopFailureReasons(errors, 3);
  if (top.empty()) return;
  std::fputs("hb-orchestrator run: most frequent failure reasons:\n", stderr);
  for (const auto& [reason, count] : top) {
    std::fprintf(stderr, "  %lld x %s\n", static_cast<long long>(count), reason.c_str());
  }
}

// ---- Phase 0: what can be known before any request (llm/endpoint_preflight.h): the embedded
// grader's upstream (online or batch) and every policy has its key and a host that resolves.
// (A gRPC --grader's upstream is its replicas' business: hb-grader checks its own.)
absl::Status PreflightEndpoints(const RunOptions& options) {
  if (options.grader == kEmbeddedGrader) {
    HB_RETURN_IF_ERROR(PreflightEndpoint(
        LlmEndpoint(options.grader_options.llm, options.grader_options.settings.headers)));
  }
  for (const PolicySource& policy : options.policies) {
    HB_RETURN_IF_ERROR(PreflightEndpoint(PolicyEndpoint(policy.options)));
  }
  return absl::OkStatus();
}

// The start-up probe of the embedded online grader's upstream (llm/endpoint_preflight.h
// ProbeEndpoint), just before its first request: a judge that refuses connections, the key or
// the URL, or that is not an OpenAI-compatible endpoint, stops the run with exit 2 and the
// reason within seconds. (The Batch API path probes its own; a gRPC grader's upstream is its
// replicas'.) A judge that fails once grading started is an outage: rows fail, exit 3.
absl::Status ProbeJudge(const RunOptions& options) {
  if (options.grader != kEmbeddedGrader || options.grader_mode != "online") {
    return absl::OkStatus();
  }
  const GraderStackOptions& grader = options.grader_options;
  CurlHttpClientOptions http_options;
  http_options.max_in_flight = 1;
  http_options.verify_tls = grader.llm.verify_tls;
  http_options.ca_file = grader.llm.ca_file;
  absl::StatusOr<std::unique_ptr<CurlMultiHttpClient>> http =
      CurlMultiHttpClient::Create(http_options);
  HB_RETURN_IF_ERROR(AsInternal(http.status()));
  EndpointPreflight endpoint = LlmEndpoint(grader.llm, grader.settings.headers);
  endpoint.api_key = grader.llm.api_key;
  endpoint.headers = WireHeaders(grader.settings.headers);
  HB_ASSIGN_OR_RETURN(const std::string warning, ProbeEndpoint(endpoint, **http));
  if (!warning.empty()) HB_LOG_WARN("start-up probe: {}", warning);
  return absl::OkStatus();
}

// The phases in order, with the run folder locked; the exit code of a completed run (0, 3 or 4).
// `results` (when not null) receives each checkpoint's report.
absl::StatusOr<int> RunPhases(const RunOptions& given, StopSwitch& stop,
                              std::vector<CheckpointResult>* results) {
  RunOptions options = given;  // its prices become the grader's once it is connected
  const absl::Time started = absl::Now();
  HB_RETURN_IF_ERROR(PreflightEndpoints(options));
  HB_RETURN_IF_ERROR(MakeOutputDirs("--out", options.out, options.RunDir()));
  HB_ASSIGN_OR_RETURN(const std::unique_ptr<OutputLock> lock,
                      OutputLock::Acquire(options.RunDir()));
  HB_ASSIGN_OR_RETURN(RunInputs inputs, LoadInputs(options));
  // Before the journal: it records what the grader grades with (GetInfo), not our own flags.
  HB_ASSIGN_OR_RETURN(std::unique_ptr<GraderConnection> grader,
                      HasRows(inputs) || !options.policies.empty() ? ConnectRunGrader(options)
                                                                   : NoGrader(options, inputs));
  options.prices = GraderPrices(options, grader->info);
  HB_ASSIGN_OR_RETURN(std::unique_ptr<SqliteVerdictStore> journal,
                      OpenJournal(options, inputs, grader->info));
  HB_RETURN_IF_ERROR(LoadJournaledReplies(inputs, *journal));
  HB_ASSIGN_OR_RETURN(RunPlan plan, Plan(options, inputs, *journal));
  if (!plan.rows.empty() || plan.HasTasksToSample()) HB_RETURN_IF_ERROR(ProbeJudge(options));
  int64_t unsampled = 0;
  HB_ASSIGN_OR_RETURN(const bool interrupted,
                      Grade(options, inputs, std::move(plan), *grader, *journal, stop, unsampled));
  const absl::Duration this_run = absl::Now() - started;
  HB_RETURN_IF_ERROR(AsInternal(journal->AddRunTime(started, this_run)));
  const absl::StatusOr<absl::Duration> wall_time = journal->TotalRunTime();
  HB_RETURN_IF_ERROR(AsInternal(wall_time.status()));
  HB_RETURN_IF_ERROR(WriteSampledResponses(inputs, *journal));
  // A verdict from hb-llm-sim (it says so in a header) makes the run simulated, declared or not.
  const absl::StatusOr<bool> detected = journal->AnySimulatedRow();
  HB_RETURN_IF_ERROR(AsInternal(detected.status()));
  options.simulated_verdicts = options.simulated_verdicts || *detected;
  HB_ASSIGN_OR_RETURN(ReportTotals totals,
                      WriteReports(options, inputs, *grader, *journal, interrupted, *wall_time,
                                   SimulatedReason(*detected)));
  if (results != nullptr) *results = totals.results;
  PrintCostLine(options, totals, *wall_time, this_run);
  if (options.simulated_verdicts) PrintSimulatedBanner(options, *detected);
  PrintTopFailureReasons(totals.errors);
  if (interrupted) {
    int64_t not_sampled = 0;
    for (const auto& [name, count] : totals.without_response) {
      if (FindPolicy(options, name) != nullptr) not_sampled += count;
    }
    std::fprintf(
        stderr,
        "hb-orchestrator run: interrupted; partial reports (marked incomplete) written. "
        "Run the same command again to grade the %lld missing row(s)%s.\n",
        static_cast<long long>(totals.missing_rows),
        not_sampled == 0
            ? ""
            : absl::StrCat(" and sample the ", not_sampled, " task(s) without a reply").c_str());
    return kExitInterrupted;
  }
  const bool partial = !totals.without_response.empty() && !options.allow_partial_responses;
  for (const auto& [name, count] : totals.without_response) {
    std::fprintf(stderr, "hb-orchestrator run: %s: %lld task(s) have no response%s\n", name.c_str(),
                 static_cast<long long>(count),
                 options.allow_partial_responses
                     ? " (accepted: --allow-partial-responses)"
                     : "; the reports are marked INCOMPLETE. Add the missing responses, or "
                       "pass --allow-partial-responses to accept partial coverage");
  }
  if (totals.failed_rows > 0 || totals.missing_rows > 0) {
    std::fprintf(stderr,
                 "hb-orchestrator run: %lld row(s) failed and %lld missing; their tasks are "
                 "reported as not graded (see failures.jsonl). Run the same command again to "
                 "retry them.\n",
                 static_cast<long long>(totals.failed_rows),
                 static_cast<long long>(totals.missing_rows));
    return kExitRowsFailed;
  }
  return partial || unsampled > 0 ? kExitRowsFailed : kExitOk;
}

}  // namespace

std::string RunOptions::RunDir() const {
  if (shard_count <= 1) return out;
  return JoinPath(out, absl::StrCat("shard-", shard_index));
}

absl::Status ValidateBatchOptions(const RunOptions& options) {
  if (options.grader_mode != "online" && options.grader_mode != "batch") {
    return absl::InvalidArgumentError(
        absl::StrCat("--grader-mode: expected online or batch, got '", options.grader_mode, "'"));
  }
  HB_RETURN_IF_ERROR(ValidateBatchPriceFactor(options.batch_price_factor));
  const BatchRunOptions& batch = options.batch;
  if (options.grader_mode != "batch") {
    if (batch.cancel) return absl::InvalidArgumentError("--batch-cancel needs --grader-mode batch");
    return absl::OkStatus();
  }
  if (options.grader != kEmbeddedGrader) {
    return absl::InvalidArgumentError(
        "--grader-mode batch sends the requests to --llm-base-url itself: use --grader embedded "
        "(the default) with the --llm-* flags, not a gRPC --grader target");
  }
  if (!options.policies.empty()) {
    return absl::InvalidArgumentError(
        "--grader-mode batch grades once every reply exists, --policy samples while grading "
        "online: sample first (hb-orchestrator sample ... --out FILE), then run --grader-mode "
        "batch --responses NAME=FILE");
  }
  if (batch.max_requests < 1 || batch.max_requests > 50000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch-max-requests must be in [1, 50000] (the Batch API's limit), got ",
                     batch.max_requests));
  }
  if (batch.max_file_bytes < 1024 || batch.max_file_bytes > (int64_t{200} << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch-max-file-bytes must be in [1024, 209715200] (200 MB, the Batch API's limit), "
        "got ",
        batch.max_file_bytes));
  }
  if (batch.poll_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--batch-poll-interval must be positive");
  }
  if (batch.fallback != "batch" && batch.fallback != "online") {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch-fallback: expected batch or online, got '", batch.fallback, "'"));
  }
  return absl::OkStatus();
}

absl::Status ValidateRunOptions(const RunOptions& options) {
  if (options.dataset.empty()) return absl::InvalidArgumentError("--dataset is required");
  if (options.out.empty()) return absl::InvalidArgumentError("--out is required");
  if (options.checkpoints.empty()) return absl::InvalidArgumentError(kNoCheckpointsError);
  if (options.grader.empty()) {
    return absl::InvalidArgumentError("--grader must be 'embedded' or a gRPC target");
  }
  HB_RETURN_IF_ERROR(ParseGraderTarget(options.grader).status());
  if (options.max_in_flight < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-in-flight must be >= 1, got ", options.max_in_flight));
  }
  if (options.row_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--row-attempts must be >= 1, got ", options.row_attempts));
  }
  if (options.stop_after_same_failures < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--stop-after-same-failures must be >= 0, got ",
                                                   options.stop_after_same_failures));
  }
  if (options.row_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--row-timeout must be positive");
  }
  if (options.progress_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--progress-interval must be positive");
  }
  if (options.drain_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain-timeout must not be negative");
  }
  if (options.examples == 0 || options.examples < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--examples must be a positive count or -1 (all), got ", options.examples));
  }
  HB_RETURN_IF_ERROR(ShardTaskPositions(0, options.shard_index, options.shard_count).status());
  if (options.prepared_inputs &&
      (options.checkpoints.size() != 1 || !options.policies.empty() || options.shard_count > 1)) {
    return absl::InvalidArgumentError(
        "prepared inputs take exactly one checkpoint, no --policy and no sharding");
  }
  HB_RETURN_IF_ERROR(ValidateBatchOptions(options));
  return ValidateTokenPrices(options.prices);
}

std::vector<std::pair<std::string, int64_t>> TopFailureReasons(
    const std::vector<std::string>& errors, size_t n) {
  absl::flat_hash_map<std::string, int64_t> counts;
  for (const std::string& error : errors) {
    absl::string_view reason = error;
    const size_t suffix = reason.rfind(" (attempt ");
    if (suffix != absl::string_view::npos && absl::EndsWith(reason, ")")) {
      reason = reason.substr(0, suffix);
    }
    ++counts[reason];
  }
  std::vector<std::pair<std::string, int64_t>> top(counts.begin(), counts.end());
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (top.size() > n) top.resize(n);
  return top;
}

absl::StatusOr<int> RunGrading(const RunOptions& options, StopSwitch& stop,
                               std::vector<CheckpointResult>* results) {
  return RunPhases(options, stop, results);
}

int RunWithOptions(const RunOptions& options) {
  if (options.simulated_verdicts) PrintSimulatedBanner(options, /*detected=*/false);
  // Before any thread starts (the journal's writer, gRPC's pollers): a SIGTERM must reach the
  // watcher, never a thread whose default action would kill the process.
  StopSwitch stop;
  StopSignals signals([&](int signal, int count) {
    if (count == 1) {
      HB_LOG_WARN("{} received: stopping (in-flight rows get {} to finish)", SignalName(signal),
                  absl::FormatDuration(options.drain_timeout));
      stop.Request();
    } else {
      HB_LOG_WARN("second signal: exiting at once (committed rows are kept in the journal)");
      std::_Exit(kExitInterrupted);
    }
  });
  const NewOutputDirs new_dirs(options.RunDir());
  absl::StatusOr<int> code = RunPhases(options, stop, nullptr);
  if (!code.ok()) {
    new_dirs.RemoveIfUnused();  // a run refused before writing anything leaves no folder
    std::fprintf(stderr, "hb-orchestrator run: %s\n",
                 absl::StrReplaceAll(code.status().message(), {{"\n", " "}}).c_str());
    return ExitCodeFor(code.status());
  }
  return *code;
}

}  // namespace hb
