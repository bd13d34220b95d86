// Scoring as the reference's calculate_score / grade_sample, and aggregation as its
// _aggregate_get_clipped_mean / _compute_clipped_stats, down to numpy's last bit:
//  * numpy 1.24 legacy RandomState: MT19937 seeded by init_genrand; randint(0, n) draws
//    `next_uint32() & mask` until the value is <= n - 1 (mask = smallest 2^k - 1 >= n - 1), and
//    consumes nothing when n == 1. np.random.choice(values, n) is exactly randint(0, n, size=n).
//  * np.add.reduce over a contiguous float64 array: the iterator hands the inner loop blocks of
//    at most 8192 elements (the default buffer size); each block is summed by numpy's
//    pairwise_sum and the block sums are added left to right onto the identity 0.0.
//  * np.mean = sum / n; np.std (ddof 0) = sqrt(sum((x - mean)^2) / n); np.clip(x, 0, 1) =
//    min(max(x, 0), 1) with NaN passing through.
// Verified against numpy by tests/common/grading/scoring_test.cc through
// scripts/reference/aggregate_reference.py.
#include "common/grading/scoring.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace hb {
namespace {

constexpr size_t kNumpyBufferSize = 8192;  // np.getbufsize()
constexpr size_t kPairwiseBlock = 128;     // PW_BLOCKSIZE in numpy's loops_utils.h

// numpy's @TYPE@_pairwise_sum for a contiguous double array.
double PairwiseSum(const double* a, size_t n) {
  if (n < 8) {
    double res = 0.;
    for (size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= kPairwiseBlock) {
    double r[8];
    for (size_t k = 0; k < 8; ++k) r[k] = a[k];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (size_t k = 0; k < 8; ++k) r[k] += a[i + k];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return PairwiseSum(a, n2) + PairwiseSum(a + n2, n - n2);
}

// np.add.reduce of a 1-D contiguous float64 array.
double NumpySum(const double* a, size_t n) {
  double sum = 0.0;
  for (size_t start = 0; start < n; start += kNumpyBufferSize) {
    sum += PairwiseSum(a + start, std::min(kNumpyBufferSize, n - start));
  }
  return sum;
}

// np.clip(x, 0, 1) for a float64 scalar: _NPY_MIN(_NPY_MAX(x, 0), 1), NaN-propagating.
double NumpyClip01(double x) {
  if (std::isnan(x)) return x;
  const double lo = x > 0.0 ? x : 0.0;
  return lo < 1.0 ? lo : 1.0;
}

double ClippedMeanOf(const double* a, size_t n) {
  return NumpyClip01(NumpySum(a, n) / static_cast<double>(n));
}

// CalculateScore over the items at `group` (ascending indices), summing in the same order as
// CalculateScore over copies of those items would, so the result is bit-identical.
std::optional<double> ScoreOfGroup(const std::vector<RubricItem>& items,
                                   const std::vector<bool>& met, const std::vector<size_t>& group) {
  double possible = 0;
  for (size_t i : group) {
    if (items[i].points > 0) possible += items[i].points;
  }
  if (possible == 0) return std::nullopt;
  double achieved = 0;
  for (size_t i : group) {
    if (met[i]) achieved += items[i].points;
  }
  return achieved / possible;
}

// A Python dict over an insertion-ordered vector: assignment overwrites in place, a new key is
// appended. The index makes each assignment O(1) (a linear search made many tags quadratic).
class MetricsBuilder {
 public:
  void Set(const std::string& key, double value) {
    auto [it, inserted] = index_.try_emplace(key, metrics_.size());
    if (inserted) {
      metrics_.emplace_back(key, value);
    } else {
      metrics_[it->second].second = value;
    }
  }
  OrderedMetrics Take() && { return std::move(metrics_); }

 private:
  OrderedMetrics metrics_;
  absl::flat_hash_map<std::string, size_t> index_;
};

// numpy's linear-interpolation percentile of `sorted` (ascending), q in [0, 100].
double NumpyLinearPercentile(const std::vector<double>& sorted, double q) {
  const size_t n = sorted.size();
  const double virtual_index = static_cast<double>(n - 1) * (q / 100.0);
  double previous_index = std::floor(virtual_index);
  size_t previous;
  size_t next;
  if (virtual_index >= static_cast<double>(n - 1)) {
    previous = next = n - 1;
  } else if (virtual_index < 0) {
    previous = next = 0;
  } else {
    previous = static_cast<size_t>(previous_index);
    next = previous + 1;
  }
  const double gamma = virtual_index - previous_index;
  const double a = sorted[previous];
  const double b = sorted[next];
  const double diff_b_a = b - a;
  // numpy's _lerp: a + diff * t, replaced by b - diff * (1 - t) where t >= 0.5.
  return gamma >= 0.5 ? b - diff_b_a * (1 - gamma) : a + diff_b_a * gamma;
}

}  // namespace

namespace {

// numpy's rejection mask: the smallest 2^k - 1 >= rng.
uint32_t RejectionMask(uint32_t rng) {
  uint32_t mask = rng;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  return mask;
}

}  // namespace

NumpyRandomState::NumpyRandomState(uint32_t seed) {
  // init_genrand.
  state_[0] = seed;
  for (uint32_t i = 1; i < kWords; ++i) {
    state_[i] = 1812433253U * (state_[i - 1] ^ (state_[i - 1] >> 30)) + i;
  }
}

void NumpyRandomState::Generate() {
  // MT19937's twist (Matsumoto & Nishimura, genrand_int32), branch-free.
  constexpr size_t kShift = 397;
  constexpr uint32_t kUpper = 0x80000000U;
  constexpr uint32_t kLower = 0x7fffffffU;
  constexpr uint32_t kMatrix = 0x9908b0dfU;
  uint32_t* mt = state_.data();
  auto twist = [](uint32_t y, uint32_t far) {
    return far ^ (y >> 1) ^ ((0U - (y & 1U)) & kMatrix);
  };
  size_t k = 0;
  for (; k < kWords - kShift; ++k) {
    mt[k] = twist((mt[k] & kUpper) | (mt[k + 1] & kLower), mt[k + kShift]);
  }
  for (; k < kWords - 1; ++k) {
    mt[k] = twist((mt[k] & kUpper) | (mt[k + 1] & kLower), mt[k + kShift - kWords]);
  }
  mt[kWords - 1] = twist((mt[kWords - 1] & kUpper) | (mt[0] & kLower), mt[kShift - 1]);
  for (size_t i = 0; i < kWords; ++i) {
    uint32_t y = mt[i];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= y >> 18;
    out_[i] = y;
  }
  next_ = 0;
}

uint64_t NumpyRandomState::RandInt(uint64_t high) {
  const uint64_t rng = high - 1;  // the closed upper bound
  if (rng == 0) return 0;         // no draw is consumed
  if (rng == 0xFFFFFFFFULL) return NextUint32();
  const uint32_t mask = RejectionMask(static_cast<uint32_t>(rng));
  uint32_t value;
  while ((value = (NextUint32() & mask)) > rng) {
  }
  return value;
}

void NumpyRandomState::RandInts(uint64_t high, uint32_t* out, size_t count) {
  const uint64_t rng = high - 1;
  if (rng == 0 || rng == 0xFFFFFFFFULL) {
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<uint32_t>(RandInt(high));
    return;
  }
  const uint32_t bound = static_cast<uint32_t>(rng);
  const uint32_t mask = RejectionMask(bound);
  size_t filled = 0;
  while (filled < count) {
    if (next_ == kWords) Generate();
    size_t at = next_;
    // Every output is written; only an accepted one advances `filled` (a rejected one is
    // overwritten by the next), exactly as RandInt's loop consumes them.
    while (filled < count && at < kWords) {
      const uint32_t value = out_[at++] & mask;
      out[filled] = value;
      filled += value <= bound ? 1 : 0;
    }
    next_ = at;
  }
}

double NumpyMean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  return NumpySum(values.data(), values.size()) / static_cast<double>(values.size());
}

double NumpyStd(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(values.size());
  const double mean = NumpySum(values.data(), values.size()) / n;
  std::vector<double> squares(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double d = values[i] - mean;
    squares[i] = d * d;
  }
  return std::sqrt(NumpySum(squares.data(), squares.size()) / n);
}

double BootstrapStd(const std::vector<double>& values, int samples, NumpyRandomState& rng,
                    bool clip) {
  const size_t n = values.size();
  if (n == 0 || samples <= 0) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> resample(n);
  std::vector<uint32_t> picks(n);
  std::vector<double> means(static_cast<size_t>(samples));
  for (double& mean : means) {
    rng.RandInts(n, picks.data(), n);
    for (size_t i = 0; i < n; ++i) resample[i] = values[picks[i]];
    mean = clip ? ClippedMeanOf(resample.data(), n)
                : NumpySum(resample.data(), n) / static_cast<double>(n);
  }
  return NumpyStd(means);
}

std::optional<double> CalculateScore(const std::vector<RubricItem>& items,
                                     const std::vector<bool>& met) {
  // Python's sum(): left to right from 0.
  double possible = 0;
  for (const RubricItem& item : items) {
    if (item.points > 0) possible += item.points;
  }
  if (possible == 0) return std::nullopt;
  double achieved = 0;
  const size_t n = std::min(items.size(), met.size());  // zip()
  for (size_t i = 0; i < n; ++i) {
    if (met[i]) achieved += items[i].points;
  }
  return achieved / possible;
}

absl::StatusOr<OrderedMetrics> ScoreTask(const std::string& prompt_id,
                                         const std::vector<std::string>& example_tags,
                                         const std::vector<RubricItem>& items,
                                         const std::vector<bool>& met) {
  if (items.size() != met.size()) {
    return absl::InvalidArgumentError(absl::StrCat("task ", prompt_id, ": ", items.size(),
                                                   " rubric items but ", met.size(), " grades"));
  }
  const std::optional<double> overall = CalculateScore(items, met);
  if (!overall.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", prompt_id, ": no rubric item has positive points"));
  }
  MetricsBuilder metrics;
  metrics.Set("overall_score", *overall);
  absl::flat_hash_set<absl::string_view> seen_example_tags;
  for (const std::string& tag : example_tags) {
    if (!seen_example_tags.insert(tag).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", prompt_id, ": duplicate example tag '", tag, "'"));
    }
    metrics.Set(tag, *overall);
  }

  // Rubric tags in order of first appearance, each with the indices of its items (never copies
  // of them: an item with many tags would be copied once per tag).
  std::vector<absl::string_view> tag_order;
  absl::flat_hash_map<absl::string_view, std::vector<size_t>> groups;
  absl::flat_hash_set<absl::string_view> item_tags;
  for (size_t i = 0; i < items.size(); ++i) {
    item_tags.clear();
    for (const std::string& tag : items[i].tags) {
      if (!item_tags.insert(tag).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("task ", prompt_id, ": rubric item ", i, " repeats tag '", tag, "'"));
      }
      auto [it, inserted] = groups.try_emplace(tag);
      if (inserted) tag_order.push_back(tag);
      it->second.push_back(i);
    }
  }
  for (absl::string_view tag : tag_order) {
    if (const std::optional<double> score = ScoreOfGroup(items, met, groups.at(tag))) {
      metrics.Set(std::string(tag), *score);
    }
  }
  return std::move(metrics).Take();
}

int64_t PythonStrLen(std::string_view utf8) {
  int64_t n = 0;
  for (const char c : utf8) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

double LengthAdjustedScore(double score, std::string_view reply,
                           const LengthAdjustment& adjustment) {
  // int - float -> float, then / 500.0, then * penalty, then score - that.
  const double offset = (static_cast<double>(PythonStrLen(reply)) - adjustment.center) / 500.0;
  return score - adjustment.penalty_per_500_chars * offset;
}

absl::Status AddLengthAdjustedScore(std::string_view reply, const LengthAdjustment& adjustment,
                                    OrderedMetrics& task) {
  if (task.empty() || task.front().first != "overall_score") {
    return absl::InvalidArgumentError(
        "length adjustment needs a task's metrics starting with overall_score");
  }
  const double adjusted = LengthAdjustedScore(task.front().second, reply, adjustment);
  task.insert(task.begin() + 1, {kLengthAdjustedScoreKey, adjusted});
  return absl::OkStatus();
}

const MetricSummary* FindMetric(const std::vector<MetricSummary>& metrics, std::string_view name) {
  for (const MetricSummary& metric : metrics) {
    if (metric.name == name) return &metric;
  }
  return nullptr;
}

AggregateResult Aggregate(const std::vector<OrderedMetrics>& tasks,
                          const AggregateOptions& options) {
  std::vector<std::string> order;
  absl::flat_hash_map<std::string, std::vector<double>> values;
  const auto add = [&](const std::string& name, double value) {
    auto [it, inserted] = values.try_emplace(name);
    if (inserted) order.push_back(name);
    it->second.push_back(value);
  };
  for (const OrderedMetrics& task : tasks) {
    const double* overall = nullptr;
    for (const auto& [name, value] : task) {
      add(name, value);
      if (name == options.score_key) overall = &value;
    }
    // SingleEvalResult.score = metrics[score_key].
    if (overall != nullptr) add("score", *overall);
  }

  // One RandomState for the whole run, consumed key by key (np.random.seed, then the calls).
  NumpyRandomState rng(options.seed);
  AggregateResult result;
  for (const std::string& name : order) {
    const std::vector<double>& v = values.at(name);
    MetricSummary summary;
    summary.name = name;
    summary.mean = options.clip_means ? NumpyClip01(NumpyMean(v)) : NumpyMean(v);
    summary.n_samples = static_cast<int64_t>(v.size());
    summary.bootstrap_std = BootstrapStd(v, options.bootstrap_samples, rng, options.clip_means);
    if (name == "score") result.score = summary.mean;
    result.metrics.push_back(std::move(summary));
  }
  return result;
}

OrderedMetrics ReferenceMetricsMap(const AggregateResult& result) {
  OrderedMetrics out;
  for (const MetricSummary& m : result.metrics) {
    if (m.name != "score") out.emplace_back(m.name, m.mean);  // popped into the top line
    out.emplace_back(m.name + ":n_samples", static_cast<double>(m.n_samples));
    out.emplace_back(m.name + ":bootstrap_std", m.bootstrap_std);
  }
  return out;
}

PairedDifference PairedBootstrap(const std::vector<double>& a, const std::vector<double>& b,
                                 const AggregateOptions& options) {
  PairedDifference out;
  const size_t n = std::min(a.size(), b.size());
  out.n = static_cast<int64_t>(n);
  if (n == 0 || options.bootstrap_samples <= 0) return out;
  out.difference = ClippedMeanOf(b.data(), n) - ClippedMeanOf(a.data(), n);
  NumpyRandomState rng(options.seed);
  std::vector<double> ra(n);
  std::vector<double> rb(n);
  std::vector<uint32_t> picks(n);
  std::vector<double> diffs(static_cast<size_t>(options.bootstrap_samples));
  for (double& diff : diffs) {
    rng.RandInts(n, picks.data(), n);
    for (size_t i = 0; i < n; ++i) {
      ra[i] = a[picks[i]];
      rb[i] = b[picks[i]];
    }
    diff = ClippedMeanOf(rb.data(), n) - ClippedMeanOf(ra.data(), n);
  }
  std::sort(diffs.begin(), diffs.end());
  out.ci_low = NumpyLinearPercentile(diffs, 2.5);
  out.ci_high = NumpyLinearPercentile(diffs, 97.5);
  return out;
}

}  // namespace hb
