// Scoring and aggregation exactly as the reference (SPEC §7-§9).
//
// Per task: score = (sum of points of met items) / (sum of positive points), unclipped.
// Per task metrics: "overall_score", each example tag (= the task score), each rubric tag
// scored on its own items (omitted when it has no positive item), in the reference's insertion
// order. Aggregation: for each key, the mean clipped to [0, 1], ":n_samples" and
// ":bootstrap_std" (1,000 resamples, each mean clipped, population std). The bootstrap draws
// from numpy's legacy RandomState(seed) exactly as `np.random.seed(seed)` followed by the
// reference's `np.random.choice` calls would, so a seeded reference run gives the same digits.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/healthbench/types.h"

namespace hb {

// Ordered (insertion order) metric name -> value, as a Python dict.
using OrderedMetrics = std::vector<std::pair<std::string, double>>;

// SPEC §7: sum(points of met items) / sum(points > 0). std::nullopt when no item has positive
// points. `met[i]` belongs to `items[i]`; the sizes must match.
std::optional<double> CalculateScore(const std::vector<RubricItem>& items,
                                     const std::vector<bool>& met);

// SPEC §8: the flat metrics map of one graded task. kInvalidArgument naming `prompt_id` when
// the task's positive points sum to 0 (the reference asserts), or when sizes differ.
absl::StatusOr<OrderedMetrics> ScoreTask(const std::string& prompt_id,
                                         const std::vector<std::string>& example_tags,
                                         const std::vector<RubricItem>& items,
                                         const std::vector<bool>& met);

// The length-adjusted score (simple-evals PR #108, HealthBench Professional): per task
//   adjusted = score - penalty_per_500_chars * ((len(reply) - center) / 500)
// where len is Python's len() of the policy's reply string (Unicode code points, not bytes),
// unclipped per task (a reply shorter than `center` earns a bonus); aggregated like every other
// key (clipped mean, n_samples, bootstrap std). Professional: center 2000, penalty 0.0147.
struct LengthAdjustment {
  double center = 0;                 // characters, >= 0
  double penalty_per_500_chars = 0;  // score points per 500 characters, >= 0
};
inline constexpr char kLengthAdjustedScoreKey[] = "overall_score_length_adjusted";
inline constexpr LengthAdjustment kProfessionalLengthAdjustment = {2000, 0.0147};

// Python's len() of the str decoded from `utf8`: the number of code points, counted as the
// bytes that do not continue a UTF-8 sequence (the input is valid UTF-8 wherever it came from
// JSON).
int64_t PythonStrLen(std::string_view utf8);

// The formula above, operation for operation as Python evaluates it (so bit-identical).
double LengthAdjustedScore(double score, std::string_view reply,
                           const LengthAdjustment& adjustment);

// Puts kLengthAdjustedScoreKey right after "overall_score" (the first key ScoreTask writes), the
// reference's insertion order, which decides the bootstrap's draw order. kInvalidArgument when
// `task` does not start with "overall_score".
absl::Status AddLengthAdjustedScore(std::string_view reply, const LengthAdjustment& adjustment,
                                    OrderedMetrics& task);

// One aggregated statistic set.
struct MetricSummary {
  std::string name;
  double mean = 0;  // clipped to [0, 1] unless AggregateOptions::clip_means is false
  int64_t n_samples = 0;
  double bootstrap_std = 0;  // population std of the (clipped) bootstrap means
};

struct AggregateResult {
  // The top-line score: the clipped mean of the per-task scores.
  double score = 0;
  // Every key in the reference's order (first appearance across tasks; "score" right after
  // the first task's keys). Includes "score" itself; see ReferenceMetricsMap.
  std::vector<MetricSummary> metrics;
};

// The metric named `name` of `metrics`, or nullptr (e.g. kLengthAdjustedScoreKey, present only
// when a length adjustment was applied).
const MetricSummary* FindMetric(const std::vector<MetricSummary>& metrics, std::string_view name);

struct AggregateOptions {
  int bootstrap_samples = 1000;
  // numpy legacy seed (np.random.seed); must fit in 32 bits.
  uint32_t seed = 0;
  // The HealthBench eval clips every mean, bootstrap means included, to [0, 1] (SPEC §9);
  // simple-evals' common.aggregate_results, which the meta-eval uses, does not (SPEC §15).
  bool clip_means = true;
  // The per-task metric that is also the task's "score" entry (SingleEvalResult.score): the
  // eval's "overall_score", the meta-eval's "model_predicted_positive".
  std::string score_key = "overall_score";
};

// SPEC §9 over `tasks` (each the OrderedMetrics of one graded task, in task order). With
// clip_means false, `mean` and the bootstrap means are numpy's plain means.
AggregateResult Aggregate(const std::vector<OrderedMetrics>& tasks,
                          const AggregateOptions& options);

// The reference's final metrics map: for each key `k` (in order) `k`, `k:n_samples`,
// `k:bootstrap_std`, with `score` removed (it is the top line) but `score:n_samples` and
// `score:bootstrap_std` kept (SPEC §9 quirk). n_samples values are integral doubles.
OrderedMetrics ReferenceMetricsMap(const AggregateResult& result);

// numpy's legacy RandomState (MT19937 seeded by init_genrand, as std::mt19937(seed) and numpy's
// RandomState(seed)) and the pieces of numpy the bootstrap needs, bit for bit. The generator
// makes a whole state (624 words) at a time and tempers it in one pass, both loops the compiler
// vectorizes; outputs are handed out in order, so the sequence is MT19937's.
class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed);
  uint32_t NextUint32() {
    if (next_ == kWords) Generate();
    return out_[next_++];
  }
  // randint(0, high) for 1 <= high <= 2^32, by masked rejection as numpy's legacy path.
  uint64_t RandInt(uint64_t high);
  // `count` draws of RandInt(high) into `out`: the same values from the same outputs as
  // `count` calls, without a branch per rejection (the bootstrap's inner loop).
  void RandInts(uint64_t high, uint32_t* out, size_t count);

 private:
  static constexpr size_t kWords = 624;
  // The next state, tempered into out_.
  void Generate();

  std::array<uint32_t, kWords> state_{};
  std::array<uint32_t, kWords> out_{};
  // The next word of out_ to hand out; kWords: none left.
  size_t next_ = kWords;
};

// numpy.mean / numpy.std (ddof 0) with numpy's pairwise summation, bit for bit.
double NumpyMean(const std::vector<double>& values);
double NumpyStd(const std::vector<double>& values);

// The bootstrap standard deviation of the clipped (or, with `clip` false, plain) mean of
// `values` (SPEC §9), drawing from `rng`.
double BootstrapStd(const std::vector<double>& values, int samples, NumpyRandomState& rng,
                    bool clip = true);

// Paired bootstrap of the difference of clipped means between two checkpoints graded on the
// same tasks: `a[i]` and `b[i]` are the two task scores of task i. Returns the observed
// difference clip(mean(b)) - clip(mean(a)) and the 2.5% / 97.5% percentiles of `samples`
// resampled differences (numpy "linear" percentile), seeded like Aggregate.
struct PairedDifference {
  double difference = 0;
  double ci_low = 0;
  double ci_high = 0;
  int64_t n = 0;
};
PairedDifference PairedBootstrap(const std::vector<double>& a, const std::vector<double>& b,
                                 const AggregateOptions& options);

}  // namespace hb
