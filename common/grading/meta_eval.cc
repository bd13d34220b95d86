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
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/base/json_io.h"
#include "common/grading/scoring.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"

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

namespace {

// The per-row metrics of the reference's grade_sample, in its insertion order: the three
// values, then the same under "<category>: ". The row's score (its verdict) follows them in
// Aggregate, as SingleEvalResult.score does in aggregate_results.
OrderedMetrics RowMetrics(const MetaEvalRow& row, bool verdict) {
  const double labels = static_cast<double>(row.binary_labels.size());
  const double positive =
      static_cast<double>(std::count(row.binary_labels.begin(), row.binary_labels.end(), true));
  const OrderedMetrics base = {{"num_physician_labels", labels},
                               {"percent_physician_pos", positive / labels},
                               {"model_predicted_positive", verdict ? 1.0 : 0.0}};
  OrderedMetrics out = base;
  for (const auto& [name, value] : base)
    out.emplace_back(absl::StrCat(row.category, ": ", name), value);
  return out;
}

// Each physician's labels against the other labels of the same rows, as the reference builds
// physician_rating_lists (physicians in order of their first row).
void AddPhysicianAgreement(const std::vector<MetaEvalRow>& rows, MetaEvalResult& result) {
  struct Ratings {
    std::vector<bool> own;
    std::vector<std::vector<bool>> others;
    std::vector<std::string> categories;
  };
  std::vector<std::string> order;
  absl::flat_hash_map<std::string, Ratings> by_physician;
  for (const MetaEvalRow& row : rows) {
    for (size_t i = 0; i < row.binary_labels.size(); ++i) {
      auto [it, inserted] = by_physician.try_emplace(row.physician_ids[i]);
      if (inserted) order.push_back(row.physician_ids[i]);
      Ratings& ratings = it->second;
      ratings.own.push_back(row.binary_labels[i]);
      std::vector<bool> others = row.binary_labels;
      others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
      ratings.others.push_back(std::move(others));
      ratings.categories.push_back(row.category);
    }
  }
  // metric key -> the physicians' values, in physician order (numpy sums in that order).
  std::map<std::string, std::vector<double>> values;
  for (const std::string& physician : order) {
    const Ratings& ratings = by_physician.at(physician);
    for (auto& [key, metric] : ComputeAgreementForRaterByClass(ratings.own, ratings.others,
                                                               ratings.categories, "physician")) {
      if (metric.value.has_value()) values[key].push_back(*metric.value);
      result.physician_agreement[key][physician] = metric;
    }
  }
  for (const auto& [key, list] : values) {
    PhysicianAgreementSummary& summary = result.physician_summary[key];
    summary.mean = NumpyMean(list);
    summary.min = *std::min_element(list.begin(), list.end());
    summary.max = *std::max_element(list.begin(), list.end());
    summary.physicians = static_cast<int64_t>(list.size());
  }
}

// WritePythonFloat, or null for Python's None.
template <typename Writer>
void WriteOptionalPythonFloat(Writer& writer, const std::optional<double>& value) {
  if (value.has_value()) {
    WritePythonFloat(writer, *value);
  } else {
    writer.Null();
  }
}

template <typename Writer>
void WriteAgreement(Writer& writer, const AgreementMetric& metric) {
  writer.StartObject();
  writer.Key("n");
  if (metric.n_is_float) {
    WritePythonFloat(writer, metric.n);
  } else {
    writer.Int64(static_cast<int64_t>(metric.n));
  }
  writer.Key("value");
  WriteOptionalPythonFloat(writer, metric.value);
  writer.EndObject();
}

}  // namespace

absl::StatusOr<MetaEvalResult> ComputeMetaEval(const std::vector<MetaEvalRow>& rows,
                                               const std::vector<std::optional<bool>>& verdicts,
                                               const MetaEvalOptions& options) {
  if (rows.size() != verdicts.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("meta-eval: ", verdicts.size(), " verdicts for ", rows.size(), " rows"));
  }
  for (const MetaEvalRow& row : rows) {
    if (row.binary_labels.empty() || row.binary_labels.size() != row.physician_ids.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("meta-eval row on line ", row.line, ": ", row.binary_labels.size(),
                       " binary_labels and ", row.physician_ids.size(),
                       " anonymized_physician_ids (expected one id per label, at least one)"));
    }
  }

  MetaEvalResult result;
  result.rows = static_cast<int64_t>(rows.size());
  std::vector<OrderedMetrics> per_row;
  std::vector<bool> model_labels;
  std::vector<std::vector<bool>> physician_labels;
  std::vector<std::string> categories;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!verdicts[i].has_value()) {
      result.failed_lines.push_back(rows[i].line);
      continue;
    }
    per_row.push_back(RowMetrics(rows[i], *verdicts[i]));
    model_labels.push_back(*verdicts[i]);
    physician_labels.push_back(rows[i].binary_labels);
    categories.push_back(rows[i].category);
  }
  result.graded = static_cast<int64_t>(per_row.size());

  // common.aggregate_results(default_stats=("mean", "n_samples", "bootstrap_std")).
  AggregateOptions aggregate;
  aggregate.bootstrap_samples = options.bootstrap_samples;
  aggregate.seed = options.seed;
  aggregate.clip_means = false;
  aggregate.score_key = "model_predicted_positive";
  for (const MetricSummary& m : Aggregate(per_row, aggregate).metrics) {
    if (m.name != "score") result.metrics[m.name] = MetaEvalMetric{m.mean, false};
    result.metrics[m.name + ":n_samples"] = MetaEvalMetric{static_cast<double>(m.n_samples), true};
    result.metrics[m.name + ":bootstrap_std"] = MetaEvalMetric{m.bootstrap_std, false};
  }

  result.model_agreement =
      ComputeAgreementForRaterByClass(model_labels, physician_labels, categories, "model");
  for (const auto& [key, metric] : result.model_agreement) {
    if (metric.value.has_value()) result.metrics[key] = MetaEvalMetric{*metric.value, false};
  }
  if (const auto it = result.model_agreement.find("pairwise_model_f1_balanced");
      it != result.model_agreement.end()) {
    result.score = it->second.value;
  }
  AddPhysicianAgreement(rows, result);
  return result;
}

std::string MetaEvalJson(const MetaEvalResult& result) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  writer.StartObject();
  writer.Key("failed_rows");
  writer.StartArray();
  for (const int line : result.failed_lines) {
    writer.StartObject();
    writer.Key("line");
    writer.Int(line);
    writer.EndObject();
  }
  writer.EndArray();
  writer.Key("metrics");
  writer.StartObject();
  for (const auto& [key, metric] : result.metrics) {
    WriteJsonString(writer, key);
    if (metric.integral) {
      writer.Int64(static_cast<int64_t>(metric.value));
    } else {
      WritePythonFloat(writer, metric.value);
    }
  }
  writer.EndObject();
  writer.Key("model_agreement_metrics");
  writer.StartObject();
  for (const auto& [key, metric] : result.model_agreement) {
    WriteJsonString(writer, key);
    WriteAgreement(writer, metric);
  }
  writer.EndObject();
  writer.Key("physician_agreement_metric_lists");
  writer.StartObject();
  for (const auto& [key, by_physician] : result.physician_agreement) {
    WriteJsonString(writer, key);
    writer.StartObject();
    for (const auto& [physician, metric] : by_physician) {
      WriteJsonString(writer, physician);
      WriteAgreement(writer, metric);
    }
    writer.EndObject();
  }
  writer.EndObject();
  writer.Key("physician_agreement_summary");
  writer.StartObject();
  for (const auto& [key, summary] : result.physician_summary) {
    WriteJsonString(writer, key);
    writer.StartObject();
    writer.Key("max");
    WritePythonFloat(writer, summary.max);
    writer.Key("mean");
    WritePythonFloat(writer, summary.mean);
    writer.Key("min");
    WritePythonFloat(writer, summary.min);
    writer.Key("physicians");
    writer.Int64(summary.physicians);
    writer.EndObject();
  }
  writer.EndObject();
  writer.Key("rows");
  writer.StartObject();
  writer.Key("failed");
  writer.Int64(static_cast<int64_t>(result.failed_lines.size()));
  writer.Key("graded");
  writer.Int64(result.graded);
  writer.Key("selected");
  writer.Int64(result.rows);
  writer.EndObject();
  writer.Key("score");
  WriteOptionalPythonFloat(writer, result.score);
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace hb
