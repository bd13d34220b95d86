// HTML rendering of a checkpoint report and of a comparison. Pages are self-contained (inline
// CSS, no scripts, no external assets) and every piece of data text (criteria, conversations,
// replies, explanations, names, paths) goes through HtmlEscape. This is a deliberate deviation
// from the reference, which splices grader text into a Jinja template unescaped (SPEC §10,
// quirk 12).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/grading/scoring.h"
#include "common/healthbench/types.h"

namespace hb {

// Escapes & < > " ' as character references.
std::string HtmlEscape(absl::string_view text);

// The stylesheet every report page inlines (report.html, comparison.html, the meta-eval pages).
extern const char kReportStyle[];

// One rubric row as the report shows it.
struct HtmlRubricRow {
  std::string criterion;
  // "[<points_text>]" as in the grader prompt; empty for a verbatim item (a meta-eval row's
  // raw rubric), shown as the grader saw it.
  std::string points_text;
  std::vector<std::string> tags;
  std::optional<bool> criteria_met;  // nullopt: no verdict
  std::string explanation;
  std::string failure;  // non-empty: the row failed with this reason
};

// One task as the report shows it.
struct HtmlTask {
  std::string prompt_id;
  std::optional<double> score;  // nullopt: not graded
  std::string error;            // why it is not graded
  std::vector<std::string> example_tags;
  // The graded transcript: optional system prompt, the prompt turns, then the reply (when the
  // task has a response).
  std::vector<Message> conversation;
  bool has_response = false;
  std::vector<HtmlRubricRow> rubric;  // in rubric order; the page puts [False] first
};

struct HtmlReport {
  std::string checkpoint;
  std::optional<double> score;  // nullopt when nothing is graded
  double score_bootstrap_std = 0;
  // Set when `score` is the length-adjusted score (simple-evals PR #108): the raw score, shown
  // beside the headline.
  std::optional<double> raw_score;
  double raw_bootstrap_std = 0;
  bool simulated = false;
  // Why the verdicts are simulated (ReportContext::simulated_reason); empty: not said.
  std::string simulated_reason;
  bool incomplete = false;
  std::vector<std::pair<std::string, std::string>> facts;  // counts and provenance, in order
  std::vector<MetricSummary> metrics;                      // AggregateResult::metrics
  std::vector<HtmlTask> tasks;                             // dataset order
};

// The whole report page: title, banners (SIMULATED, INCOMPLETE), score ± bootstrap std, facts,
// per-theme and per-axis tables (mean, n, bootstrap std), all metrics, the 10 worst graded
// tasks (lowest score first, ties in dataset order) linking to their sections, then every task
// with conversation, reply and rubric verdicts ([False] entries first, stable) with
// explanations.
std::string RenderHtmlReport(const HtmlReport& report);

// The same page in pieces, so it can be written while it is rendered without holding it (or
// every task) in memory: RenderHtmlReport(report) ==
//   HtmlReportHead(report) + AppendHtmlReportTask(task 0, 0) + ... + HtmlReportTail()
// when every task fits on the page (TaskPageCount(tasks) == 0). HtmlReportHead reads
// `report.tasks` only for the worst-tasks table and the task index, i.e. each task's prompt_id
// and score; the rest of a task (conversation, rubric, ...) may be left empty there and given to
// AppendHtmlReportTask when the page reaches it. `index` is the task's 0-based position in the
// dataset (its anchor is "task-<index+1>").
//
// Large reports are paginated so report.html stays small and quick to open (a 5,000-task
// report is tens of MB as one page): with more than kTasksPerPage tasks, report.html holds,
// instead of the task sections, an index of every task (prompt_id, score, link) folded per page
// in <details> (readable without script), and the sections go to report-tasks-<p>.html, each
// HtmlTaskPageHead(report, p) + its tasks' AppendHtmlReportTask + HtmlTaskPageTail(report, p).
inline constexpr size_t kTasksPerPage = 100;
// 0 when `tasks` fit in report.html, else the number of task pages.
size_t TaskPageCount(size_t tasks);
// "report-tasks-<page+1>.html".
std::string TaskPageFileName(size_t page);
// The link to task `index` of `tasks` from report.html: "#task-N" or "report-tasks-P.html#task-N".
std::string TaskHref(size_t index, size_t tasks);
std::string HtmlReportHead(const HtmlReport& report);
void AppendHtmlReportTask(std::string& out, const HtmlTask& task, size_t index);
std::string HtmlReportTail();
// Page `page` (0-based) of the task sections; reads report.checkpoint, simulated, incomplete
// and tasks.size().
std::string HtmlTaskPageHead(const HtmlReport& report, size_t page);
std::string HtmlTaskPageTail(const HtmlReport& report, size_t page);

// The indices of the `limit` lowest-scoring graded tasks, lowest first, ties in task order.
std::vector<size_t> WorstTasks(const std::vector<HtmlTask>& tasks, size_t limit);

// The rubric rows in the reference's display order: rows judged not met first, the rest after,
// each group in rubric order (Python's stable sort on "[False]").
std::vector<size_t> RubricDisplayOrder(const std::vector<HtmlRubricRow>& rubric);

struct HtmlComparisonCheckpoint {
  std::string checkpoint;
  std::optional<double> score;
  double bootstrap_std = 0;
  int64_t graded = 0, tasks = 0;
  bool simulated = false, incomplete = false;
  // Its report.html relative to the comparison page ('/'-separated, not yet URL-escaped).
  std::string report_path;
  // The checkpoint's aggregate metrics (per theme and axis); drawn as lines when present.
  std::vector<MetricSummary> metrics;
};
struct HtmlComparisonPair {
  std::string baseline, checkpoint;
  std::optional<PairedDifference> difference;  // nullopt when no task is graded in both
  // `difference` is of the length-adjusted scores (both checkpoints have them); `raw` is then
  // the raw scores' difference, shown beside it.
  bool length_adjusted = false;
  std::optional<PairedDifference> raw;
};
struct HtmlComparison {
  std::vector<HtmlComparisonCheckpoint> checkpoints;  // in the order given
  std::vector<HtmlComparisonPair> pairs;              // each non-baseline checkpoint, in order
  std::string baseline;
  int64_t common_tasks = 0;  // graded by every checkpoint
  uint32_t seed = 0;
  int bootstrap_samples = 0;
};

// comparison.html: banners when a checkpoint is SIMULATED or INCOMPLETE, the headline (baseline,
// tasks graded by every checkpoint), the checkpoints (each linking to its report), the trend
// picture, per-theme and per-axis tables across checkpoints, and the paired differences to the
// baseline with 95% CIs.
std::string RenderComparisonHtml(const HtmlComparison& comparison);

}  // namespace hb
