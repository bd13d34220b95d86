#include "orchestrator/commands/grading_flags.h"

#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "cli/security_flags.h"
#include "common/base/status_macros.h"
#include "orchestrator/report/progress.h"

namespace hb::commands_internal {

namespace {

constexpr char kPromptCacheKeyHelp[] =
    "auto|prompt_id|off. prompt_id: each task's prompt_id as `prompt_cache_key` in its request "
    "bodies (its rubric rows are sent back to back), so they share OpenAI's prompt cache; it "
    "cannot change a verdict. auto: prompt_id when the --llm-base-url host is api.openai.com "
    "(for a gRPC --grader, give hb-grader's --llm-base-url), else off. off (or none): no key, as "
    "the reference";

// Whether `base_url`'s host is OpenAI's API (where prompt_cache_key is known to be accepted).
bool IsOpenAiEndpoint(absl::string_view base_url) {
  absl::string_view rest = base_url;
  const size_t scheme = rest.find("://");
  if (scheme != absl::string_view::npos) rest.remove_prefix(scheme + 3);
  const absl::string_view host = rest.substr(0, rest.find_first_of(":/"));
  return absl::AsciiStrToLower(host) == "api.openai.com";
}

// run's --prompt-cache-key: auto (prompt_id for api.openai.com), prompt_id, off or none.
absl::StatusOr<bool> RunPromptCacheKeyPerTask(const std::string& mode, absl::string_view base_url) {
  if (mode == "auto") return IsOpenAiEndpoint(base_url);
  if (mode == "prompt_id") return true;
  if (mode == "off" || mode == "none") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("--prompt-cache-key: expected auto, prompt_id or off, got '", mode, "'"));
}

}  // namespace

void AddGradingFlags(cli::Command& c, RunFlags* flags) {
  RunOptions& o = flags->options;
  c.Group("inputs and outputs");
  c.Flag("dataset", &o.dataset, "FILE", "HealthBench JSONL (plain or gzip)");
  AddSubsetFlags(c, &flags->subset);
  c.Flag("examples", &o.examples, "N", kExamplesHelp);
  c.Flag("seed", &o.seed, "N", "numpy seed of the bootstrap statistics");
  c.Bool("skip-invalid", &o.skip_invalid, "skip invalid dataset lines instead of failing");
  c.Bool("skip-unscorable-tasks", &o.skip_unscorable_tasks,
         "leave out tasks without a rubric item of positive points (their score is undefined; "
         "the reference fails on them), listed on stderr, in summary.json and report.html. "
         "Without it such a task stops the run (exit 2) before any grader request");
  c.Bool("allow-partial-responses", &o.allow_partial_responses,
         "accept tasks without a response (reported as not graded). Without it they mark "
         "the reports INCOMPLETE and the run exits 3");
  AddGraderGroup(c, &o, &flags->grader);
  c.Group("scoring");
  cli::AddLengthAdjustmentFlags(c, &flags->length_adjustment);
  cli::AddProfessionalFlag(c, &flags->professional);
  AddDispatchFlags(c, &o);
  c.Flag("prompt-cache-key", &flags->prompt_cache_key, "MODE", kPromptCacheKeyHelp);
  AddBatchFlags(c, &o);
  AddProgressFlags(c, &o, &flags->progress);
}

absl::Status ResolveGradingFlags(const cli::Command& command, RunFlags& flags,
                                 RunOptions& options) {
  std::string error;
  if (!ParseProgressMode(flags.progress, &options.progress, &error)) {
    return absl::InvalidArgumentError(error);
  }
  HB_RETURN_IF_ERROR(ResolveSubset(flags.subset, command.Given("subset"), options.dataset,
                                   options.subset, options.ignore_extra_responses));
  if (flags.professional) {
    HB_RETURN_IF_ERROR(
        cli::ApplyProfessionalGrader(command, &flags.grader.stack.settings, &flags.grader.api));
    HB_RETURN_IF_ERROR(cli::CheckProfessionalDataset(options.dataset));
  }
  HB_ASSIGN_OR_RETURN(options.grader_options, cli::ResolveGraderFlags(flags.grader));
  cli::DefaultPricesForModel(command, options.grader_options.settings.model, &options.prices);
  options.prices_follow_grader = !cli::PriceFlagsGiven(command);
  if (options.grader != kEmbeddedGrader) {
    options.expected_grader = cli::ExpectedRemoteGrader(
        command, flags.professional, flags.grader.api, options.grader_options.settings);
  }
  HB_ASSIGN_OR_RETURN(
      options.length_adjustment,
      flags.professional
          ? cli::ResolveProfessionalLengthAdjustment(command, flags.length_adjustment)
          : cli::ResolveLengthAdjustmentFlags(command, flags.length_adjustment));
  HB_ASSIGN_OR_RETURN(
      options.send_prompt_cache_key,
      RunPromptCacheKeyPerTask(flags.prompt_cache_key, options.grader_options.llm.base_url));
  return cli::CheckUpstreamFlagsAreEmbedded(options.grader, options.grader_options);
}

void AddGraderGroup(cli::Command& c, RunOptions* o, cli::GraderFlags* grader) {
  c.Group("grader");
  c.Flag("grader", &o->grader, "embedded|TARGET",
         "'embedded' grades in this process (no gRPC hop), configured by the grader "
         "flags below (as hb-grader); else a gRPC target, e.g. dns:///grader-headless:50051 "
         "or ipv4:127.0.0.1:50051,127.0.0.1:50052 (round_robin). The template sha256 and the "
         "model settings are recorded in the journal and reports");
  c.Bool("simulated-verdicts", &o->simulated_verdicts,
         "mark the verdicts SIMULATED (reports and a banner) whatever the endpoint; not needed "
         "for hb-llm-sim, which says what it is (x-hb-llm-sim) and marks its verdicts itself");
  cli::AddGraderFlags(c, grader);
  cli::AddGraderClientSecurityFlags(c, &o->grader_security);
}

void AddDispatchFlags(cli::Command& c, RunOptions* o_ptr) {
  RunOptions& o = *o_ptr;
  c.Group("dispatch");
  c.Flag("max-in-flight", &o.max_in_flight, "N", "grader RPCs outstanding at most");
  c.Bool("adaptive-concurrency", &o.adaptive_concurrency,
         "adapt the in-flight window within [1, --max-in-flight] (AIMD) and pace dispatch "
         "from the upstream rate-limit headers the graders relay; false keeps "
         "--max-in-flight RPCs outstanding");
  c.Flag("row-attempts", &o.row_attempts, "N",
         "attempts per row for UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, INTERNAL, "
         "UNKNOWN; other codes fail the row at once");
  c.Flag("row-timeout", &o.row_timeout, "DURATION", "deadline of one grader RPC");
  c.Flag("stop-after-same-failures", &o.stop_after_same_failures, "N",
         "stop dispatching once N finished rows in a row failed with the same code (rows "
         "not sent stay for the next run; exit 3); 0 never stops");
  c.Flag("drain-timeout", &o.drain_timeout, "DURATION",
         "on SIGTERM/SIGINT, time for in-flight rows before they are cancelled");
}

void AddProgressFlags(cli::Command& c, RunOptions* o, std::string* progress) {
  c.Group("progress");
  c.Flag("progress", progress, "auto|tty|log|off", "live line on a terminal, log lines otherwise");
  c.Flag("progress-interval", &o->progress_interval, "DURATION", "between log lines");
  cli::AddPriceFlags(c, &o->prices);
}

void AddBatchFlags(cli::Command& c, RunOptions* o) {
  c.Group("batch (--grader-mode batch)");
  c.Flag("grader-mode", &o->grader_mode, "online|batch",
         "online: each row through the grader as it goes; batch: the same request bodies "
         "through the OpenAI Batch API at --llm-base-url (files in DIR/batch, batch ids "
         "journaled, resumable; half price, answers within 24h)");
  c.Flag("batch-max-requests", &o->batch.max_requests, "N",
         "requests per batch input file at most (the API's limit: 50000)");
  c.Flag("batch-max-file-bytes", &o->batch.max_file_bytes, "BYTES",
         "bytes per batch input file at most (the API's limit: 200 MB)");
  c.Flag("batch-poll-interval", &o->batch.poll_interval, "DURATION",
         "between two polls of the unfinished batches");
  c.Flag("batch-fallback", &o->batch.fallback, "batch|online",
         "how rows whose batch answer failed, expired or was malformed are sent again "
         "(within --max-attempts per row): in a follow-up batch, or online");
  c.Bool("batch-cancel", &o->batch.cancel,
         "cancel the journal's unfinished batches, record what they answered, write the "
         "partial reports and exit (4); the next run sends the rest again");
  AddBatchPriceFactorFlag(c, &o->batch_price_factor);
}

void AddBatchPriceFactorFlag(cli::Command& c, double* factor) {
  c.Flag("batch-price-factor", factor, "F",
         "Batch API price as a fraction of the online price (OpenAI: 0.5); the batch cost "
         "is tokens x --price-* x F");
}

void AddSubsetFlags(cli::Command& c, SubsetFlags* flags) {
  c.Flag("subset", &flags->subset, "main|hard|consensus",
         "grade an official subset: its file (hard_2025-05-08-21-00-10.jsonl, "
         "consensus_2025-05-09-20-00-46.jsonl, plain or .gz) is taken from beside --dataset "
         "unless --subset-dataset names it; responses for tasks outside it are ignored and "
         "counted (implies --ignore-extra-responses)");
  c.Flag("subset-dataset", &flags->subset_dataset, "FILE",
         "the Hard or Consensus file for --subset (default: its official name beside "
         "--dataset)");
  c.Bool("ignore-extra-responses", &flags->ignore_extra_responses,
         "count and skip responses whose prompt_id is not in the dataset instead of failing "
         "(grading a subset file given as --dataset with the responses to the whole set)");
}

}  // namespace hb::commands_internal
