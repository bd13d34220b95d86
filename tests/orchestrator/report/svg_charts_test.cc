#include "orchestrator/report/svg_charts.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The data-count of every bin, in order.
std::vector<int> BinCounts(const std::string& svg) {
  std::vector<int> counts;
  const std::string key = "class=\"bin\" data-count=\"";
  for (size_t at = svg.find(key); at != std::string::npos; at = svg.find(key, at + 1)) {
    counts.push_back(std::stoi(svg.substr(at + key.size())));
  }
  return counts;
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(ScoreHistogramSvgTest, CountsEveryTaskInItsBin) {
  const std::string svg = ScoreHistogramSvg({0.0, 0.01, 0.26, 0.5, 0.99, 1.0}, 0.25);
  EXPECT_THAT(svg, HasSubstr("data-tasks=\"6\" data-bins=\"4\""));
  EXPECT_EQ(BinCounts(svg), (std::vector<int>{2, 1, 1, 2}));
}

TEST(ScoreHistogramSvgTest, NegativeScoresGetTheirOwnBins) {
  const std::string svg = ScoreHistogramSvg({-0.6, -0.1, 0.3}, 0.5);
  // [-1, -0.5) [-0.5, 0) [0, 0.5) [0.5, 1]
  EXPECT_EQ(BinCounts(svg), (std::vector<int>{1, 1, 1, 0}));
  EXPECT_THAT(svg, HasSubstr("#d1495b"));
}

TEST(ScoreHistogramSvgTest, EmptyInputSaysSo) {
  EXPECT_THAT(ScoreHistogramSvg({}), HasSubstr("No graded task."));
}

TEST(IntervalBarsSvgTest, OneRowPerBarWithEscapedLabels) {
  const std::string svg = IntervalBarsSvg({IntervalFromBootstrap("theme:<emergency>", 0.5, 0.1),
                                           IntervalFromBootstrap("axis:accuracy", 0.25, 0.0)});
  EXPECT_THAT(svg, HasSubstr("data-bars=\"2\""));
  EXPECT_EQ(Count(svg, "class=\"bar\""), 2);
  EXPECT_EQ(Count(svg, "class=\"interval\""), 2);
  EXPECT_THAT(svg, HasSubstr("theme:&lt;emergency&gt;"));
  EXPECT_THAT(svg, Not(HasSubstr("<emergency>")));
  // 0.5 ± 1.96 × 0.1
  EXPECT_THAT(svg, HasSubstr("theme:&lt;emergency&gt; 0.500 [0.304, 0.696]"));
}

TEST(IntervalFromBootstrapTest, ClipsToTheUnitInterval) {
  IntervalBar bar = IntervalFromBootstrap("x", 0.95, 0.1);
  EXPECT_DOUBLE_EQ(bar.high, 1.0);
  EXPECT_NEAR(bar.low, 0.754, 1e-12);
}

TEST(CheckpointLinesSvgTest, OneLinePerSeriesSkippingMissingPoints) {
  CheckpointSeries score{"score", {0.2, 0.4, 0.5}, {0.1, 0.3, 0.4}, {0.3, 0.5, 0.6}};
  CheckpointSeries theme{"theme:hedging", {0.1, std::nullopt, 0.7}, {}, {}};
  const std::string svg = CheckpointLinesSvg({"ckpt-100", "ckpt-200", "ckpt-300"}, {score, theme});
  EXPECT_THAT(svg, HasSubstr("data-checkpoints=\"3\" data-series=\"2\""));
  EXPECT_THAT(svg, HasSubstr("data-name=\"score\" data-points=\"3\""));
  EXPECT_THAT(svg, HasSubstr("data-name=\"theme:hedging\" data-points=\"2\""));
  EXPECT_EQ(Count(svg, "class=\"band\""), 1);
  EXPECT_THAT(svg, HasSubstr("Scores across 3 checkpoints (ckpt-100, ckpt-200, ckpt-300)"));
}

TEST(SvgChartsTest, NoScriptsOrExternalReferences) {
  const std::string all = absl::StrCat(
      ScoreHistogramSvg({0.5}), IntervalBarsSvg({IntervalFromBootstrap("a", 0.5, 0.1)}),
      CheckpointLinesSvg({"a"}, {CheckpointSeries{"score", {0.5}, {}, {}}}));
  EXPECT_THAT(all, Not(HasSubstr("<script")));
  EXPECT_THAT(all, Not(HasSubstr("href")));
  // The only URI is each chart's xmlns namespace name (never fetched).
  EXPECT_EQ(Count(all, "http"), Count(all, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(Count(all, "<svg "), 3);
}

}  // namespace
}  // namespace hb
