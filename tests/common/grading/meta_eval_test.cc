#include "common/grading/meta_eval.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/healthbench/meta_eval_dataset.h"
#include "common/healthbench/prompts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::SizeIs;

struct Expected {
  double n;
  bool n_is_float;
  double value;
};

// SPEC §16.2: the reference's test_compute_agreement_for_rater_by_class, with the full key set
// the reference function produces.
TEST(ComputeAgreementForRaterByClassTest, ReferenceTestCase) {
  const std::map<std::string, AgreementMetric> metrics = ComputeAgreementForRaterByClass(
      {true, false, true}, {{true, true, false}, {true, false}, {false}}, {"a", "a", "b"}, "model");

  const std::map<std::string, Expected> expected = {
      {"pairwise_model_precision_pos", {4, false, 0.5}},
      {"a: pairwise_model_precision_pos", {3, false, 2.0 / 3}},
      {"pairwise_model_recall_pos", {3, false, 2.0 / 3}},
      {"a: pairwise_model_recall_pos", {3, false, 2.0 / 3}},
      {"pairwise_model_recall_neg", {3, false, 1.0 / 3}},
      {"a: pairwise_model_recall_neg", {2, false, 0.5}},
      {"pairwise_model_precision_neg", {2, false, 0.5}},
      {"a: pairwise_model_precision_neg", {2, false, 0.5}},
      {"b: pairwise_model_precision_pos", {1, false, 0.0}},
      {"b: pairwise_model_recall_neg", {1, false, 0.0}},
      {"pairwise_model_f1_pos", {5.0, true, 0.5714285714285715}},
      {"a: pairwise_model_f1_pos", {4.0, true, 0.6666666666666666}},
      {"pairwise_model_f1_neg", {4.0, true, 0.4}},
      {"a: pairwise_model_f1_neg", {3.0, true, 0.5}},
      {"pairwise_model_precision_balanced", {6, false, 0.5}},
      {"a: pairwise_model_precision_balanced", {5, false, 0.5833333333333333}},
      {"pairwise_model_recall_balanced", {6, false, 0.5}},
      {"a: pairwise_model_recall_balanced", {5, false, 0.5833333333333333}},
      {"pairwise_model_f1_balanced", {9.0, true, 0.48571428571428577}},
      {"a: pairwise_model_f1_balanced", {7.0, true, 0.5833333333333333}},
  };
  ASSERT_EQ(metrics.size(), expected.size());
  for (const auto& [key, want] : expected) {
    SCOPED_TRACE(key);
    const auto it = metrics.find(key);
    ASSERT_NE(it, metrics.end());
    EXPECT_EQ(it->second.n, want.n);
    EXPECT_EQ(it->second.n_is_float, want.n_is_float);
    ASSERT_TRUE(it->second.value.has_value());
    EXPECT_EQ(*it->second.value, want.value);  // exact, as the reference's asserts
  }
  // The reference's own asserts, in its Python float expressions.
  EXPECT_EQ(*metrics.at("pairwise_model_f1_pos").value, 2 * 0.5 * (2.0 / 3) / (0.5 + 2.0 / 3));
  EXPECT_EQ(*metrics.at("pairwise_model_f1_neg").value, 2 * 0.5 * (1.0 / 3) / (0.5 + 1.0 / 3));
  for (const char* absent :
       {"b: pairwise_model_precision_neg", "b: pairwise_model_recall_pos",
        "b: pairwise_model_f1_pos", "b: pairwise_model_f1_neg", "b: pairwise_model_f1_balanced"}) {
    EXPECT_EQ(metrics.count(absent), 0U) << absent;
  }
}

TEST(ComputeAgreementForRaterByClassTest, RewritesOnlyTheSuffix) {
  // A cluster name containing "precision" and "pos": the reference's substring rewrite
  // would look for "recall pos: pairwise_..." and find nothing; we pair by structure.
  const std::map<std::string, AgreementMetric> metrics = ComputeAgreementForRaterByClass(
      {true, false}, {{true}, {true}}, {"precision pos", "precision pos"}, "physician");
  std::vector<std::string> keys;
  for (const auto& [key, metric] : metrics) keys.push_back(key);
  // precision_pos (row 1), precision_neg (row 2), recall_pos (both rows); no recall_neg, so
  // only f1_pos and precision_balanced are derived.
  EXPECT_THAT(
      keys, ElementsAre("pairwise_physician_f1_pos", "pairwise_physician_precision_balanced",
                        "pairwise_physician_precision_neg", "pairwise_physician_precision_pos",
                        "pairwise_physician_recall_pos", "precision pos: pairwise_physician_f1_pos",
                        "precision pos: pairwise_physician_precision_balanced",
                        "precision pos: pairwise_physician_precision_neg",
                        "precision pos: pairwise_physician_precision_pos",
                        "precision pos: pairwise_physician_recall_pos"));
  const AgreementMetric& f1_pos = metrics.at("precision pos: pairwise_physician_f1_pos");
  // p = 1 (1/1), r = 1/2 (2 recall_pos entries, one agreeing): f1 = 2/3, n = 1 + 2 - 1 = 2.
  EXPECT_EQ(*f1_pos.value, 2 * 1.0 * 0.5 / 1.5);
  EXPECT_EQ(f1_pos.n, 2.0);
}

TEST(ComputeAgreementForRaterByClassTest, ZeroPrecisionAndRecallGiveZeroF1) {
  const std::map<std::string, AgreementMetric> metrics =
      ComputeAgreementForRaterByClass({true}, {{false}}, {"c"}, "model");
  // precision_pos 0/1, recall_neg 0/1: no twins, so no F1 at all.
  EXPECT_EQ(metrics.count("pairwise_model_f1_pos"), 0U);
  const std::map<std::string, AgreementMetric> both =
      ComputeAgreementForRaterByClass({true, false}, {{false}, {true}}, {"c", "c"}, "model");
  // precision_pos 0/1, recall_pos 0/1 -> f1_pos 0.0 with n = 1 + 1 - 0 = 2.0.
  const AgreementMetric& f1 = both.at("pairwise_model_f1_pos");
  ASSERT_TRUE(f1.value.has_value());
  EXPECT_EQ(*f1.value, 0.0);
  EXPECT_EQ(f1.n, 2.0);
  EXPECT_TRUE(f1.n_is_float);
}

TEST(ComputeAgreementForRaterByClassTest, EmptyInput) {
  EXPECT_TRUE(ComputeAgreementForRaterByClass({}, {}, {}, "model").empty());
  // A row with no other labels contributes nothing.
  EXPECT_TRUE(ComputeAgreementForRaterByClass({true}, {{}}, {"c"}, "model").empty());
}

// ---------------------------------------------------------------------------------------------
// The whole meta-eval against scripts/reference/meta_eval_reference.py on our synthetic file.

std::string TestData(const std::string& name) {
  return absl::StrCat(hb::testing::SourceDir(), "/tests/common/grading/testdata/", name);
}

std::vector<std::optional<bool>> SyntheticVerdicts() {
  const std::string path = TestData("meta_eval_synthetic.verdicts.json");
  std::stringstream text;
  text << std::ifstream(path, std::ios::binary).rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  EXPECT_TRUE(doc.IsArray()) << path;
  std::vector<std::optional<bool>> verdicts;
  if (!doc.IsArray()) return verdicts;
  for (const rapidjson::Value& v : doc.GetArray()) {
    verdicts.push_back(v.IsNull() ? std::nullopt : std::optional<bool>(v.GetBool()));
  }
  return verdicts;
}

// Deep equality of two JSON values, with numbers compared bit for bit and integer vs float
// kept apart ("5" is not "5.0": the reference prints Python ints and floats differently).
void ExpectSameJson(const rapidjson::Value& ours, const rapidjson::Value& want,
                    const std::string& where) {
  ASSERT_EQ(ours.GetType(), want.GetType()) << where;
  if (ours.IsObject()) {
    ASSERT_EQ(ours.MemberCount(), want.MemberCount()) << where;
    for (const auto& member : want.GetObject()) {
      const std::string key(member.name.GetString(), member.name.GetStringLength());
      const auto it = ours.FindMember(member.name);
      ASSERT_NE(it, ours.MemberEnd()) << where << " lacks " << key;
      ExpectSameJson(it->value, member.value, where + "/" + key);
    }
  } else if (ours.IsArray()) {
    ASSERT_EQ(ours.Size(), want.Size()) << where;
    for (rapidjson::SizeType i = 0; i < want.Size(); ++i) {
      ExpectSameJson(ours[i], want[i], absl::StrCat(where, "[", i, "]"));
    }
  } else if (ours.IsNumber()) {
    EXPECT_EQ(ours.IsDouble(), want.IsDouble()) << where << ": int vs float";
    const double a = ours.GetDouble();
    const double b = want.GetDouble();
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << where << ": ours " << a << " reference " << b;
  } else if (ours.IsString()) {
    EXPECT_STREQ(ours.GetString(), want.GetString()) << where;
  } else {
    EXPECT_TRUE(ours == want) << where;
  }
}

struct CrossCheckCase {
  std::optional<size_t> examples;
  uint32_t seed;
};

class MetaEvalCrossCheckTest : public ::testing::TestWithParam<CrossCheckCase> {};

TEST_P(MetaEvalCrossCheckTest, SameAsTheReference) {
  const CrossCheckCase& param = GetParam();
  const std::string python = "/usr/bin/python3";
  ASSERT_EQ(::access(python.c_str(), X_OK), 0) << python << " (with numpy) is required";
  const std::string data = TestData("meta_eval_synthetic.jsonl");
  const std::string verdicts_path = TestData("meta_eval_synthetic.verdicts.json");
  const std::string tmpl_path = hb::testing::ReferenceTemplatePath();
  const std::string out = hb::testing::MakeTempDir() + "/reference.json";
  std::string command = absl::StrCat(python, " ", hb::testing::SourceDir(),
                                     "/scripts/reference/meta_eval_reference.py --data ", data,
                                     " --verdicts ", verdicts_path, " --template ", tmpl_path,
                                     " --out ", out, " --seed ", param.seed);
  if (param.examples.has_value()) absl::StrAppend(&command, " --examples ", *param.examples);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  HB_ASSERT_OK_AND_ASSIGN(const std::string reference_text, ReadFile(out));
  rapidjson::Document reference;
  reference.Parse<rapidjson::kParseFullPrecisionFlag>(reference_text.c_str());
  ASSERT_FALSE(reference.HasParseError());

  HB_ASSERT_OK_AND_ASSIGN(MetaEvalDataset dataset, LoadMetaEvalDataset(data));
  const std::vector<std::optional<bool>> all_verdicts = SyntheticVerdicts();
  ASSERT_EQ(all_verdicts.size(), dataset.rows.size());
  if (param.examples.has_value()) SelectMetaEvalRows(dataset, *param.examples);

  // The selection, as 0-based file indices in sample order.
  const rapidjson::Value& selection = reference["selection"];
  ASSERT_EQ(selection.Size(), dataset.rows.size());
  std::vector<std::optional<bool>> verdicts;
  for (rapidjson::SizeType i = 0; i < selection.Size(); ++i) {
    EXPECT_EQ(dataset.rows[i].line - 1, selection[i].GetInt()) << "row " << i;
    verdicts.push_back(all_verdicts[static_cast<size_t>(dataset.rows[i].line - 1)]);
  }

  // Every grader prompt, byte for byte.
  HB_ASSERT_OK_AND_ASSIGN(const GraderTemplate tmpl, GraderTemplate::Load(tmpl_path));
  const rapidjson::Value& prompts = reference["prompts"];
  ASSERT_EQ(prompts.Size(), dataset.rows.size());
  for (rapidjson::SizeType i = 0; i < prompts.Size(); ++i) {
    EXPECT_EQ(MetaEvalGraderPrompt(tmpl, dataset.rows[i]),
              std::string(prompts[i].GetString(), prompts[i].GetStringLength()))
        << "line " << dataset.rows[i].line;
  }

  // The document, value for value.
  MetaEvalOptions options;
  options.seed = param.seed;
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalResult result,
                          ComputeMetaEval(dataset.rows, verdicts, options));
  const std::string ours_text = MetaEvalJson(result);
  rapidjson::Document ours;
  ours.Parse<rapidjson::kParseFullPrecisionFlag>(ours_text.c_str());
  ASSERT_FALSE(ours.HasParseError()) << ours_text;
  ExpectSameJson(ours, reference["document"], "meta_eval.json");
}

INSTANTIATE_TEST_SUITE_P(Synthetic, MetaEvalCrossCheckTest,
                         ::testing::Values(CrossCheckCase{std::nullopt, 0},
                                           CrossCheckCase{std::nullopt, 42}, CrossCheckCase{30, 0},
                                           CrossCheckCase{5, 7}));

// The synthetic file reaches the branches it claims to (make_meta_eval_synthetic.py).
TEST(MetaEvalTest, SyntheticFileCoversEveryBranch) {
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalDataset dataset,
                          LoadMetaEvalDataset(TestData("meta_eval_synthetic.jsonl")));
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalResult result,
                          ComputeMetaEval(dataset.rows, SyntheticVerdicts(), {}));
  EXPECT_THAT(result.failed_lines, ElementsAre(10, 23, 41));
  EXPECT_EQ(result.graded, 45);
  // A category whose grader and physicians only ever say true: pos keys, no neg twin, so no
  // F1 neg and no balanced value.
  const std::string plain = "cluster:communication_plain_language: pairwise_model_";
  EXPECT_EQ(result.metrics.count(plain + "f1_pos"), 1U);
  EXPECT_EQ(result.metrics.count(plain + "precision_neg"), 0U);
  EXPECT_EQ(result.metrics.count(plain + "f1_balanced"), 0U);
  // F1 counts are Python floats (n_p + n_r - p * n_p), precision counts ints.
  EXPECT_TRUE(result.model_agreement.at("pairwise_model_f1_pos").n_is_float);
  EXPECT_TRUE(result.model_agreement.at("pairwise_model_f1_balanced").n_is_float);
  EXPECT_FALSE(result.model_agreement.at("pairwise_model_precision_pos").n_is_float);
  // phys-solo only labels alone: no agreement of its own; the 7 others have some.
  const auto& f1 = result.physician_agreement.at("pairwise_physician_f1_balanced");
  EXPECT_EQ(f1.count("phys-solo"), 0U);
  EXPECT_THAT(f1, SizeIs(7));
  EXPECT_EQ(result.physician_summary.at("pairwise_physician_f1_balanced").physicians, 7);
  ASSERT_TRUE(result.score.has_value());
  EXPECT_EQ(*result.score, result.metrics.at("pairwise_model_f1_balanced").value);
}

// A row whose grading failed is reported, and is never a label: the result equals the one
// computed without that row, except for the failure report and the physicians' agreement
// (which uses every row, as it does not depend on the grader).
TEST(MetaEvalTest, FailedRowIsReportedNeverCounted) {
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalDataset dataset,
                          LoadMetaEvalDataset(TestData("meta_eval_synthetic.jsonl")));
  std::vector<std::optional<bool>> verdicts(dataset.rows.size(), true);
  for (size_t i = 0; i < verdicts.size(); i += 2) verdicts[i] = false;
  verdicts[4] = std::nullopt;
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalResult with_failure,
                          ComputeMetaEval(dataset.rows, verdicts, {}));
  EXPECT_THAT(with_failure.failed_lines, ElementsAre(5));
  EXPECT_EQ(with_failure.graded, static_cast<int64_t>(dataset.rows.size()) - 1);
  EXPECT_EQ(with_failure.metrics.at("num_physician_labels:n_samples").value,
            static_cast<double>(dataset.rows.size() - 1));

  std::vector<MetaEvalRow> rows = dataset.rows;
  rows.erase(rows.begin() + 4);
  std::vector<std::optional<bool>> rest = verdicts;
  rest.erase(rest.begin() + 4);
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalResult without_row, ComputeMetaEval(rows, rest, {}));
  ASSERT_EQ(with_failure.metrics.size(), without_row.metrics.size());
  for (const auto& [key, metric] : without_row.metrics) {
    EXPECT_EQ(with_failure.metrics.at(key).value, metric.value) << key;
  }
  EXPECT_EQ(with_failure.score, without_row.score);
  // A failed row counted as either label would change the model's agreement.
  for (const bool as_label : {false, true}) {
    std::vector<std::optional<bool>> counted = verdicts;
    counted[4] = as_label;
    HB_ASSERT_OK_AND_ASSIGN(const MetaEvalResult result,
                            ComputeMetaEval(dataset.rows, counted, {}));
    EXPECT_NE(result.model_agreement.at("pairwise_model_precision_pos").n +
                  result.model_agreement.at("pairwise_model_precision_neg").n,
              with_failure.model_agreement.at("pairwise_model_precision_pos").n +
                  with_failure.model_agreement.at("pairwise_model_precision_neg").n);
  }
  // The physicians are the same either way.
  HB_ASSERT_OK_AND_ASSIGN(
      const MetaEvalResult none_failed,
      ComputeMetaEval(dataset.rows, std::vector<std::optional<bool>>(dataset.rows.size(), true),
                      {}));
  EXPECT_EQ(with_failure.physician_summary.size(), none_failed.physician_summary.size());
  for (const auto& [key, summary] : none_failed.physician_summary) {
    EXPECT_EQ(with_failure.physician_summary.at(key).mean, summary.mean) << key;
  }
  EXPECT_THAT(MetaEvalJson(with_failure),
              HasSubstr("\"failed_rows\": [\n    {\n      \"line\": 5\n"));
}

TEST(MetaEvalTest, EveryRowFailedGivesNoScore) {
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalDataset dataset,
                          LoadMetaEvalDataset(TestData("meta_eval_synthetic.jsonl")));
  HB_ASSERT_OK_AND_ASSIGN(
      const MetaEvalResult result,
      ComputeMetaEval(dataset.rows,
                      std::vector<std::optional<bool>>(dataset.rows.size(), std::nullopt), {}));
  EXPECT_FALSE(result.score.has_value());
  EXPECT_TRUE(result.metrics.empty());
  EXPECT_TRUE(result.model_agreement.empty());
  EXPECT_THAT(result.failed_lines, SizeIs(dataset.rows.size()));
  EXPECT_FALSE(result.physician_summary.empty());
  EXPECT_THAT(MetaEvalJson(result), HasSubstr("\"score\": null\n}\n"));
}

TEST(MetaEvalTest, RejectsMismatchedInput) {
  MetaEvalRow row;
  row.line = 7;
  row.category = "c";
  row.binary_labels = {true, false};
  row.physician_ids = {"a"};
  EXPECT_THAT(ComputeMetaEval({row}, {true}, {}),
              hb::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("row on line 7: 2 binary_labels and 1 "
                                              "anonymized_physician_ids")));
  row.physician_ids = {"a", "b"};
  EXPECT_THAT(ComputeMetaEval({row}, {}, {}),
              hb::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("0 verdicts for 1 rows")));
}

}  // namespace
}  // namespace hb
