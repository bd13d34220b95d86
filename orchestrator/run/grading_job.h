// `hb-orchestrator run`'s grading job (one Kubernetes Job per checkpoint set): RunOptions and
// RunGrading. It plans the rows (task x rubric item) of every checkpoint, skips rows the journal
// already holds as graded, sends the rest to hb-grader replicas (or an in-process grader),
// journals every verdict in OUT/journal.sqlite, and writes each checkpoint's reports to
// OUT/<checkpoint>/ (plus OUT/comparison.{json,html} for two or more checkpoints). Running it
// again with the same inputs grades only the rows that failed or are missing. The `run`
// command around it (signals, exit codes) is orchestrator/commands/run_command.h; `watch` and
// `meta-eval` grade through it too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/base/exit_codes.h"
#include "common/grading/scoring.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/responses.h"
#include "grader/grader_info.h"
#include "grader/grader_stack_options.h"
#include "grader_client/grader_client.h"
#include "grader_client/grader_connection.h"
#include "orchestrator/policy/policy_feed.h"
#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/report/progress.h"
#include "orchestrator/report/run_metrics.h"
#include "orchestrator/run/row_plan.h"
#include "orchestrator/run/stop_switch.h"
#include "security/transport_security.h"

namespace hb {

// `--grader-mode batch`: grading through the OpenAI Batch API (batch_grader.h) with the
// embedded grader's upstream (--llm-base-url, its key, TLS and --max-attempts budget).
struct BatchRunOptions {
  // Per input file (the API's limits by default).
  int64_t max_requests = 50000;
  int64_t max_file_bytes = int64_t{200} << 20;
  absl::Duration poll_interval = absl::Seconds(30);
  // "batch": rows to re-send go in a follow-up batch; "online": through the online grader.
  std::string fallback = "batch";
  // Cancel the journal's unfinished batches, record what they answered, and exit.
  bool cancel = false;
};

// Tasks and responses a command builds in memory instead of loading files (`meta-eval`: one
// task and one verbatim rubric item per meta-eval row, its completion as the response).
struct PreparedRunInputs {
  // Its sha256 is the journal's dataset identity.
  Dataset dataset;
  // The one checkpoint's responses; its sha256 is the journal's responses identity.
  ResponseSet responses;
};

// Everything `run` was asked to do, validated by ValidateRunOptions. It describes the run
// completely: nothing below reads a flag or the environment.
struct RunOptions {
  // simple-evals PR #108's length adjustment of the reports (--length-adjustment-*).
  std::optional<LengthAdjustment> length_adjustment;
  // The dataset file graded (for --subset hard|consensus, the subset's file).
  std::string dataset;
  // The official subset named by --subset, recorded in the reports; empty when not given.
  std::string subset;
  // Responses for tasks outside `dataset` are counted and skipped instead of an error.
  bool ignore_extra_responses = false;
  // Tasks without a rubric item of positive points (common/healthbench/unscorable_tasks.h) are
  // left out of the run (listed on stderr, in summary.json and report.html) instead of refusing
  // the run (exit 2) before any grader request.
  bool skip_unscorable_tasks = false;
  // Send each task's prompt_id upstream as `prompt_cache_key`.
  bool send_prompt_cache_key = false;
  std::vector<CheckpointSpec> checkpoints;
  // Checkpoints sampled from a served policy while the run grades them (--policy), each also in
  // `checkpoints` under its name with the path its replies are written to at the end
  // (RUN_DIR/NAME/responses.jsonl). A task's rows are graded as soon as its reply is journaled.
  std::vector<PolicySource> policies;
  // Output folder as given; with shard_count > 1 the run writes to <out>/shard-<index>.
  std::string out;
  // "embedded" or a gRPC target.
  std::string grader = kEmbeddedGrader;
  // The grader's settings and template (recorded in the journal and the reports) and, for
  // grader == "embedded", the in-process grader's whole configuration (its listen address is
  // ignored: it listens on 127.0.0.1:0). Complete (CompleteGraderStackOptions).
  GraderStackOptions grader_options;
  // TLS and token for a gRPC --grader target (security/transport_security.h).
  ClientSecurityOptions grader_security;
  // How long a gRPC --grader target has to connect to one replica before the run gives up
  // (exit 2) instead of sending rows nobody can answer.
  absl::Duration grader_ready_timeout = absl::Seconds(5);
  int max_in_flight = 512;
  // Adapt the in-flight window within [1, max_in_flight] and pace dispatch from the upstream
  // rate-limit signals (AdaptiveLimiter).
  bool adaptive_concurrency = true;
  int row_attempts = 3;
  absl::Duration row_timeout = absl::Seconds(300);
  // Stop dispatching once this many finished rows in a row failed with the same code
  // (DispatcherOptions::stop_after_same_failures); 0 never stops.
  int stop_after_same_failures = 50;
  int64_t examples = -1;
  uint32_t seed = 0;
  int shard_index = 0;
  int shard_count = 1;
  bool force_new = false;
  ProgressMode progress = ProgressMode::kAuto;
  absl::Duration progress_interval = absl::Seconds(5);
  // Told of the online grading as it goes (rows, retries, 429s, tokens, the progress gauges);
  // not owned, null: none (`--metrics-listen` off). The Batch API path reports nothing yet.
  RunMetrics* metrics = nullptr;
  absl::Duration drain_timeout = absl::Seconds(20);
  TokenPrices prices;
  // No --price-* flag was given: `prices` become the list prices of the model the grader reports
  // (GetInfo; gpt-4.1's for a model without list prices), so a gRPC --grader is priced at its
  // replicas' model, not at this command's --llm-model.
  bool prices_follow_grader = false;
  // For a gRPC --grader: the settings this command line asked the grader for (--professional,
  // --llm-model, ...; cli::ExpectedRemoteGrader), checked against what the replicas report before
  // any row is sent (exit 2 naming the field: CheckGraderIsExpected).
  std::vector<ExpectedGraderField> expected_grader;
  // "online" (each row through the grader) or "batch" (the Batch API; needs grader "embedded").
  std::string grader_mode = "online";
  BatchRunOptions batch;
  // Batch API price as a fraction of the online price (--batch-price-factor).
  double batch_price_factor = 0.5;
  bool simulated_verdicts = false;
  bool skip_invalid = false;
  // Accept tasks without a response (graded nothing, reported as not graded). Without it they
  // mark the reports incomplete and the run exits kExitRowsFailed.
  bool allow_partial_responses = false;
  // When set (by `meta-eval`), called once instead of loading `dataset` and the one checkpoint's
  // file: `dataset` and checkpoints[0].path then only name the source in messages and reports.
  // Needs exactly one checkpoint, no policies and no sharding. Its errors fail the run (exit 2
  // unless the code is kInternal). `examples` still selects among the tasks it returns.
  std::function<absl::StatusOr<PreparedRunInputs>()> prepared_inputs;

  // The folder this run writes (out, or out/shard-<index> when sharded).
  std::string RunDir() const;
};

// kInvalidArgument naming the flag behind the first bad field ("--dataset is required",
// "--max-in-flight must be >= 1, got 0", "--shard-index must be in [0, 2), got 2", ...).
// grader_options is checked by CompleteGraderStackOptions, not here.
absl::Status ValidateRunOptions(const RunOptions& options);

// The --grader-mode and --batch-* part of ValidateRunOptions (kInvalidArgument naming the flag).
absl::Status ValidateBatchOptions(const RunOptions& options);

// The `n` most frequent row errors among `errors` (journal errors, "<CODE>: <message> (attempt
// N of M)", counted without the attempt suffix), most frequent first, ties in text order.
std::vector<std::pair<std::string, int64_t>> TopFailureReasons(
    const std::vector<std::string>& errors, size_t n);

// The banner of a run whose verdicts are declared simulated (options.simulated_verdicts, from
// --simulated-verdicts), naming the endpoint it calls; `run` prints it first. (A run that finds
// its verdicts came from hb-llm-sim prints its own banner at the end.)
void PrintDeclaredSimulatedBanner(const RunOptions& options);

// Runs `options` (valid) in phases: check before any request that the endpoints it will call
// can be called (the embedded grader's upstream and each policy: an API key for a remote https
// endpoint, a host that resolves; llm/endpoint_preflight.h) and that the output folder can be
// written (exit 2 naming the flag and the fix), lock the output folder, load inputs, connect the
// grader (grader_client/grader_connection.h ConnectGrader: what it grades with is what the
// journal and the reports record), open the journal, plan, grade, write reports. With policies,
// grading and sampling overlap: each policy is probed (PolicyFeed), and every reply is journaled
// in OUT/journal.sqlite beside the verdicts and its rows are dispatched at once; a resumed run
// samples only the tasks without a journaled reply and grades the journaled replies' missing
// rows. Tasks a policy could not answer are listed and graded as missing (exit code at least 3).
// Grading sends the first planned row alone (the probe): when it fails with a final error that
// every row would meet (kUnauthenticated, kPermissionDenied, kNotFound, kFailedPrecondition: a
// bad key, URL or model; not kInvalidArgument, which one oversized task also gets), the run stops
// with exit 2 ("the grader cannot grade: ...") instead of failing every row. `stop` is the way to
// stop it: a request drains in-flight rows (drain_timeout), writes the partial reports and returns
// kExitInterrupted. Returns the exit code of a completed grading (0, 3 or 4:
// commands/run_command.h) and, when `results` is not null, each checkpoint's report in order;
// errors map to exit 1 or 2 by ExitCodeFor (kInvalidArgument and kFailedPrecondition are the
// caller's).
absl::StatusOr<int> RunGrading(const RunOptions& options, StopSwitch& stop,
                               std::vector<CheckpointResult>* results = nullptr);

}  // namespace hb
