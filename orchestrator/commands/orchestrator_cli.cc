#include "orchestrator/commands/orchestrator_cli.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "absl/flags/marshalling.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/command_line.h"
#include "cli/grader_flags.h"
#include "cli/metrics_flags.h"
#include "cli/security_flags.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "common/base/status_macros.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/grading_flags.h"
#include "orchestrator/commands/meta_eval_command.h"
#include "orchestrator/commands/offline_commands.h"
#include "orchestrator/commands/offline_flags.h"
#include "orchestrator/commands/orchestrator_metrics.h"
#include "orchestrator/commands/policy_flags.h"
#include "orchestrator/commands/watch_command.h"
#include "orchestrator/run/policy_checkpoints.h"

namespace hb {
namespace {

using commands_internal::AddBatchFlags;
using commands_internal::AddDispatchFlags;
using commands_internal::AddGraderGroup;
using commands_internal::AddGradingFlags;
using commands_internal::AddProgressFlags;
using commands_internal::kExamplesHelp;
using commands_internal::ResolveGradingFlags;
using commands_internal::RunFlags;

constexpr char kDescription[] = R"(hb-orchestrator: grade model responses on HealthBench.

usage: hb-orchestrator <command> [flags] [args]
       hb-orchestrator <command> --help     (the command's flags))";

constexpr char kFooter[] =
    "Exit status: 0 on success, 2 on bad usage or bad input (one line on stderr), 3 when "
    "`merge` leaves a report INCOMPLETE (a shard or rows missing); `run` and `meta-eval` document "
    "their own exit codes.";

constexpr char kRunDescription[] =
    R"(grade checkpoints, in this process (the default) or through hb-grader replicas.

usage: hb-orchestrator run --dataset FILE --responses [NAME=]FILE[,...] --out DIR [flags]

Grades every rubric item of every task that has a response, for each checkpoint, with the
embedded grader (--grader embedded, the default) or through hb-grader replicas (--grader
TARGET); journals each verdict in DIR/journal.sqlite and writes DIR/<checkpoint>/
{tasks.jsonl, summary.json, verdicts.jsonl, failures.jsonl, report.html}, plus
DIR/comparison.{json,html} for two or more checkpoints. Running the same command again grades
only the rows that failed or are missing.)";

constexpr char kRunFooter[] = R"(exit codes:
  0  every row graded
  3  some rows failed after their attempts (their tasks are reported as not graded); run
     again to retry exactly those rows. Also: some tasks have no response (reports marked
     INCOMPLETE), unless --allow-partial-responses
  2  bad usage or bad input, including a journal from another run, grader replicas that
     disagree on their settings, no API key for a remote https endpoint, a host that does not
     resolve or an --out that cannot be written (these before any request), a --policy that
     answers with grader verdicts (not worth retrying)
  4  interrupted by SIGTERM/SIGINT: in-flight rows drained, partial reports marked incomplete
  1  internal error)";

constexpr char kWatchDescription[] =
    R"(grade a training run's checkpoints as they land.

usage: hb-orchestrator watch --dataset FILE --checkpoints-dir DIR --out OUT [grading flags]

The trainer writes DIR/<name>/responses.jsonl (or .gz), then DIR/<name>/DONE (--ready-marker).
Each ready checkpoint is graded once for its (responses sha256, dataset sha256, grader) by the
same grading as `run` (journal, grader, reports), one at a time in natural step order, in
OUT/versions/<name>/v<N>/; OUT/<name> points at its report folder and OUT/comparison.{json,html}
is rewritten over every checkpoint graded so far (step-100 < step-200 < step-1000), with the
score trend. A changed responses file is graded again as a new version (both kept). A grading
that did not complete (judge outage, failed rows) is retried later with backoff; nothing else
waits for it. State: OUT/watch.jsonl; a restart resumes where it stopped.)";

constexpr char kWatchFooter[] = R"(exit codes:
  0  (without --once) stopped by SIGTERM/SIGINT: the checkpoint in flight drained and
     journaled its rows (it resumes at the next start)
  --once: as run over the checkpoints graded: 0 all graded, 3 some not done (retried at
     the next call), 4 interrupted
  2  bad usage or input, or OUT has another watcher or run (OUT/.lock, the pid on stderr)
  1  internal error (OUT/watch.jsonl cannot be written))";

constexpr char kMetaEvalDescription[] =
    R"(grade the meta-eval: the judge's verdicts against physicians' labels.

usage: hb-orchestrator meta-eval --dataset FILE --out DIR [--examples N] [grader flags]

The reference's meta-eval (simple-evals healthbench_meta_eval.py): every row {prompt,
completion, rubric, category, binary_labels, anonymized_physician_ids} of FILE is graded by the
grader (the rubric text as it stands in the file goes into the template), through the same
grader stack as `run` (embedded or remote, online or batch, verdict cache), journaled in
DIR/journal.sqlite (the same command again grades only what is left). Writes DIR/meta_eval.json
(score = pairwise_model_f1_balanced, the reference's metrics, the physicians' agreement, the
failed rows), DIR/meta_eval.html (the judge's balanced F1 per category against the physicians'
spread) and DIR/meta-eval/ (every verdict: report.html, verdicts.jsonl, failures.jsonl,
summary.json with the cost). A row without a boolean criteria_met within its attempts is
reported as failed (meta_eval.json and stderr), never used as a label.)";

constexpr char kMetaEvalFooter[] = R"(exit codes:
  0  every row graded
  3  some rows failed after their attempts (listed; left out of the metrics); run again to
     retry exactly those
  2  bad usage or bad input (flags, the meta-eval file with its line, a journal from another
     grader or file, no API key for a remote endpoint)
  4  interrupted by SIGTERM/SIGINT: meta_eval.json written over the rows graded so far
  1  internal error)";

constexpr char kSampleDescription[] =
    R"(sample one reply per task from a served policy model.

usage: hb-orchestrator sample --dataset FILE --policy-base-url URL --policy-model NAME --out FILE

POSTs each task to URL/chat/completions (any OpenAI-compatible server: vLLM, OpenAI,
hb-llm-sim's policy route) and writes FILE in the responses format {prompt_id, response,
system_prompt?, model, finish_reason, usage} that `run --responses` grades, plus
FILE.summary.json (counts of failed, length-truncated and empty replies) and
FILE.failures.jsonl. Replies are journaled in FILE.journal as they arrive: the same command
again samples only the tasks that have none. The first request goes alone (a probe), so an
unreachable URL, a rejected key or an unknown model fails within seconds.)";

constexpr char kSampleFooter[] = R"(exit codes:
  0  every task has a reply
  3  some tasks failed after their attempts (listed on stderr and in FILE.failures.jsonl); run
     again to retry exactly those
  2  bad usage or input: flags, dataset, a journal from other settings, no API key for a
     remote https URL, a host that does not resolve, an --out that is a directory or cannot be
     written (these before any request), the probe failed (unreachable URL, 400/401/403,
     unknown model 404), or replies that are grader verdicts (a grader route as policy)
  1  internal error)";

// hb-orchestrator's program and the structs its flags fill. One per parse.
class OrchestratorCommandLine {
 public:
  OrchestratorCommandLine() : program_("hb-orchestrator", kDescription, kFooter) {
    AddRun();
    AddWatch();
    AddSample();
    offline_.AddTo(program_);
    AddMetaEval();
  }

  cli::Program& program() { return program_; }
  // tasks, dry-run, score, merge and compare.
  commands_internal::OfflineFlags& offline() { return offline_; }

  absl::StatusOr<RunOptions> RunOptionsFromFlags() {
    RunOptions options = run_.options;
    for (const std::string& value : run_.responses) {
      for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
        response_specs_.emplace_back(absl::StripAsciiWhitespace(part));
      }
    }
    if (!run_command_->Given("shard-index")) {
      const char* env = std::getenv("JOB_COMPLETION_INDEX");
      if (env != nullptr && *env != '\0' && !absl::ParseFlag(env, &options.shard_index, nullptr)) {
        return absl::InvalidArgumentError(
            absl::StrCat("JOB_COMPLETION_INDEX='", env, "' is not an integer"));
      }
    }
    HB_RETURN_IF_ERROR(ResolveGradingFlags(*run_command_, run_, options));
    policies_.clear();
    for (const std::string& value : run_.policies) {
      HB_ASSIGN_OR_RETURN(PolicyCheckpoint policy, ParsePolicyCheckpoint(value));
      policies_.push_back(std::move(policy));
    }
    for (std::string& spec : PolicyResponseSpecs(options, policies_)) {
      response_specs_.push_back(std::move(spec));
    }
    HB_ASSIGN_OR_RETURN(options.checkpoints, ParseCheckpointSpecs(response_specs_));
    if (!policies_.empty()) {
      HB_ASSIGN_OR_RETURN(options.policies, RunPoliciesFromFlags());
    }
    HB_RETURN_IF_ERROR(ValidateRunOptions(options));
    if (merge_when_complete_ && options.shard_count <= 1) {
      options.out = absl::StrCat(options.out, "/shard-", options.shard_index);
    }
    return options;
  }

  // With --merge-when-complete: the merge each shard tries after its run (OrchestratorMain).
  std::optional<MergeOptions> ShardMergeOptions() const {
    if (!merge_when_complete_) return std::nullopt;
    const RunOptions& o = run_.options;
    MergeOptions merge;
    merge.out = o.out + "/merged";
    merge.when_complete = true;
    for (int i = 0; i < std::max(o.shard_count, 1); ++i) {
      merge.shard_dirs.push_back(absl::StrCat(o.out, "/shard-", i));
    }
    return merge;
  }

  // The policy checkpoints of `run` with their sampling settings (the flags they share).
  absl::StatusOr<std::vector<PolicySource>> RunPoliciesFromFlags() {
    PolicyOptions shared;
    HB_RETURN_IF_ERROR(cli::ResolvePolicyFlags(*run_command_, run_.policy, &shared));
    shared.max_in_flight = run_.policy_max_in_flight;
    if (shared.max_in_flight < 1) {
      return absl::InvalidArgumentError("--policy-max-in-flight must be >= 1");
    }
    std::vector<PolicySource> sources;
    for (const PolicyCheckpoint& policy : policies_) {
      PolicyOptions one = shared;
      one.policy_base_url = policy.base_url;
      one.request.model = policy.model;
      one.endpoint_flag = absl::StrCat("--policy ", policy.name);
      if (absl::Status valid = ValidatePolicyOptions(one); !valid.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("--policy ", policy.name, "=", policy.model,
                                                       "@", policy.base_url, ": ",
                                                       valid.message()));
      }
      sources.push_back(PolicySource{policy.name, std::move(one)});
    }
    return sources;
  }

  absl::StatusOr<WatchOptions> WatchOptionsFromFlags() {
    WatchOptions options = watch_;
    options.run = watch_run_.options;
    options.run.out = watch_out_;
    HB_RETURN_IF_ERROR(ResolveGradingFlags(*watch_command_, watch_run_, options.run));
    HB_RETURN_IF_ERROR(ValidateWatchOptions(options));
    return options;
  }

  absl::StatusOr<MetaEvalCommandOptions> MetaEvalOptionsFromFlags() {
    MetaEvalCommandOptions options = meta_eval_;
    std::string error;
    if (!ParseProgressMode(meta_eval_progress_, &options.run.progress, &error)) {
      return absl::InvalidArgumentError(error);
    }
    HB_ASSIGN_OR_RETURN(options.run.grader_options, cli::ResolveGraderFlags(meta_eval_grader_));
    cli::DefaultPricesForModel(*meta_eval_command_, options.run.grader_options.settings.model,
                               &options.run.prices);
    options.run.prices_follow_grader = !cli::PriceFlagsGiven(*meta_eval_command_);
    if (options.run.grader != kEmbeddedGrader) {
      options.run.expected_grader =
          cli::ExpectedRemoteGrader(*meta_eval_command_, /*professional=*/false,
                                    meta_eval_grader_.api, options.run.grader_options.settings);
    }
    HB_RETURN_IF_ERROR(
        cli::CheckUpstreamFlagsAreEmbedded(options.run.grader, options.run.grader_options));
    HB_RETURN_IF_ERROR(ValidateMetaEvalOptions(options));
    return options;
  }

  const std::string& metrics_listen() const { return metrics_listen_; }

  absl::StatusOr<SampleOptions> SampleOptionsFromFlags() {
    SampleOptions options = sample_;
    HB_RETURN_IF_ERROR(cli::ResolvePolicyFlags(*sample_command_, sample_policy_, &options));
    HB_RETURN_IF_ERROR(ValidateSampleOptions(options));
    return options;
  }

 private:
  void AddRun() {
    cli::Command& c = program_.AddSubcommand("run", kRunDescription, kRunFooter);
    run_command_ = &c;
    RunOptions& o = run_.options;
    c.SetPositionalHint(" (responses files go in --responses)");
    c.Group("inputs and outputs");
    c.Repeated("responses", &run_.responses, "[NAME=]FILE",
               "responses JSONL {prompt_id, response, system_prompt?}; repeat the flag or give "
               "a comma list for several checkpoints. NAME defaults to the file name without "
               ".gz/.jsonl/.json; names must be unique and use only [A-Za-z0-9._-]");
    c.Repeated("policy", &run_.policies, "NAME=MODEL@URL",
               "a checkpoint served by an OpenAI-compatible endpoint (repeatable, mixable with "
               "--responses): its replies are sampled and each task's rows graded as soon as "
               "its reply arrives, in one job; replies are journaled in DIR/journal.sqlite "
               "beside the verdicts (resumable) and written to DIR/NAME/responses.jsonl. "
               "Sampling settings: the policy flags below");
    c.Flag("out", &o.out, "DIR",
           "output folder (created); with --shard-count > 1 the run writes DIR/shard-<index>");
    c.Bool("force-new", &o.force_new,
           "start a new journal; an existing one is moved aside to "
           "DIR/journal.sqlite.old-<time> (never deleted). Without it, a journal from another "
           "dataset/template/grader/responses is an error (exit 2)");
    AddGradingFlags(c, &run_);
    c.Group("dispatch");
    c.Flag("shard-index", &o.shard_index, "N",
           "this shard (default $JOB_COMPLETION_INDEX when set, else 0)");
    c.Flag("shard-count", &o.shard_count, "N",
           "shards; shard i grades the selected tasks at positions p % N == i. Join shards "
           "with `hb-orchestrator merge`");
    c.Bool("merge-when-complete", &merge_when_complete_,
           "after this run succeeds, `merge --when-complete` DIR/shard-0 .. DIR/shard-<N-1> "
           "into DIR/merged: the last shard to complete merges, no merge Job needed. The run "
           "writes DIR/shard-<index> (with --shard-count 1 too)");
    c.Group("policy (for --policy)");
    cli::AddPolicySamplingFlags(c, &run_.policy);
    c.Flag("policy-max-in-flight", &run_.policy_max_in_flight, "N",
           "policy requests outstanding at most, per --policy checkpoint");
    c.Group("metrics");
    cli::AddMetricsListenFlag(c, &metrics_listen_);
  }

  void AddWatch() {
    cli::Command& c = program_.AddSubcommand("watch", kWatchDescription, kWatchFooter);
    watch_command_ = &c;
    c.Group("inputs and outputs");
    c.Flag("checkpoints-dir", &watch_.checkpoints_dir, "DIR",
           "the training run's checkpoints: DIR/<name>/responses.jsonl (or .gz), graded once "
           "DIR/<name>/<ready marker> exists (a folder without it is never read)");
    c.Flag("out", &watch_out_, "OUT",
           "output folder (created, locked: one watcher per OUT): OUT/<name>/ reports, "
           "OUT/comparison.{json,html}, OUT/watch.jsonl state, OUT/versions/<name>/v<N>/ runs");
    c.Flag("ready-marker", &watch_.ready_marker, "FILE",
           "file name the trainer creates in DIR/<name>/ after writing its responses");
    c.Flag("poll-interval", &watch_.poll_interval, "DURATION",
           "rescan DIR this often (inotify wakes it sooner where the filesystem delivers "
           "events; NFS does not); a checkpoint not done is retried after 1, 2, 4, 8, then 10 "
           "x this");
    c.Bool("once", &watch_.once,
           "grade what is ready now, then exit with run's exit codes (for a CronJob)");
    AddGradingFlags(c, &watch_run_);
    c.Group("metrics");
    cli::AddMetricsListenFlag(c, &metrics_listen_);
  }

  void AddMetaEval() {
    cli::Command& c = program_.AddSubcommand("meta-eval", kMetaEvalDescription, kMetaEvalFooter);
    meta_eval_command_ = &c;
    RunOptions& o = meta_eval_.run;
    c.Group("inputs and outputs");
    c.Flag("dataset", &o.dataset, "FILE",
           "the meta-eval JSONL (plain or gzip): 2025-05-07-06-14-12_oss_meta_eval.jsonl "
           "(scripts/fetch_data.sh) or a file of the same shape");
    c.Flag("out", &o.out, "DIR", "output folder (created)");
    c.Flag("examples", &o.examples, "N",
           "the reference's random.Random(0).sample selection of N rows (-1: every row, in "
           "file order)");
    c.Flag("seed", &o.seed, "N", "numpy seed of the bootstrap statistics");
    c.Bool("force-new", &o.force_new,
           "start a new journal; an existing one is moved aside to "
           "DIR/journal.sqlite.old-<time> (never deleted). Without it, a journal from another "
           "file/template/grader is an error (exit 2)");
    AddGraderGroup(c, &o, &meta_eval_grader_);
    AddDispatchFlags(c, &o);
    AddBatchFlags(c, &o);
    AddProgressFlags(c, &o, &meta_eval_progress_);
    cli::AddMetricsListenFlag(c, &metrics_listen_);
  }

  void AddSample() {
    cli::Command& c = program_.AddSubcommand("sample", kSampleDescription, kSampleFooter);
    sample_command_ = &c;
    SampleOptions& o = sample_;
    c.Flag("dataset", &o.dataset, "FILE", "HealthBench JSONL (plain or gzip)");
    c.Flag("out", &o.out, "FILE", "responses JSONL to write (journal in FILE.journal)");
    c.Flag("examples", &o.examples, "N", kExamplesHelp);
    c.Group("policy");
    cli::AddPolicyEndpointFlags(c, &sample_policy_);
    cli::AddPolicySamplingFlags(c, &sample_policy_);
    c.Group("dispatch");
    c.Flag("max-in-flight", &o.max_in_flight, "N", "policy requests outstanding at most");
    c.Bool("adaptive-concurrency", &o.adaptive_concurrency,
           "halve the in-flight window on 429s (AIMD within [1, --max-in-flight]), hold "
           "dispatch for a Retry-After and pace it from the policy's x-ratelimit-* headers; "
           "false keeps --max-in-flight outstanding");
    c.Flag("progress-interval", &o.progress_interval, "DURATION",
           "between progress lines on stderr");
    cli::AddMetricsListenFlag(c, &metrics_listen_);
  }

  cli::Program program_;
  // --metrics-listen of run, meta-eval and sample (off by default: one-off commands).
  std::string metrics_listen_;
  cli::Command* run_command_ = nullptr;
  RunFlags run_;
  std::vector<std::string> response_specs_;
  std::vector<PolicyCheckpoint> policies_;
  cli::Command* watch_command_ = nullptr;
  RunFlags watch_run_;
  WatchOptions watch_;
  std::string watch_out_;
  cli::Command* sample_command_ = nullptr;
  SampleOptions sample_;
  cli::PolicyFlags sample_policy_;
  bool merge_when_complete_ = false;
  commands_internal::OfflineFlags offline_;
  cli::Command* meta_eval_command_ = nullptr;
  MetaEvalCommandOptions meta_eval_;
  cli::GraderFlags meta_eval_grader_;
  std::string meta_eval_progress_ = "auto";
};

// The --metrics-listen endpoint of `command` (none when the flag is empty); prints the error.
absl::StatusOr<OrchestratorMetricsEndpoint> ServeCommandMetrics(
    const OrchestratorCommandLine& command_line, const std::string& command,
    const TokenPrices& prices, int64_t max_in_flight) {
  const std::string log_name = absl::StrCat("hb-orchestrator ", command);
  absl::StatusOr<OrchestratorMetricsEndpoint> metrics =
      ServeOrchestratorMetrics(command_line.metrics_listen(), log_name, prices, max_in_flight);
  if (!metrics.ok()) {
    std::fprintf(stderr, "%s: %s\n", log_name.c_str(), cli::OneLine(metrics.status()).c_str());
  }
  return metrics;
}

}  // namespace

std::string OrchestratorHelp(const std::string& subcommand) {
  OrchestratorCommandLine command_line;
  return command_line.program().Help(subcommand);
}

absl::StatusOr<RunOptions> ParseRunArgs(const std::vector<std::string>& args) {
  OrchestratorCommandLine command_line;
  std::vector<std::string> all = {"run"};
  all.insert(all.end(), args.begin(), args.end());
  HB_RETURN_IF_ERROR(command_line.program().Parse(all).status());
  return command_line.RunOptionsFromFlags();
}

absl::StatusOr<MetaEvalCommandOptions> ParseMetaEvalArgs(const std::vector<std::string>& args) {
  OrchestratorCommandLine command_line;
  std::vector<std::string> all = {"meta-eval"};
  all.insert(all.end(), args.begin(), args.end());
  HB_RETURN_IF_ERROR(command_line.program().Parse(all).status());
  return command_line.MetaEvalOptionsFromFlags();
}

namespace {

// Prints a merge's outcome as `command` (merge, or run --merge-when-complete); its exit code:
// 0, 3 (kExitRowsFailed) when a merged report is INCOMPLETE, 2 on an error.
int PrintMerge(const std::string& command, const absl::StatusOr<MergeResult>& merged) {
  if (!merged.ok()) {
    std::fprintf(stderr, "hb-orchestrator %s: %s\n", command.c_str(),
                 cli::OneLine(merged.status()).c_str());
    return cli::kExitUsage;
  }
  std::cout << merged->message << std::endl;
  if (!merged->incomplete) return kExitOk;
  std::fprintf(stderr, "hb-orchestrator %s: some reports are marked INCOMPLETE (exit 3)\n",
               command.c_str());
  return kExitRowsFailed;
}

}  // namespace

int OrchestratorMain(int argc, char** argv) {
  OrchestratorCommandLine command_line;
  cli::Program& program = command_line.program();
  std::string command;
  if (std::optional<int> exit_code = program.ParseOrExit(argc, argv, &command)) {
    return *exit_code;
  }
  if (command == "run") {
    InitLogging("info");
    absl::StatusOr<RunOptions> options = command_line.RunOptionsFromFlags();
    if (!options.ok()) return program.UsageError(command, options.status());
    absl::StatusOr<OrchestratorMetricsEndpoint> metrics =
        ServeCommandMetrics(command_line, command, options->prices, options->max_in_flight);
    if (!metrics.ok()) return kExitInternal;
    options->metrics = metrics->metrics.get();
    options->grader_options.registry = metrics->registry;  // an embedded grader's hb_grader_*
    const int code = RunWithOptions(*options);
    std::optional<MergeOptions> merge = command_line.ShardMergeOptions();
    if (code != kExitOk || !merge.has_value()) return code;
    return PrintMerge("run", RunMerge(*merge));
  }
  if (command == "watch") {
    InitLogging("info");
    absl::StatusOr<WatchOptions> options = command_line.WatchOptionsFromFlags();
    if (!options.ok()) return program.UsageError(command, options.status());
    absl::StatusOr<OrchestratorMetricsEndpoint> metrics =
        ServeCommandMetrics(command_line, command, options->run.prices, options->run.max_in_flight);
    if (!metrics.ok()) return kExitInternal;
    // Checkpoints and rows; an embedded grader's hb_grader_* are not served here (a new grader
    // is built for each checkpoint; the fleet's graders export them).
    options->metrics = metrics->metrics.get();
    options->run.metrics = metrics->metrics.get();
    return RunWatch(*options);
  }
  if (command == "meta-eval") {
    InitLogging("info");
    absl::StatusOr<MetaEvalCommandOptions> options = command_line.MetaEvalOptionsFromFlags();
    if (!options.ok()) return program.UsageError(command, options.status());
    absl::StatusOr<OrchestratorMetricsEndpoint> metrics =
        ServeCommandMetrics(command_line, command, options->run.prices, options->run.max_in_flight);
    if (!metrics.ok()) return kExitInternal;
    options->run.metrics = metrics->metrics.get();
    options->run.grader_options.registry = metrics->registry;
    return RunMetaEval(*options);
  }
  if (command == "sample") {
    InitLogging("info");
    absl::StatusOr<SampleOptions> options = command_line.SampleOptionsFromFlags();
    if (!options.ok()) return program.UsageError(command, options.status());
    absl::StatusOr<OrchestratorMetricsEndpoint> metrics =
        ServeCommandMetrics(command_line, command, TokenPrices{}, options->max_in_flight);
    if (!metrics.ok()) return kExitInternal;
    options->metrics = metrics->metrics.get();
    return RunSample(*options);
  }
  if (command == "merge") return PrintMerge(command, command_line.offline().RunMergeFromFlags());
  absl::StatusOr<std::string> result = command_line.offline().Run(command);
  if (!result.ok()) {
    std::fprintf(stderr, "hb-orchestrator %s: %s\n", command.c_str(),
                 cli::OneLine(result.status()).c_str());
    return cli::kExitUsage;
  }
  std::cout << *result << std::endl;
  return kExitOk;
}

}  // namespace hb
