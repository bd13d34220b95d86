#include "common/grading/meta_eval.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

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

}  // namespace
}  // namespace hb
