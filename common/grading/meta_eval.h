// Meta-eval agreement metrics (SPEC §15), as in the reference's
// compute_metrics_for_rater_by_class: pairwise precision/recall of one rater's labels against
// every other label of the same row, per class, with F1 and balanced (macro) variants.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace hb
