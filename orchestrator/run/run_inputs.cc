#include "orchestrator/run/run_inputs.h"

#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/file.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "grader/grader_settings.h"
#include "orchestrator/policy/sampled_reply.h"

namespace hb::run_internal {

using healthbench::grader::v1::GraderInfo;

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

absl::Status AsInternal(const absl::Status& status) {
  return status.ok() ? status : absl::InternalError(status.message());
}

absl::Status AsUsage(const absl::Status& status) {
  return status.ok() ? status : absl::InvalidArgumentError(status.message());
}

const PolicySource* FindPolicy(const RunOptions& options, const std::string& name) {
  for (const PolicySource& policy : options.policies) {
    if (policy.checkpoint == name) return &policy;
  }
  return nullptr;
}

namespace {

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

}  // namespace

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

bool HasRows(const RunInputs& inputs) {
  for (const LoadedCheckpoint& c : inputs.checkpoints) {
    for (const Example& e : inputs.dataset.examples) {
      if (c.responses.Find(e.prompt_id) != nullptr) return true;
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<GraderConnection>> NoGrader(const RunOptions& options,
                                                           const RunInputs& inputs) {
  auto connection = std::make_unique<GraderConnection>();
  const GraderStackOptions& grader = options.grader_options;
  connection->info = MakeGraderInfo(grader.settings, inputs.grader_template.sha256(),
                                    grader.llm.base_url, HB_PROJECT_VERSION);
  return connection;
}

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

namespace {

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

}  // namespace

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

}  // namespace hb::run_internal
