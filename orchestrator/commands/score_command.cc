// `hb-orchestrator score`: a checkpoint's reports from a verdict file, without grading.
#include <cstdio>
#include <string>
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
#include "orchestrator/report/checkpoint_report.h"

namespace hb {

using commands_internal::ApplyExamples;
using commands_internal::CheckExamples;
using commands_internal::CheckpointNameFromPath;
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

}  // namespace

absl::StatusOr<std::string> RunScore(const ScoreOptions& options) {
  HB_RETURN_IF_ERROR(Require("dataset", options.dataset));
  HB_RETURN_IF_ERROR(Require("responses", options.responses));
  HB_RETURN_IF_ERROR(Require("verdicts", options.verdicts));
  HB_RETURN_IF_ERROR(Require("out", options.out));
  HB_RETURN_IF_ERROR(CheckExamples(options.examples));
  HB_RETURN_IF_ERROR(ValidateGraderSettings(options.grader));
  std::string template_sha256;
  if (!options.grader_template.empty()) {
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
  HB_ASSIGN_OR_RETURN(
      CheckpointResult result,
      WriteCheckpointReport(dataset, responses, verdicts, failures, context, options.out));
  if (!verdict_file.header.has_value()) {
    std::fprintf(stderr, "hb-orchestrator score: %s\n",
                 MissingVerdictsHeaderWarning(options.verdicts).c_str());
  }
  std::string score = result.graded > 0 ? absl::StrFormat("%.4f (bootstrap std %.4f)", result.score,
                                                          result.score_bootstrap_std)
                                        : std::string("n/a");
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
