// The meta-eval pages: the view built from a result equals the one read back from its
// meta_eval.json, where a judge falls in the physicians' range, the chart's marks, and the
// errors of a meta_eval.json that is not one.
#include "orchestrator/report/meta_eval_report.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/healthbench/meta_eval_dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/report/svg_charts.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

MetaEvalResult SyntheticResult() {
  auto data = LoadMetaEvalDataset(absl::StrCat(
      hb::testing::SourceDir(), "/tests/common/grading/testdata/meta_eval_synthetic.jsonl"));
  EXPECT_TRUE(data.ok()) << data.status();
  std::vector<std::optional<bool>> verdicts;
  for (size_t i = 0; i < data->rows.size(); ++i) {
    // Every seventh row failed; the others agree with the row's first physician.
    verdicts.push_back(i % 7 == 3 ? std::nullopt
                                  : std::optional<bool>(data->rows[i].binary_labels[0]));
  }
  auto result = ComputeMetaEval(data->rows, verdicts, {});
  EXPECT_TRUE(result.ok()) << result.status();
  return *result;
}

TEST(MetaEvalReportTest, TheViewReadBackEqualsTheViewOfTheResult) {
  const MetaEvalResult result = SyntheticResult();
  const MetaEvalView built = MetaEvalViewOf(result);
  const std::string dir = hb::testing::MakeTempDir();
  JudgeReport judge;
  judge.grader_model = "judge <b>";
  ASSERT_TRUE(WriteMetaEvalReport(result, judge, dir).ok());
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalView read, ReadMetaEvalView(dir + "/meta_eval.json"));

  ASSERT_TRUE(built.score.has_value());
  EXPECT_EQ(read.score, built.score);
  EXPECT_EQ(*built.score, *result.model_agreement.at("pairwise_model_f1_balanced").value);
  ASSERT_TRUE(read.physicians.has_value());
  EXPECT_EQ(read.physicians->mean, built.physicians->mean);
  EXPECT_EQ(read.physicians->min, built.physicians->min);
  EXPECT_EQ(read.physicians->max, built.physicians->max);
  EXPECT_EQ(read.physicians->physicians, built.physicians->physicians);
  ASSERT_EQ(read.categories.size(), built.categories.size());
  ASSERT_GE(built.categories.size(), 3u);
  for (size_t i = 0; i < built.categories.size(); ++i) {
    SCOPED_TRACE(built.categories[i].name);
    EXPECT_EQ(read.categories[i].name, built.categories[i].name);
    EXPECT_EQ(read.categories[i].model, built.categories[i].model);
    EXPECT_EQ(read.categories[i].physicians.has_value(),
              built.categories[i].physicians.has_value());
  }
  EXPECT_EQ(read.rows, 48);
  EXPECT_EQ(read.graded, result.graded);
  EXPECT_EQ(read.failed_lines, result.failed_lines);
  EXPECT_EQ(read.failed_lines.size(), 7u);

  HB_ASSERT_OK_AND_ASSIGN(const std::string html, ReadFile(dir + "/meta_eval.html"));
  EXPECT_THAT(html, HasSubstr("judge &lt;b&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("judge <b>")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));  // self-contained: nothing is fetched
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, HasSubstr("lines 4, 11, 18, 25, 32, 39, 46"));
}

TEST(MetaEvalReportTest, PlaceInThePhysiciansRange) {
  const PhysicianAgreementSummary p{/*mean=*/0.6, /*min=*/0.5, /*max=*/0.8, /*physicians=*/4};
  EXPECT_EQ(PlaceInPhysicianRange(0.81, p), "above every physician");
  EXPECT_EQ(PlaceInPhysicianRange(0.8, p), "above the physicians' mean");
  EXPECT_EQ(PlaceInPhysicianRange(0.6, p), "above the physicians' mean");
  EXPECT_EQ(PlaceInPhysicianRange(0.59, p), "below the physicians' mean");
  EXPECT_EQ(PlaceInPhysicianRange(0.5, p), "below the physicians' mean");
  EXPECT_EQ(PlaceInPhysicianRange(0.49, p), "below every physician");
  EXPECT_EQ(PlaceInPhysicianRange(std::nullopt, p), "n/a");
  EXPECT_EQ(PlaceInPhysicianRange(0.7, std::nullopt), "n/a");
}

TEST(MetaEvalReportTest, CostPerThousandJudgements) {
  JudgeReport judge;
  EXPECT_EQ(judge.CostPerThousand(), std::nullopt);
  judge.cost_usd = 0.36;
  judge.judgements = 150;
  EXPECT_DOUBLE_EQ(*judge.CostPerThousand(), 2.4);
}

TEST(MetaEvalReportTest, TheChartMarksEveryJudgeAndThePhysiciansBand) {
  RangeRow row;
  row.label = "cluster:a<b";
  row.low = 0.25;
  row.high = 0.75;
  row.mean = 0.5;
  row.judges = {0.6, std::nullopt};
  const std::string svg = JudgeRangeSvg({row}, {"one", "two"});
  EXPECT_THAT(svg, HasSubstr("data-rows=\"1\" data-judges=\"2\""));
  EXPECT_THAT(svg, HasSubstr("data-low=\"0.2500\" data-high=\"0.7500\""));
  EXPECT_THAT(svg, HasSubstr("data-judge=\"0\" data-value=\"0.6000\""));
  EXPECT_THAT(svg, Not(HasSubstr("data-judge=\"1\"")));  // undefined there: no dot
  EXPECT_THAT(svg, HasSubstr("cluster:a&lt;b"));
  EXPECT_THAT(svg, HasSubstr("two n/a"));
}

TEST(MetaEvalReportTest, AFileThatIsNotAMetaEvalDocumentNamesThePathAndField) {
  const std::string dir = hb::testing::MakeTempDir();
  const std::string path = dir + "/meta_eval.json";
  ASSERT_TRUE(WriteFileAtomically(path,
                                  R"({"score": 0.5, "metrics": {}, )"
                                  R"("physician_agreement_summary": {}, "rows": {"selected": 3},)"
                                  R"( "failed_rows": []})")
                  .ok());
  EXPECT_THAT(ReadMetaEvalView(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat(path, ": field 'rows.graded': missing")));
  ASSERT_TRUE(WriteFileAtomically(path, R"({"score": "high"})").ok());
  EXPECT_THAT(ReadMetaEvalView(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat(path, ": field 'score': expected a number, got string")));
  EXPECT_THAT(ReadMetaEvalView(dir + "/none.json").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("none.json")));
}

}  // namespace
}  // namespace hb
