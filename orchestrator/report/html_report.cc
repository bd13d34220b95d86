#include "orchestrator/report/html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "orchestrator/report/svg_charts.h"

namespace hb {
namespace {

std::string FormatScore(std::optional<double> score) {
  if (!score.has_value() || std::isnan(*score)) return "n/a";
  return absl::StrFormat("%.3f", *score);
}

std::string FormatStd(double value) { return absl::StrFormat("%.3f", value); }

// Percent-encodes everything but unreserved characters, for a relative link.
std::string UrlPathEscape(absl::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  return out;
}

// The metrics named `prefix`... as bars with their 95% intervals.
std::string MetricBars(const std::vector<MetricSummary>& metrics, absl::string_view prefix) {
  std::vector<IntervalBar> bars;
  for (const MetricSummary& metric : metrics) {
    if (!absl::StartsWith(metric.name, prefix)) continue;
    bars.push_back(IntervalFromBootstrap(metric.name.substr(prefix.size()), metric.mean,
                                         metric.bootstrap_std,
                                         absl::StrCat("n=", metric.n_samples)));
  }
  return IntervalBarsSvg(bars);
}

// `with_chart`: bars with 95% intervals above the table.
void AppendMetricTable(std::string& out, const std::vector<MetricSummary>& metrics,
                       absl::string_view prefix, absl::string_view title, bool with_chart = false) {
  std::vector<const MetricSummary*> rows;
  for (const MetricSummary& metric : metrics) {
    if (absl::StartsWith(metric.name, prefix)) rows.push_back(&metric);
  }
  absl::StrAppend(&out, "<h2>", HtmlEscape(title), "</h2>\n");
  if (rows.empty()) {
    absl::StrAppend(&out, "<p class=\"muted\">none</p>\n");
    return;
  }
  if (with_chart) {
    absl::StrAppend(&out, "<figure>", MetricBars(metrics, prefix),
                    "<figcaption>Clipped mean with its 95% interval (&plusmn;1.96 bootstrap std)."
                    "</figcaption></figure>\n");
  }
  absl::StrAppend(&out,
                  "<table><tr><th>metric</th><th>mean</th><th>n</th><th>bootstrap std</th></tr>\n");
  for (const MetricSummary* metric : rows) {
    absl::StrAppend(&out, "<tr><td>", HtmlEscape(metric->name), "</td><td class=\"num\">",
                    FormatScore(metric->mean), "</td><td class=\"num\">", metric->n_samples,
                    "</td><td class=\"num\">", FormatStd(metric->bootstrap_std), "</td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n");
}

void AppendMessage(std::string& out, const Message& message, bool reply) {
  absl::StrAppend(&out, "<div class=\"msg", reply ? " reply" : "", "\"><span class=\"role\">",
                  HtmlEscape(message.role), ":</span> ", HtmlEscape(message.content), "</div>\n");
}

std::string TaskAnchor(size_t index) { return absl::StrCat("task-", index + 1); }

void AppendTask(std::string& out, const HtmlTask& task, size_t index) {
  absl::StrAppend(&out, "<div class=\"task\" id=\"", TaskAnchor(index), "\">\n<h3>#", index + 1,
                  " <code>", HtmlEscape(task.prompt_id), "</code></h3>\n");
  if (task.score.has_value()) {
    absl::StrAppend(&out, "<p class=\"score\">Score: ", FormatScore(task.score), "</p>\n");
  } else {
    absl::StrAppend(&out, "<p class=\"error\">Not graded: ", HtmlEscape(task.error), "</p>\n");
  }
  if (!task.example_tags.empty()) {
    std::vector<std::string> tags;
    for (const std::string& tag : task.example_tags) tags.push_back(HtmlEscape(tag));
    absl::StrAppend(&out, "<p class=\"muted\">", absl::StrJoin(tags, ", "), "</p>\n");
  }
  for (size_t i = 0; i < task.conversation.size(); ++i) {
    bool reply = task.has_response && i + 1 == task.conversation.size();
    AppendMessage(out, task.conversation[i], reply);
  }
  if (!task.has_response) {
    absl::StrAppend(&out, "<p class=\"error\">No response for this task.</p>\n");
  }
  absl::StrAppend(&out, "<p><b>Rubrics with grades:</b></p>\n");
  for (size_t i : RubricDisplayOrder(task.rubric)) {
    const HtmlRubricRow& row = task.rubric[i];
    std::string verdict;
    if (row.criteria_met.has_value()) {
      verdict = *row.criteria_met ? "<span class=\"met\">[True]</span>"
                                  : "<span class=\"unmet\">[False]</span>";
    } else if (!row.failure.empty()) {
      verdict = "<span class=\"unmet\">[failed]</span>";
    } else {
      verdict = "<span class=\"muted\">[not graded]</span>";
    }
    std::string explanation =
        row.criteria_met.has_value()
            ? absl::StrCat("Explanation: ", HtmlEscape(row.explanation))
            : (!row.failure.empty() ? absl::StrCat("Failure: ", HtmlEscape(row.failure)) : "");
    absl::StrAppend(&out, "<div class=\"rubric\">", verdict, " ");
    if (!row.points_text.empty()) absl::StrAppend(&out, "[", HtmlEscape(row.points_text), "] ");
    absl::StrAppend(&out, HtmlEscape(row.criterion));
    if (!explanation.empty()) absl::StrAppend(&out, "\n\t", explanation);
    absl::StrAppend(&out, "</div>\n");
  }
  absl::StrAppend(&out, "</div>\n");
}

void AppendBanners(std::string& out, const HtmlReport& report) {
  if (report.simulated) {
    const std::string why = report.simulated_reason.empty()
                                ? std::string()
                                : absl::StrCat(" (", HtmlEscape(report.simulated_reason), ")");
    absl::StrAppend(&out, "<div class=\"banner simulated\">SIMULATED", why,
                    ": these verdicts are not a real grader model's. The scores mean "
                    "nothing.</div>\n");
  }
  if (report.incomplete) {
    absl::StrAppend(&out,
                    "<div class=\"banner incomplete\">INCOMPLETE: some rubric rows were not "
                    "graded; the score covers the graded tasks only.</div>\n");
  }
}

// Back to report.html, previous and next page.
void AppendPageNav(std::string& out, size_t page, size_t pages) {
  absl::StrAppend(&out, "<p class=\"nav\"><a href=\"report.html\">report</a>");
  if (page > 0) {
    absl::StrAppend(&out, " | <a href=\"", TaskPageFileName(page - 1), "\">previous</a>");
  }
  if (page + 1 < pages) {
    absl::StrAppend(&out, " | <a href=\"", TaskPageFileName(page + 1), "\">next</a>");
  }
  absl::StrAppend(&out, " | page ", page + 1, " of ", pages, "</p>\n");
}

// Every task with its score and a link to its page, folded per page.
void AppendTaskIndex(std::string& out, const std::vector<HtmlTask>& tasks) {
  const size_t pages = TaskPageCount(tasks.size());
  absl::StrAppend(&out, "<p class=\"muted\">", tasks.size(), " tasks on ", pages, " pages of ",
                  kTasksPerPage, ": open a range for its tasks and scores.</p>\n");
  for (size_t page = 0; page < pages; ++page) {
    const size_t first = page * kTasksPerPage;
    const size_t end = std::min(tasks.size(), first + kTasksPerPage);
    size_t not_graded = 0;
    for (size_t i = first; i < end; ++i) not_graded += !tasks[i].score.has_value();
    absl::StrAppend(&out, "<details><summary>Tasks ", first + 1, "&ndash;", end, " (<a href=\"",
                    TaskPageFileName(page), "\">page ", page + 1, "</a>)",
                    not_graded > 0 ? absl::StrCat(", ", not_graded, " not graded") : "",
                    "</summary>\n<table><tr><th>#</th><th>prompt_id</th><th>score</th></tr>\n");
    for (size_t i = first; i < end; ++i) {
      absl::StrAppend(&out, "<tr><td class=\"num\">", i + 1, "</td><td><a href=\"",
                      TaskHref(i, tasks.size()), "\"><code>", HtmlEscape(tasks[i].prompt_id),
                      "</code></a></td><td class=\"num\">", FormatScore(tasks[i].score),
                      "</td></tr>\n");
    }
    absl::StrAppend(&out, "</table></details>\n");
  }
}

}  // namespace

const char kReportStyle[] = R"css(
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:72em;
color:#1d1d1f;line-height:1.4;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;
font-variant-numeric:tabular-nums}
.banner{padding:.7em 1em;margin:.6em 0;font-weight:bold;border-radius:4px;color:#fff}
.simulated{background:#b3261e}.incomplete{background:#b26a00}
.score{font-size:1.3em}.muted{color:#666}
.task{border:1px solid #ddd;border-radius:4px;padding:.6em 1em;margin:1em 0}
.msg{white-space:pre-wrap;margin:.3em 0;padding:.4em .6em;border-left:3px solid #999;
background:#fafafa;overflow-wrap:anywhere}.msg.reply{border-left-color:#1a73e8}
.role{font-weight:bold}.met{color:#137333;font-weight:bold}.unmet{color:#b3261e;font-weight:bold}
.rubric{white-space:pre-wrap;margin:.5em 0;overflow-wrap:anywhere}.error{color:#b3261e}
)css";

std::string HtmlEscape(absl::string_view text) {
  // Plain runs are copied whole: a report escapes every conversation and reply (tens of MB).
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  size_t plain_from = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    absl::string_view entity;
    switch (text[i]) {
      case '&':
        entity = "&amp;";
        break;
      case '<':
        entity = "&lt;";
        break;
      case '>':
        entity = "&gt;";
        break;
      case '"':
        entity = "&quot;";
        break;
      case '\'':
        entity = "&#39;";
        break;
      default:
        continue;
    }
    out.append(text.data() + plain_from, i - plain_from);
    out.append(entity.data(), entity.size());
    plain_from = i + 1;
  }
  out.append(text.data() + plain_from, text.size() - plain_from);
  return out;
}

std::vector<size_t> WorstTasks(const std::vector<HtmlTask>& tasks, size_t limit) {
  std::vector<size_t> graded;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].score.has_value()) graded.push_back(i);
  }
  std::stable_sort(graded.begin(), graded.end(),
                   [&](size_t a, size_t b) { return *tasks[a].score < *tasks[b].score; });
  if (graded.size() > limit) graded.resize(limit);
  return graded;
}

std::vector<size_t> RubricDisplayOrder(const std::vector<HtmlRubricRow>& rubric) {
  std::vector<size_t> order(rubric.size());
  std::iota(order.begin(), order.end(), 0);
  auto is_false = [&](size_t i) {
    return rubric[i].criteria_met.has_value() && !*rubric[i].criteria_met;
  };
  std::stable_partition(order.begin(), order.end(), is_false);
  return order;
}

std::string HtmlReportHead(const HtmlReport& report) {
  std::string out;
  absl::StrAppend(&out,
                  "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<title>HealthBench report: ",
                  HtmlEscape(report.checkpoint), "</title>\n<style>", kReportStyle,
                  "</style>\n</head>\n<body>\n<h1>HealthBench report: ",
                  HtmlEscape(report.checkpoint), "</h1>\n");
  AppendBanners(out, report);
  absl::StrAppend(&out, "<p class=\"score\">Score",
                  report.raw_score.has_value() ? " (length-adjusted)" : "", ": <b>",
                  FormatScore(report.score), "</b>");
  if (report.score.has_value()) {
    absl::StrAppend(&out, " &plusmn; ", FormatStd(report.score_bootstrap_std),
                    " <span class=\"muted\">(bootstrap std)</span>");
  }
  if (report.raw_score.has_value()) {
    absl::StrAppend(&out, "; raw score ", FormatScore(report.raw_score), " &plusmn; ",
                    FormatStd(report.raw_bootstrap_std));
  }
  absl::StrAppend(&out, "</p>\n<table>\n");
  for (const auto& [key, value] : report.facts) {
    absl::StrAppend(&out, "<tr><th>", HtmlEscape(key), "</th><td>", HtmlEscape(value),
                    "</td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n");
  std::vector<double> scores;
  for (const HtmlTask& task : report.tasks) {
    if (task.score.has_value()) scores.push_back(*task.score);
  }
  absl::StrAppend(&out, "<h2>Per-task scores</h2>\n<figure>", ScoreHistogramSvg(scores),
                  "<figcaption>Each task's score, unclipped (the reported score is the mean "
                  "clipped to [0, 1]).</figcaption></figure>\n");
  AppendMetricTable(out, report.metrics, "theme:", "By theme", /*with_chart=*/true);
  AppendMetricTable(out, report.metrics, "axis:", "By axis", /*with_chart=*/true);
  absl::StrAppend(&out, "<details><summary>All metrics</summary>\n");
  AppendMetricTable(out, report.metrics, "", "All metrics");
  absl::StrAppend(&out, "</details>\n");

  absl::StrAppend(&out, "<h2>Worst tasks</h2>\n");
  std::vector<size_t> worst = WorstTasks(report.tasks, 10);
  if (worst.empty()) {
    absl::StrAppend(&out, "<p class=\"muted\">no graded task</p>\n");
  } else {
    absl::StrAppend(&out, "<table><tr><th>#</th><th>prompt_id</th><th>score</th></tr>\n");
    for (size_t i : worst) {
      absl::StrAppend(&out, "<tr><td class=\"num\">", i + 1, "</td><td><a href=\"",
                      TaskHref(i, report.tasks.size()), "\"><code>",
                      HtmlEscape(report.tasks[i].prompt_id), "</code></a></td><td class=\"num\">",
                      FormatScore(report.tasks[i].score), "</td></tr>\n");
    }
    absl::StrAppend(&out, "</table>\n");
  }

  absl::StrAppend(&out, "<h2>Tasks</h2>\n");
  if (TaskPageCount(report.tasks.size()) > 0) AppendTaskIndex(out, report.tasks);
  return out;
}

void AppendHtmlReportTask(std::string& out, const HtmlTask& task, size_t index) {
  AppendTask(out, task, index);
}

std::string HtmlReportTail() { return "</body>\n</html>\n"; }

size_t TaskPageCount(size_t tasks) {
  return tasks <= kTasksPerPage ? 0 : (tasks + kTasksPerPage - 1) / kTasksPerPage;
}

std::string TaskPageFileName(size_t page) {
  return absl::StrCat("report-tasks-", page + 1, ".html");
}

std::string TaskHref(size_t index, size_t tasks) {
  if (TaskPageCount(tasks) == 0) return absl::StrCat("#", TaskAnchor(index));
  return absl::StrCat(TaskPageFileName(index / kTasksPerPage), "#", TaskAnchor(index));
}

std::string HtmlTaskPageHead(const HtmlReport& report, size_t page) {
  const size_t first = page * kTasksPerPage + 1;
  const size_t last = std::min(report.tasks.size(), first + kTasksPerPage - 1);
  const std::string title = absl::StrCat("HealthBench report: ", HtmlEscape(report.checkpoint),
                                         ", tasks ", first, "&ndash;", last);
  std::string out;
  absl::StrAppend(&out,
                  "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<title>",
                  title, "</title>\n<style>", kReportStyle, "</style>\n</head>\n<body>\n<h1>",
                  title, "</h1>\n");
  AppendBanners(out, report);
  AppendPageNav(out, page, TaskPageCount(report.tasks.size()));
  return out;
}

std::string HtmlTaskPageTail(const HtmlReport& report, size_t page) {
  std::string out;
  AppendPageNav(out, page, TaskPageCount(report.tasks.size()));
  absl::StrAppend(&out, HtmlReportTail());
  return out;
}

std::string RenderHtmlReport(const HtmlReport& report) {
  std::string out = HtmlReportHead(report);
  for (size_t i = 0; i < report.tasks.size(); ++i) AppendTask(out, report.tasks[i], i);
  absl::StrAppend(&out, HtmlReportTail());
  return out;
}

namespace {

// Score (with its band) and each theme as lines across the checkpoints, in their order.
std::string ComparisonChart(const std::vector<HtmlComparisonCheckpoint>& checkpoints) {
  std::vector<std::string> names;
  CheckpointSeries score{"score", {}, {}, {}};
  std::vector<CheckpointSeries> themes;
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    const HtmlComparisonCheckpoint& c = checkpoints[i];
    names.push_back(c.checkpoint);
    score.values.push_back(c.score);
    std::optional<double> low, high;
    if (c.score) {
      IntervalBar bar = IntervalFromBootstrap("", *c.score, c.bootstrap_std);
      low = bar.low;
      high = bar.high;
    }
    score.low.push_back(low);
    score.high.push_back(high);
    for (const MetricSummary& metric : c.metrics) {
      if (!absl::StartsWith(metric.name, "theme:")) continue;
      auto it = std::find_if(themes.begin(), themes.end(),
                             [&](const CheckpointSeries& t) { return t.name == metric.name; });
      if (it == themes.end()) {
        themes.push_back(CheckpointSeries{metric.name, {}, {}, {}});
        it = themes.end() - 1;
      }
      it->values.resize(checkpoints.size());
      it->values[i] = metric.mean;
    }
  }
  for (CheckpointSeries& theme : themes) theme.values.resize(checkpoints.size());
  std::vector<CheckpointSeries> series = {std::move(score)};
  for (CheckpointSeries& theme : themes) series.push_back(std::move(theme));
  return CheckpointLinesSvg(names, series);
}

// The metrics named `prefix`... across the checkpoints: one row per metric (first appearance
// order), one column per checkpoint, "mean ± std" with n in a tooltip.
void AppendMetricAcross(std::string& out, const std::vector<HtmlComparisonCheckpoint>& checkpoints,
                        absl::string_view prefix, absl::string_view title) {
  std::vector<std::string> names;
  for (const HtmlComparisonCheckpoint& c : checkpoints) {
    for (const MetricSummary& m : c.metrics) {
      if (absl::StartsWith(m.name, prefix) &&
          std::find(names.begin(), names.end(), m.name) == names.end()) {
        names.push_back(m.name);
      }
    }
  }
  absl::StrAppend(&out, "<h2>", HtmlEscape(title), "</h2>\n");
  if (names.empty()) {
    absl::StrAppend(&out, "<p class=\"muted\">none</p>\n");
    return;
  }
  absl::StrAppend(&out, "<table><tr><th>", HtmlEscape(absl::StripSuffix(prefix, ":")), "</th>");
  for (const HtmlComparisonCheckpoint& c : checkpoints) {
    absl::StrAppend(&out, "<th>", HtmlEscape(c.checkpoint), "</th>");
  }
  absl::StrAppend(&out, "</tr>\n");
  for (const std::string& name : names) {
    absl::StrAppend(&out, "<tr><td>", HtmlEscape(name.substr(prefix.size())), "</td>");
    for (const HtmlComparisonCheckpoint& c : checkpoints) {
      auto it = std::find_if(c.metrics.begin(), c.metrics.end(),
                             [&](const MetricSummary& m) { return m.name == name; });
      if (it == c.metrics.end()) {
        absl::StrAppend(&out, "<td class=\"num muted\">n/a</td>");
        continue;
      }
      absl::StrAppend(&out, "<td class=\"num\" title=\"n=", it->n_samples, "\">",
                      FormatScore(it->mean), " &plusmn; ", FormatStd(it->bootstrap_std), "</td>");
    }
    absl::StrAppend(&out, "</tr>\n");
  }
  absl::StrAppend(&out, "</table>\n");
}

// A relative path with each segment URL-escaped.
std::string UrlRelativePath(absl::string_view path) {
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    parts.push_back(part == ".." ? std::string(part) : UrlPathEscape(part));
  }
  return absl::StrJoin(parts, "/");
}

void AppendComparisonHead(std::string& out, const HtmlComparison& page) {
  absl::StrAppend(&out,
                  "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<title>HealthBench comparison</title>\n<style>",
                  kReportStyle, "</style>\n</head>\n<body>\n<h1>HealthBench comparison</h1>\n");
  std::vector<std::string> simulated, incomplete;
  for (const HtmlComparisonCheckpoint& c : page.checkpoints) {
    if (c.simulated) simulated.push_back(HtmlEscape(c.checkpoint));
    if (c.incomplete) incomplete.push_back(HtmlEscape(c.checkpoint));
  }
  if (!simulated.empty()) {
    absl::StrAppend(&out,
                    "<div class=\"banner simulated\">SIMULATED: ", absl::StrJoin(simulated, ", "),
                    " graded by the grader simulator; those scores mean nothing.</div>\n");
  }
  if (!incomplete.empty()) {
    absl::StrAppend(
        &out, "<div class=\"banner incomplete\">INCOMPLETE: ", absl::StrJoin(incomplete, ", "),
        " not fully graded; their scores cover the graded tasks only.</div>\n");
  }
  absl::StrAppend(&out, "<p class=\"score\">Baseline <b>", HtmlEscape(page.baseline), "</b>; <b>",
                  page.common_tasks, "</b> tasks graded by every checkpoint.</p>\n");
}

}  // namespace

std::string RenderComparisonHtml(const HtmlComparison& page) {
  std::string out;
  AppendComparisonHead(out, page);
  // The length-adjusted score (simple-evals PR #108) gets its columns when any checkpoint has it.
  bool adjusted = false;
  for (const HtmlComparisonCheckpoint& c : page.checkpoints) {
    adjusted = adjusted || FindMetric(c.metrics, kLengthAdjustedScoreKey) != nullptr;
  }
  absl::StrAppend(&out, "<table><tr><th>checkpoint</th><th>score</th><th>bootstrap std</th>",
                  adjusted ? "<th>length-adjusted</th><th>its bootstrap std</th>" : "",
                  "<th>graded / tasks</th><th>marks</th></tr>\n");
  for (const HtmlComparisonCheckpoint& c : page.checkpoints) {
    std::string marks =
        absl::StrCat(c.simulated ? "SIMULATED " : "", c.incomplete ? "INCOMPLETE" : "");
    std::string adjusted_cells;
    if (adjusted) {
      const MetricSummary* metric = FindMetric(c.metrics, kLengthAdjustedScoreKey);
      adjusted_cells =
          metric == nullptr
              ? "<td class=\"num\">not applied</td><td></td>"
              : absl::StrCat("<td class=\"num\">", FormatScore(metric->mean),
                             "</td><td class=\"num\">", FormatStd(metric->bootstrap_std), "</td>");
    }
    absl::StrAppend(&out, "<tr><td><a href=\"", HtmlEscape(UrlRelativePath(c.report_path)), "\">",
                    HtmlEscape(c.checkpoint), "</a></td><td class=\"num\">", FormatScore(c.score),
                    "</td><td class=\"num\">", FormatStd(c.bootstrap_std), "</td>", adjusted_cells,
                    "<td class=\"num\">", c.graded, " / ", c.tasks, "</td><td>", marks,
                    "</td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n<figure>", ComparisonChart(page.checkpoints),
                  "<figcaption>Score with its 95% band and each theme, in checkpoint order."
                  "</figcaption></figure>\n");
  AppendMetricAcross(out, page.checkpoints, "theme:", "By theme");
  AppendMetricAcross(out, page.checkpoints, "axis:", "By axis");
  absl::StrAppend(&out, "<h2>Differences to the baseline</h2>\n");
  absl::StrAppend(&out,
                  "<p class=\"muted\">Paired bootstrap over the tasks graded in both "
                  "checkpoints: ",
                  page.bootstrap_samples, " resamples, seed ", page.seed,
                  ", 95% percentile interval; of the length-adjusted scores where both "
                  "checkpoints have them (the raw scores' difference beside it).</p>\n<table><tr>"
                  "<th>baseline</th><th>checkpoint</th><th>difference</th><th>95% CI</th><th>n"
                  "</th><th>raw difference [95% CI]</th></tr>\n");
  for (const HtmlComparisonPair& pair : page.pairs) {
    absl::StrAppend(&out, "<tr><td>", HtmlEscape(pair.baseline), "</td><td>",
                    HtmlEscape(pair.checkpoint), "</td>");
    if (pair.difference.has_value()) {
      absl::StrAppend(&out, "<td class=\"num\">",
                      absl::StrFormat("%+.3f", pair.difference->difference),
                      pair.length_adjusted ? " (length-adjusted)" : "", "</td><td class=\"num\">[",
                      absl::StrFormat("%+.3f", pair.difference->ci_low), ", ",
                      absl::StrFormat("%+.3f", pair.difference->ci_high),
                      "]</td><td class=\"num\">", pair.difference->n, "</td>");
    } else {
      absl::StrAppend(&out, "<td>n/a</td><td>n/a</td><td class=\"num\">0</td>");
    }
    absl::StrAppend(&out, "<td class=\"num\">",
                    !pair.raw.has_value()
                        ? std::string(pair.length_adjusted ? "n/a" : "(the difference)")
                        : absl::StrFormat("%+.3f [%+.3f, %+.3f]", pair.raw->difference,
                                          pair.raw->ci_low, pair.raw->ci_high),
                    "</td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n</body>\n</html>\n");
  return out;
}

}  // namespace hb
