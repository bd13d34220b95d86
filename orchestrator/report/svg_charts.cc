#include "orchestrator/report/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "orchestrator/report/html_report.h"

namespace hb {
namespace {

constexpr const char* kPalette[] = {"#1f5fa8", "#d1495b", "#2e8b57", "#e08e0b", "#7b4fa0",
                                    "#00798c", "#8c564b", "#c2185b", "#5d6d7e", "#9e9d24"};

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

std::string SvgOpen(int width, int height, const std::string& title, const std::string& data) {
  return absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"", width,
                      "\" height=\"", height, "\" viewBox=\"0 0 ", width, " ", height,
                      "\" role=\"img\" ", data, "><title>", HtmlEscape(title), "</title>\n");
}

// A horizontal [0, 1] axis with ticks every 0.25, from x0 to x1 at height y.
std::string UnitAxisX(double x0, double x1, double y) {
  std::string out = absl::StrCat("<line x1=\"", Num(x0), "\" y1=\"", Num(y), "\" x2=\"", Num(x1),
                                 "\" y2=\"", Num(y), "\" stroke=\"#888\"/>\n");
  for (int i = 0; i <= 4; ++i) {
    double x = x0 + (x1 - x0) * i / 4.0;
    absl::StrAppend(&out, "<text x=\"", Num(x), "\" y=\"", Num(y + 14),
                    "\" font-size=\"11\" text-anchor=\"middle\">", absl::StrFormat("%.2f", i / 4.0),
                    "</text>\n");
  }
  return out;
}

}  // namespace

IntervalBar IntervalFromBootstrap(std::string label, double mean, double bootstrap_std,
                                  std::string note) {
  IntervalBar bar;
  bar.label = std::move(label);
  bar.value = mean;
  bar.low = std::clamp(mean - 1.96 * bootstrap_std, 0.0, 1.0);
  bar.high = std::clamp(mean + 1.96 * bootstrap_std, 0.0, 1.0);
  bar.note = std::move(note);
  return bar;
}

std::string ScoreHistogramSvg(const std::vector<double>& scores, double bin_width) {
  constexpr int kWidth = 640, kHeight = 220, kLeft = 40, kRight = 10, kTop = 10, kBottom = 40;
  if (scores.empty()) {
    return absl::StrCat(SvgOpen(kWidth, 60, "Per-task scores: no graded task", ""),
                        "<text x=\"10\" y=\"30\">No graded task.</text></svg>\n");
  }
  const double lowest = *std::min_element(scores.begin(), scores.end());
  const double start = std::min(0.0, std::floor(lowest / bin_width) * bin_width);
  const int bins = static_cast<int>(std::lround((1.0 - start) / bin_width));
  std::vector<int> counts(bins, 0);
  for (double s : scores) {
    int i = static_cast<int>(std::floor((std::min(s, 1.0) - start) / bin_width + 1e-9));
    counts[std::clamp(i, 0, bins - 1)]++;
  }
  const int most = *std::max_element(counts.begin(), counts.end());
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  std::string out = SvgOpen(
      kWidth, kHeight,
      absl::StrCat("Distribution of ", scores.size(), " per-task scores (bins of ", bin_width,
                   " from ", start, " to 1); the tallest bin holds ", most, " tasks"),
      absl::StrCat("data-tasks=\"", scores.size(), "\" data-bins=\"", bins, "\""));
  for (int i = 0; i < bins; ++i) {
    const double h = plot_h * counts[i] / most;
    const double from = start + i * bin_width;
    absl::StrAppend(&out, "<rect class=\"bin\" data-count=\"", counts[i], "\" x=\"",
                    Num(kLeft + plot_w * i / bins), "\" y=\"", Num(kTop + plot_h - h),
                    "\" width=\"", Num(std::max(1.0, plot_w / bins - 1)), "\" height=\"", Num(h),
                    "\" fill=\"", from < 0 ? "#d1495b" : "#1f5fa8", "\"><title>",
                    absl::StrFormat("[%.2f, %.2f): %d tasks", from, from + bin_width, counts[i]),
                    "</title></rect>\n");
  }
  const double axis_y = kTop + plot_h;
  absl::StrAppend(&out, "<line x1=\"", kLeft, "\" y1=\"", Num(axis_y), "\" x2=\"", kWidth - kRight,
                  "\" y2=\"", Num(axis_y), "\" stroke=\"#888\"/>\n");
  // Ticks on multiples of 0.25 (0.5 when the axis is long), always including 0 and 1.
  const double step = 1.0 - start > 2.0 ? 0.5 : 0.25;
  for (double tick = std::ceil(start / step - 1e-9) * step; tick <= 1.0 + 1e-9; tick += step) {
    const double x = kLeft + plot_w * (tick - start) / (1.0 - start);
    absl::StrAppend(&out, "<text x=\"", Num(x), "\" y=\"", Num(axis_y + 14),
                    "\" font-size=\"11\" text-anchor=\"middle\">", absl::StrFormat("%.2f", tick),
                    "</text>\n");
  }
  absl::StrAppend(&out, "<text x=\"", kLeft, "\" y=\"", Num(axis_y + 32),
                  "\" font-size=\"11\">per-task score (unclipped; red: below 0)</text>\n",
                  "<text x=\"4\" y=\"", kTop + 10, "\" font-size=\"11\">", most, "</text></svg>\n");
  return out;
}

std::string IntervalBarsSvg(const std::vector<IntervalBar>& bars) {
  constexpr int kWidth = 640, kLabel = 230, kRight = 90, kRow = 20, kTop = 6;
  const int height = kTop + kRow * static_cast<int>(bars.size()) + 24;
  const double x0 = kLabel, x1 = kWidth - kRight;
  std::vector<std::string> said;
  for (const IntervalBar& b : bars) {
    said.push_back(absl::StrFormat("%s %.3f [%.3f, %.3f]", b.label, b.value, b.low, b.high));
  }
  std::string out = SvgOpen(kWidth, height,
                            absl::StrCat("Scores with 95% intervals: ", absl::StrJoin(said, "; ")),
                            absl::StrCat("data-bars=\"", bars.size(), "\""));
  for (size_t i = 0; i < bars.size(); ++i) {
    const IntervalBar& b = bars[i];
    const double y = kTop + kRow * static_cast<double>(i);
    auto at = [&](double v) { return x0 + (x1 - x0) * std::clamp(v, 0.0, 1.0); };
    absl::StrAppend(&out, "<text x=\"", kLabel - 6, "\" y=\"", Num(y + 13),
                    "\" font-size=\"12\" text-anchor=\"end\">", HtmlEscape(b.label), "</text>\n",
                    "<rect class=\"bar\" x=\"", Num(x0), "\" y=\"", Num(y + 3), "\" width=\"",
                    Num(at(b.value) - x0), "\" height=\"", kRow - 6, "\" fill=\"#9dbbe0\"/>\n",
                    "<line class=\"interval\" x1=\"", Num(at(b.low)), "\" y1=\"", Num(y + 10),
                    "\" x2=\"", Num(at(b.high)), "\" y2=\"", Num(y + 10),
                    "\" stroke=\"#1f2d3d\" stroke-width=\"2\"/>\n", "<text x=\"", Num(x1 + 6),
                    "\" y=\"", Num(y + 13), "\" font-size=\"11\">",
                    absl::StrFormat("%.3f", b.value), b.note.empty() ? "" : " ", HtmlEscape(b.note),
                    "</text>\n");
  }
  absl::StrAppend(&out, UnitAxisX(x0, x1, kTop + kRow * static_cast<double>(bars.size()) + 4),
                  "</svg>\n");
  return out;
}

std::string JudgeRangeSvg(const std::vector<RangeRow>& rows,
                          const std::vector<std::string>& judge_names) {
  constexpr int kWidth = 900, kLabel = 420, kRight = 40, kRow = 22, kTop = 6;
  const int legend = 18 * static_cast<int>(judge_names.size() + 1);
  const int height = kTop + kRow * static_cast<int>(rows.size()) + 24 + legend;
  const double x0 = kLabel, x1 = kWidth - kRight;
  auto at = [&](double v) { return x0 + (x1 - x0) * std::clamp(v, 0.0, 1.0); };
  auto said_value = [](const std::optional<double>& v) {
    return v.has_value() ? absl::StrFormat("%.3f", *v) : std::string("n/a");
  };
  std::vector<std::string> said;
  for (const RangeRow& r : rows) {
    std::vector<std::string> judges;
    for (size_t j = 0; j < r.judges.size() && j < judge_names.size(); ++j) {
      judges.push_back(absl::StrCat(judge_names[j], " ", said_value(r.judges[j])));
    }
    said.push_back(absl::StrCat(r.label, ": physicians ", said_value(r.low), "..",
                                said_value(r.high), " (mean ", said_value(r.mean), "), ",
                                absl::StrJoin(judges, ", ")));
  }
  std::string out = SvgOpen(
      kWidth, height,
      absl::StrCat("Each judge against the physicians' range: ", absl::StrJoin(said, "; ")),
      absl::StrCat("data-rows=\"", rows.size(), "\" data-judges=\"", judge_names.size(), "\""));
  for (size_t i = 0; i < rows.size(); ++i) {
    const RangeRow& r = rows[i];
    const double y = kTop + kRow * static_cast<double>(i);
    absl::StrAppend(&out, "<text x=\"", kLabel - 6, "\" y=\"", Num(y + 14),
                    "\" font-size=\"12\" text-anchor=\"end\">", HtmlEscape(r.label), "</text>\n");
    if (r.low.has_value() && r.high.has_value()) {
      absl::StrAppend(&out, "<rect class=\"physicians\" data-low=\"",
                      absl::StrFormat("%.4f", *r.low), "\" data-high=\"",
                      absl::StrFormat("%.4f", *r.high), "\" x=\"", Num(at(*r.low)), "\" y=\"",
                      Num(y + 4), "\" width=\"", Num(std::max(2.0, at(*r.high) - at(*r.low))),
                      "\" height=\"", kRow - 8, "\" fill=\"#d5d8dc\"/>\n");
    }
    if (r.mean.has_value()) {
      absl::StrAppend(&out, "<line class=\"physician-mean\" x1=\"", Num(at(*r.mean)), "\" y1=\"",
                      Num(y + 2), "\" x2=\"", Num(at(*r.mean)), "\" y2=\"", Num(y + kRow - 2),
                      "\" stroke=\"#1d1d1f\" stroke-width=\"2\"/>\n");
    }
    // Judges are staggered vertically, so equal values stay visible side by side.
    const double center = (static_cast<double>(r.judges.size()) - 1) / 2;
    const double spread = r.judges.size() > 1 ? 6.0 / static_cast<double>(r.judges.size() - 1) : 0;
    for (size_t j = 0; j < r.judges.size(); ++j) {
      if (!r.judges[j].has_value()) continue;
      absl::StrAppend(&out, "<circle class=\"judge\" data-judge=\"", j, "\" data-value=\"",
                      absl::StrFormat("%.4f", *r.judges[j]), "\" cx=\"", Num(at(*r.judges[j])),
                      "\" cy=\"", Num(y + kRow / 2.0 + spread * (static_cast<double>(j) - center)),
                      "\" r=\"5\" fill=\"", kPalette[j % std::size(kPalette)],
                      "\" stroke=\"#fff\"/>\n");
    }
  }
  double y = kTop + kRow * static_cast<double>(rows.size()) + 4;
  absl::StrAppend(&out, UnitAxisX(x0, x1, y));
  y += 30;
  absl::StrAppend(&out, "<rect x=\"", Num(x0), "\" y=\"", Num(y - 9),
                  "\" width=\"24\" height=\"10\"", " fill=\"#d5d8dc\"/><line x1=\"", Num(x0 + 12),
                  "\" y1=\"", Num(y - 11), "\" x2=\"", Num(x0 + 12), "\" y2=\"", Num(y + 3),
                  "\" stroke=\"#1d1d1f\" stroke-width=\"2\"/><text x=\"", Num(x0 + 32), "\" y=\"",
                  Num(y), "\" font-size=\"11\">physicians: min..max, tick at the mean</text>\n");
  for (size_t j = 0; j < judge_names.size(); ++j) {
    y += 18;
    absl::StrAppend(&out, "<circle cx=\"", Num(x0 + 12), "\" cy=\"", Num(y - 4),
                    "\" r=\"5\" fill=\"", kPalette[j % std::size(kPalette)], "\"/><text x=\"",
                    Num(x0 + 32), "\" y=\"", Num(y), "\" font-size=\"11\">",
                    HtmlEscape(judge_names[j]), "</text>\n");
  }
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

std::string CheckpointLinesSvg(const std::vector<std::string>& checkpoints,
                               const std::vector<CheckpointSeries>& series) {
  constexpr int kWidth = 720, kHeight = 300, kLeft = 44, kRight = 190, kTop = 12, kBottom = 46;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const size_t n = checkpoints.size();
  auto x_at = [&](size_t i) { return kLeft + (n <= 1 ? plot_w / 2 : plot_w * i / (n - 1)); };
  auto y_at = [&](double v) { return kTop + plot_h * (1.0 - std::clamp(v, 0.0, 1.0)); };
  std::string out = SvgOpen(
      kWidth, kHeight,
      absl::StrCat("Scores across ", n, " checkpoints (", absl::StrJoin(checkpoints, ", "), ")"),
      absl::StrCat("data-checkpoints=\"", n, "\" data-series=\"", series.size(), "\""));
  for (int i = 0; i <= 4; ++i) {
    const double y = y_at(i / 4.0);
    absl::StrAppend(&out, "<line x1=\"", kLeft, "\" y1=\"", Num(y), "\" x2=\"", Num(kLeft + plot_w),
                    "\" y2=\"", Num(y), "\" stroke=\"#e3e3e3\"/>\n<text x=\"", kLeft - 6, "\" y=\"",
                    Num(y + 4), "\" font-size=\"11\" text-anchor=\"end\">",
                    absl::StrFormat("%.2f", i / 4.0), "</text>\n");
  }
  for (size_t i = 0; i < n; ++i) {
    absl::StrAppend(&out, "<text x=\"", Num(x_at(i)), "\" y=\"", Num(kTop + plot_h + 16),
                    "\" font-size=\"11\" text-anchor=\"middle\">", HtmlEscape(checkpoints[i]),
                    "</text>\n");
  }
  for (size_t s = 0; s < series.size(); ++s) {
    const CheckpointSeries& line = series[s];
    const char* color = kPalette[s % (sizeof(kPalette) / sizeof(kPalette[0]))];
    if (line.low.size() == n && line.high.size() == n) {
      std::vector<std::string> upper, lower;
      for (size_t i = 0; i < n; ++i) {
        if (!line.low[i] || !line.high[i]) continue;
        upper.push_back(absl::StrCat(Num(x_at(i)), ",", Num(y_at(*line.high[i]))));
        lower.insert(lower.begin(), absl::StrCat(Num(x_at(i)), ",", Num(y_at(*line.low[i]))));
      }
      absl::StrAppend(&out, "<polygon class=\"band\" points=\"", absl::StrJoin(upper, " "), " ",
                      absl::StrJoin(lower, " "), "\" fill=\"", color,
                      "\" fill-opacity=\"0.15\" stroke=\"none\"/>\n");
    }
    std::vector<std::string> points;
    for (size_t i = 0; i < n && i < line.values.size(); ++i) {
      if (line.values[i])
        points.push_back(absl::StrCat(Num(x_at(i)), ",", Num(y_at(*line.values[i]))));
    }
    absl::StrAppend(&out, "<polyline class=\"series\" data-name=\"", HtmlEscape(line.name),
                    "\" data-points=\"", points.size(), "\" points=\"", absl::StrJoin(points, " "),
                    "\" fill=\"none\" stroke=\"", color, "\" stroke-width=\"", s == 0 ? 3 : 1.5,
                    "\"/>\n");
    for (const std::string& p : points) {
      const size_t comma = p.find(',');
      absl::StrAppend(&out, "<circle cx=\"", p.substr(0, comma), "\" cy=\"", p.substr(comma + 1),
                      "\" r=\"", s == 0 ? 3.5 : 2.5, "\" fill=\"", color, "\"/>\n");
    }
    const double legend_y = kTop + 14.0 * static_cast<double>(s) + 6;
    absl::StrAppend(&out, "<line x1=\"", Num(kLeft + plot_w + 12), "\" y1=\"", Num(legend_y),
                    "\" x2=\"", Num(kLeft + plot_w + 28), "\" y2=\"", Num(legend_y), "\" stroke=\"",
                    color, "\" stroke-width=\"3\"/>\n<text x=\"", Num(kLeft + plot_w + 32),
                    "\" y=\"", Num(legend_y + 4), "\" font-size=\"11\">", HtmlEscape(line.name),
                    "</text>\n");
  }
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

}  // namespace hb
