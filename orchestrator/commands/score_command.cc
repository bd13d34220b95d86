// `hb-orchestrator score`: a checkpoint's reports from a verdict file, without grading.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/responses.h"
#include "grader/grader_settings.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/offline_commands.h"
#include "orchestrator/commands/summary_file.h"
#include "orchestrator/report/checkpoint_report.h"

namespace hb {

using commands_internal::ApplyExamples;
using commands_internal::CheckExamples;
using commands_internal::CheckpointNameFromPath;
using commands_internal::CheckpointSummary;
using commands_internal::GradingDisagreement;
using commands_internal::ReadCheckpointSummary;
using commands_internal::Require;

namespace {

// Keeps the rows whose task survived the --examples selection.
template <typename Row>
std::vector<Row> KeepSelected(std::vector<Row> rows, const Dataset& dataset) {
  std::vector<Row> kept;
  for (Row& row : rows) {
    if (dataset.Find(row.prompt_id) != nullptr) kept.push_back(std::move(row));
  }
  return kept;
}

// The summary.json beside `verdicts_path` when it records the grading of these verdicts (the
// same responses and dataset); nullopt otherwise (verdicts from elsewhere, an older folder).
std::optional<CheckpointSummary> RecordedGrading(const std::string& verdicts_path,
                                                 const std::string& responses_sha256,
                                                 const std::string& dataset_sha256) {
  const std::string dir = std::filesystem::path(verdicts_path).parent_path().string();
  std::error_code error;
  if (!std::filesystem::exists((dir.empty() ? "." : dir) + "/summary.json", error)) {
    return std::nullopt;
  }
  absl::StatusOr<CheckpointSummary> summary = ReadCheckpointSummary(dir.empty() ? "." : dir);
  if (!summary.ok() || summary->responses_sha256 != responses_sha256 ||
      summary->dataset_sha256 != dataset_sha256) {
    return std::nullopt;
  }
  return *std::move(summary);
}

// Takes into `context` what the command line did not give from `recorded`; a given grader or
// length adjustment must agree with it.
absl::Status KeepRecordedGrading(const ScoreOptions& options, const CheckpointSummary& recorded,
                                 ReportContext& context) {
  CheckpointSummary given = recorded;
  given.grader = context.grader;
  if (options.grader_template_given) given.template_sha256 = context.template_sha256;
  const std::string source =
      absl::StrCat(std::filesystem::path(recorded.dir).string(), "/summary.json");
  if (std::string disagreement = GradingDisagreement(recorded, given);
      options.grader_given && !disagreement.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the grader flags contradict the grading of ", options.verdicts, " (", source,
                     "): ", disagreement, "; drop them to keep what graded these verdicts"));
  }
  const std::optional<LengthAdjustment>& a = recorded.length_adjustment;
  const std::optional<LengthAdjustment>& b = context.length_adjustment;
  const bool same_adjustment =
      a.has_value() == b.has_value() &&
      (!a.has_value() ||
       (a->center == b->center && a->penalty_per_500_chars == b->penalty_per_500_chars));
  if (options.length_adjustment_given && !same_adjustment) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the length adjustment flags contradict the grading of ", options.verdicts, " (", source,
        " records ",
        a.has_value() ? absl::StrCat("center ", a->center, ", penalty ", a->penalty_per_500_chars)
                      : "none",
        "); drop them to keep it"));
  }
  if (!options.grader_given) context.grader = recorded.grader;
  if (!options.grader_template_given) context.template_sha256 = recorded.template_sha256;
  if (!options.length_adjustment_given) context.length_adjustment = recorded.length_adjustment;
  if (!options.grader_endpoint_given) context.grader_endpoint = recorded.grader_endpoint;
  context.grader_upstream = recorded.grader_upstream;
  context.grader_version = recorded.grader_version;
  context.grader_replicas = recorded.grader_replicas;
  context.simulated = context.simulated || recorded.simulated;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> RunScore(const ScoreOptions& options) {
  HB_RETURN_IF_ERROR(Require("dataset", options.dataset));
  HB_RETURN_IF_ERROR(Require("responses", options.responses));
  HB_RETURN_IF_ERROR(Require("verdicts", options.verdicts));
  HB_RETURN_IF_ERROR(Require("out", options.out));
  HB_RETURN_IF_ERROR(CheckExamples(options.examples));
  HB_RETURN_IF_ERROR(ValidateGraderSettings(options.grader));
  std::string template_sha256;
  if (!options.grader_template.empty() && options.grader_template_given) {
    HB_ASSIGN_OR_RETURN(
        GraderTemplate tmpl,
        GraderTemplate::Load(options.grader_template, options.require_reference_template));
    template_sha256 = tmpl.sha256();
  }
  HB_ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(options.dataset, {}));
  HB_ASSIGN_OR_RETURN(ResponseSet responses,
                      LoadResponses(options.responses, dataset, {options.ignore_extra_responses}));
  HB_ASSIGN_OR_RETURN(VerdictFile verdict_file, ReadVerdictFile(options.verdicts, dataset));
  HB_RETURN_IF_ERROR(CheckVerdictsHeader(options.verdicts, verdict_file.header, options.responses,
                                         responses.sha256, dataset.sha256));
  std::vector<VerdictRow> verdicts = std::move(verdict_file.rows);
  std::vector<RowFailure> failures;
  if (!options.failures.empty()) {
    HB_ASSIGN_OR_RETURN(failures, LoadFailures(options.failures, dataset));
  }
  ApplyExamples(dataset, options.examples);
  verdicts = KeepSelected(std::move(verdicts), dataset);
  failures = KeepSelected(std::move(failures), dataset);

  ReportContext context;
  context.checkpoint =
      options.checkpoint.empty() ? CheckpointNameFromPath(options.responses) : options.checkpoint;
  context.dataset_path = options.dataset;
  context.dataset_sha256 = dataset.sha256;
  context.responses_path = options.responses;
  context.responses_sha256 = responses.sha256;
  context.subset = options.subset;
  context.responses_ignored_extra = responses.ignored_extra;
  context.template_sha256 = template_sha256;
  context.grader = options.grader;
  context.length_adjustment = options.length_adjustment;
  context.seed = options.seed;
  context.simulated = options.simulated;
  context.grader_endpoint = options.grader_endpoint;
  context.examples = options.examples;
  const std::optional<CheckpointSummary> recorded =
      RecordedGrading(options.verdicts, responses.sha256, dataset.sha256);
  if (recorded.has_value()) {
    HB_RETURN_IF_ERROR(KeepRecordedGrading(options, *recorded, context));
  } else if (!options.grader_template_given && !options.grader_template.empty()) {
    // No recorded grading: the default template is what these verdicts are recorded with.
    absl::StatusOr<GraderTemplate> tmpl =
        GraderTemplate::Load(options.grader_template, options.require_reference_template);
    if (tmpl.ok()) context.template_sha256 = tmpl->sha256();
  }
  HB_ASSIGN_OR_RETURN(
      CheckpointResult result,
      WriteCheckpointReport(dataset, responses, verdicts, failures, context, options.out));
  if (!verdict_file.header.has_value()) {
    std::fprintf(stderr, "hb-orchestrator score: %s\n",
                 MissingVerdictsHeaderWarning(options.verdicts).c_str());
  }
  const std::string score = HeadlineOf(result).Text();
  return absl::StrCat("score: ", context.checkpoint, ": ", score, "; ", result.graded, " of ",
                      result.tasks, " tasks graded (", result.not_graded, " not graded), ",
                      result.graded_rows, " of ", result.rows, " rows graded, ", result.failed_rows,
                      " failed; ",
                      responses.ignored_extra > 0
                          ? absl::StrCat(responses.ignored_extra,
                                         " responses for tasks outside the dataset ignored; ")
                          : "",
                      "reports in ", options.out);
}

}  // namespace hb
