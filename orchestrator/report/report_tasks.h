// One task of a checkpoint report (internal to checkpoint_report.cc): the rows matched to it,
// its score or why it is not graded, and its tasks.jsonl line and report.html section.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/grading/scoring.h"
#include "common/healthbench/responses.h"
#include "common/healthbench/types.h"
#include "orchestrator/report/html_report.h"
#include "orchestrator/report/verdict_file.h"

namespace hb::report_internal {

// Everything known about one task after matching rows to it.
struct TaskState {
  const Example* example = nullptr;
  const Response* response = nullptr;
  std::vector<const VerdictRow*> verdicts;  // per rubric row
  std::vector<const RowFailure*> failures;  // per rubric row (first failure)
  std::optional<double> score;
  OrderedMetrics metrics;
  std::string error;
};

// Scores `task` (sets score and metrics, with overall_score_length_adjusted right after
// overall_score when `length_adjustment` is given), or explains in `error` why it is not graded.
void ScoreOne(TaskState& task, const std::optional<LengthAdjustment>& length_adjustment);

// The task's tasks.jsonl line (see checkpoint_report.h), newline included.
std::string TaskLine(const TaskState& task);

// The task's section of report.html.
HtmlTask BuildHtmlTask(const TaskState& task);

}  // namespace hb::report_internal
