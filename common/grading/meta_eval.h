// The reference's meta-eval metrics (SPEC §15): how a grader's verdicts on the meta-eval rows
// agree with the physicians' labels, and how each physician agrees with the others.
//
//   ComputeAgreementForRaterByClass: the reference's compute_metrics_for_rater_by_class,
//     pairwise precision/recall of one rater's labels against every other label of the same
//     row, per class, with F1 and balanced (macro) variants.
//   ComputeMetaEval: everything the reference's meta-eval reports, from the rows and the
//     grader's verdict on each; MetaEvalJson: the meta_eval.json document.
// Verified value for value against the reference by tests/common/grading/meta_eval_test.cc
// through scripts/reference/meta_eval_reference.py.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/healthbench/types.h"

namespace hb {

struct AgreementMetric {
  // Count of entries. F1 counts are floats in the reference (n_p + n_r - p*n_p); `n_is_float`
  // says which, so reports can print "5.0" vs "5".
  double n = 0;
  bool n_is_float = false;
  // std::nullopt when the list was empty (the reference's None).
  std::optional<double> value;
};

// Keys: "pairwise_<role>_<precision|recall|f1>_<pos|neg|balanced>" and the same prefixed with
// "<cluster>: ". Only the suffix is rewritten when deriving twins (a cluster name containing
// "pos" or "precision" is safe; a deliberate fix of the reference's substring rewrite, which
// the official data never triggers). Sizes of the three inputs must match.
std::map<std::string, AgreementMetric> ComputeAgreementForRaterByClass(
    const std::vector<bool>& self_labels, const std::vector<std::vector<bool>>& other_labels,
    const std::vector<std::string>& clusters, const std::string& rater_role);

// One entry of the reference's metrics map: ":n_samples" counts are integers (Python ints),
// everything else a float.
struct MetaEvalMetric {
  double value = 0;
  bool integral = false;
};

// One metric over the physicians who have it (the project's addition beside the reference's
// per-physician lists): numpy's mean of their values, in order of each physician's first row,
// their min and max, and how many there are.
struct PhysicianAgreementSummary {
  double mean = 0;
  double min = 0;
  double max = 0;
  int64_t physicians = 0;
};

struct MetaEvalResult {
  // pairwise_model_f1_balanced; std::nullopt when it does not exist (no graded row, or the
  // grader or the physicians never said one of true/false: the reference raises KeyError).
  std::optional<double> score;
  // Exactly the reference's metrics (its JSON file minus "score"): per-row means of
  // num_physician_labels, percent_physician_pos and model_predicted_positive, each with
  // ":n_samples" and ":bootstrap_std" and again as "<category>: <name>", plus
  // "score:n_samples" and "score:bootstrap_std" (the row score is the verdict: SPEC §9 quirk),
  // plus every model agreement value that is not None.
  std::map<std::string, MetaEvalMetric> metrics;
  // The reference's metadata: the model's agreement with n, and each physician's agreement
  // (metric key -> physician id -> {n, value}).
  std::map<std::string, AgreementMetric> model_agreement;
  std::map<std::string, std::map<std::string, AgreementMetric>> physician_agreement;
  // metric key -> summary over the physicians (keys as in physician_agreement).
  std::map<std::string, PhysicianAgreementSummary> physician_summary;
  int64_t rows = 0;
  // The rows with a verdict; the others failed: their `line`s, in row order.
  int64_t graded = 0;
  std::vector<int> failed_lines;
};

struct MetaEvalOptions {
  int bootstrap_samples = 1000;
  // numpy legacy seed for the bootstrap (the reference's is unseeded; see scoring.h).
  uint32_t seed = 0;
};

// The reference's meta-eval over `rows` (in the order it grades them, i.e. after the
// `--examples` selection) with `verdicts[i]` the grader's criteria_met on rows[i], or
// std::nullopt when grading the row failed. A failed row is left out of the per-row means and
// of the model's agreement (it is never a label) and listed in failed_lines; the physicians'
// agreement uses every row (it does not depend on the grader). kInvalidArgument when the sizes
// differ or a row's labels are empty or not one per physician id (naming the row's line).
absl::StatusOr<MetaEvalResult> ComputeMetaEval(const std::vector<MetaEvalRow>& rows,
                                               const std::vector<std::optional<bool>>& verdicts,
                                               const MetaEvalOptions& options);

// The meta_eval.json document: {"score", "metrics", "model_agreement_metrics",
// "physician_agreement_metric_lists", "physician_agreement_summary", "rows": {selected, graded,
// failed}, "failed_rows": [{"line"}]}, keys sorted, indented by 2, floats printed as Python's
// repr (as the reference's json.dumps writes them), counts that are Python ints as integers,
// a missing score as null.
std::string MetaEvalJson(const MetaEvalResult& result);

}  // namespace hb
