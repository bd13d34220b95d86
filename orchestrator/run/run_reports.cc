#include "orchestrator/run/run_reports.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/exit_codes.h"
#include "common/base/status_macros.h"
#include "grader/grader_info.h"
#include "http/url_redaction.h"
#include "orchestrator/report/progress.h"

namespace hb {
namespace run_internal {
namespace {

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

// The grader endpoint as the messages name it: the embedded grader's upstream or the gRPC target.
std::string GraderEndpoint(const RunOptions& options) {
  return options.grader == kEmbeddedGrader
             ? RedactUrl(options.grader_options.llm.base_url)
             : absl::StrCat("the hb-grader replicas at ", options.grader);
}

}  // namespace

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

std::string SimulatedReason(bool detected) {
  return detected ? "the grader endpoint identified itself as hb-llm-sim"
                  : "declared by --simulated-verdicts";
}

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

namespace {

// What running the same command again would do after an interrupted run.
void PrintInterrupted(const RunOptions& options, const ReportTotals& totals) {
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
}

// Each checkpoint's tasks without a response, and whether they are accepted.
void PrintTasksWithoutResponse(const RunOptions& options, const ReportTotals& totals) {
  for (const auto& [name, count] : totals.without_response) {
    std::fprintf(stderr, "hb-orchestrator run: %s: %lld task(s) have no response%s\n", name.c_str(),
                 static_cast<long long>(count),
                 options.allow_partial_responses
                     ? " (accepted: --allow-partial-responses)"
                     : "; the reports are marked INCOMPLETE. Add the missing responses, or "
                       "pass --allow-partial-responses to accept partial coverage");
  }
}

}  // namespace

int ExitCodeAfterReports(const RunOptions& options, const ReportTotals& totals, bool interrupted,
                         int64_t unsampled) {
  if (interrupted) {
    PrintInterrupted(options, totals);
    return kExitInterrupted;
  }
  const bool partial = !totals.without_response.empty() && !options.allow_partial_responses;
  PrintTasksWithoutResponse(options, totals);
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

}  // namespace run_internal

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

}  // namespace hb
