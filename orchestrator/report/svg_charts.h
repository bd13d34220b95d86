// Inline SVG charts for the self-contained report pages (report.html, comparison.html): no
// script, no network, no external font; text goes through HtmlEscape. Each function returns
// one <svg> element sized in CSS pixels, with a <title> that states the numbers for screen
// readers, and data-* attributes that tests (and curious readers) can check.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hb {

// The distribution of per-task scores (unclipped: scores below 0 get their own bins). Bins are
// `bin_width` wide, aligned to 0, from min(0, lowest score) to 1 (a score of exactly 1 falls in
// the last bin). An empty input gives a chart saying "no graded task".
std::string ScoreHistogramSvg(const std::vector<double>& scores, double bin_width = 0.05);

// One horizontal bar with its 95% interval, on a [0, 1] axis.
struct IntervalBar {
  std::string label;
  double value = 0;
  double low = 0;
  double high = 0;
  // Shown after the value (e.g. "n=30").
  std::string note;
};

// Horizontal bars with interval whiskers, one row per bar in the given order.
std::string IntervalBarsSvg(const std::vector<IntervalBar>& bars);

// One line across checkpoints; `values[i]` belongs to checkpoint i (nullopt: missing there).
struct CheckpointSeries {
  std::string name;
  std::vector<std::optional<double>> values;
  // Optional 95% band, drawn under the line (same length as `values` when set).
  std::vector<std::optional<double>> low;
  std::vector<std::optional<double>> high;
};

// Lines across checkpoints in the given order on a [0, 1] axis, with a legend. The first
// series is drawn thicker (the overall score).
std::string CheckpointLinesSvg(const std::vector<std::string>& checkpoints,
                               const std::vector<CheckpointSeries>& series);

// One category of a meta-eval page: the physicians' spread of a metric (min..max, mean) and
// each judge's value of it (nullopt: not defined there, e.g. the category never had a negative
// label).
struct RangeRow {
  std::string label;
  std::optional<double> low, high, mean;
  std::vector<std::optional<double>> judges;
};

// Rows on a [0, 1] axis: a grey band from low to high with a tick at the mean (the physicians),
// and one coloured dot per judge (judge i in palette colour i, named by `judge_names[i]` in the
// legend). Each judge dot carries data-judge and data-value; each band data-low/data-high.
std::string JudgeRangeSvg(const std::vector<RangeRow>& rows,
                          const std::vector<std::string>& judge_names);

// mean ± 1.96 × bootstrap std, clipped to [0, 1]: the 95% interval the pages draw.
IntervalBar IntervalFromBootstrap(std::string label, double mean, double bootstrap_std,
                                  std::string note = "");

}  // namespace hb
