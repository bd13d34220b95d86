// compute_metrics_for_rater_by_class of the reference's meta-eval (SPEC §15), with the key
// twins (precision -> recall / f1, pos -> neg / balanced) derived from the key's structure
// instead of by substring replacement over the whole key. On every key the reference can
// produce without a "pos"/"precision" inside a cluster or role name, the two agree.
//
// Numerics follow Python: a list's value is np.mean of booleans (an exact count over n), the
// F1 is 2 * p * r / (p + r) (0.0 when p + r == 0), its n is n_p + n_r - p * n_p (a float), a
// balanced value is (pos + neg) / 2 and its n is n_pos + n_neg (a float when either is).
#include "common/grading/meta_eval.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace hb {
namespace {

// (cluster or "" for the overall scope, is-cluster, metric, class)
using Slot = std::tuple<bool, std::string, std::string, std::string>;

std::string KeyOf(const Slot& slot, const std::string& role) {
  const auto& [scoped, cluster, metric, cls] = slot;
  return absl::StrCat(scoped ? absl::StrCat(cluster, ": ") : "", "pairwise_", role, "_", metric,
                      "_", cls);
}

}  // namespace

std::map<std::string, AgreementMetric> ComputeAgreementForRaterByClass(
    const std::vector<bool>& self_labels, const std::vector<std::vector<bool>>& other_labels,
    const std::vector<std::string>& clusters, const std::string& rater_role) {
  // The reference zips the three lists: the shortest decides.
  const size_t rows = std::min({self_labels.size(), other_labels.size(), clusters.size()});
  std::map<Slot, std::pair<int64_t, int64_t>> lists;  // slot -> (count true, n)
  const auto add = [&](const std::string& cluster, const std::string& metric,
                       const std::string& cls, bool agree) {
    for (const bool scoped : {false, true}) {
      auto& [agreed, n] = lists[Slot{scoped, scoped ? cluster : "", metric, cls}];
      agreed += agree ? 1 : 0;
      ++n;
    }
  };
  for (size_t row = 0; row < rows; ++row) {
    const bool self = self_labels[row];
    for (const bool other : other_labels[row]) {
      add(clusters[row], "precision", self ? "pos" : "neg", self == other);
      add(clusters[row], "recall", other ? "pos" : "neg", self == other);
    }
  }

  std::map<Slot, AgreementMetric> metrics;
  for (const auto& [slot, counts] : lists) {
    AgreementMetric& m = metrics[slot];
    m.n = static_cast<double>(counts.second);
    m.value = static_cast<double>(counts.first) / static_cast<double>(counts.second);
  }

  // F1 wherever a precision list has its recall twin.
  std::map<Slot, AgreementMetric> f1s;
  for (const auto& [slot, precision] : metrics) {
    const auto& [scoped, cluster, metric, cls] = slot;
    if (metric != "precision") continue;
    const auto recall_it = metrics.find(Slot{scoped, cluster, "recall", cls});
    if (recall_it == metrics.end()) continue;
    const AgreementMetric& recall = recall_it->second;
    AgreementMetric f1;
    if (!precision.value.has_value() || !recall.value.has_value()) {
      f1.n = precision.n + recall.n;
      f1.n_is_float = precision.n_is_float || recall.n_is_float;
    } else {
      const double p = *precision.value;
      const double r = *recall.value;
      f1.value = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
      f1.n = precision.n + recall.n - p * precision.n;
      f1.n_is_float = true;
    }
    f1s[Slot{scoped, cluster, "f1", cls}] = f1;
  }
  metrics.insert(f1s.begin(), f1s.end());

  // Balanced (macro) values wherever a pos entry has its neg twin.
  std::map<Slot, AgreementMetric> balanced;
  for (const auto& [slot, pos] : metrics) {
    const auto& [scoped, cluster, metric, cls] = slot;
    if (cls != "pos") continue;
    const auto neg_it = metrics.find(Slot{scoped, cluster, metric, "neg"});
    if (neg_it == metrics.end()) continue;
    const AgreementMetric& neg = neg_it->second;
    AgreementMetric b;
    if (pos.value.has_value() && neg.value.has_value()) b.value = (*pos.value + *neg.value) / 2;
    b.n = pos.n + neg.n;
    b.n_is_float = pos.n_is_float || neg.n_is_float;
    balanced[Slot{scoped, cluster, metric, "balanced"}] = b;
  }
  metrics.insert(balanced.begin(), balanced.end());

  std::map<std::string, AgreementMetric> out;
  for (const auto& [slot, metric] : metrics) out[KeyOf(slot, rater_role)] = metric;
  return out;
}

}  // namespace hb
