#include "orchestrator/run/grading_job.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "grader/grader_settings.h"
#include "http/curl_http_client.h"
#include "llm/endpoint_preflight.h"
#include "orchestrator/run/output_lock.h"
#include "orchestrator/run/run_grading.h"
#include "orchestrator/run/run_inputs.h"
#include "orchestrator/run/run_reports.h"
#include "orchestrator/run/sqlite_verdict_store.h"

// The command in phases, each in its room: run_inputs.h (inputs, grader, journal),
// run_grading.h (plan, grading) and run_reports.h (reports, the closing lines, the exit code).
namespace hb {
namespace run_internal {
namespace {

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
  return ExitCodeAfterReports(options, totals, interrupted, unsampled);
}

}  // namespace
}  // namespace run_internal

std::string RunOptions::RunDir() const {
  if (shard_count <= 1) return out;
  return run_internal::JoinPath(out, absl::StrCat("shard-", shard_index));
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
absl::StatusOr<int> RunGrading(const RunOptions& options, StopSwitch& stop,
                               std::vector<CheckpointResult>* results) {
  return run_internal::RunPhases(options, stop, results);
}

void PrintDeclaredSimulatedBanner(const RunOptions& options) {
  run_internal::PrintSimulatedBanner(options, /*detected=*/false);
}

}  // namespace hb
