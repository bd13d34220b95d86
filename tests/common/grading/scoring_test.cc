#include "common/grading/scoring.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOkAndHolds;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

RubricItem Item(double points, std::vector<std::string> tags = {}) {
  RubricItem item;
  item.criterion = "test";
  item.points = points;
  item.tags = std::move(tags);
  return item;
}

AggregateOptions Options(int samples, uint32_t seed) {
  AggregateOptions options;
  options.bootstrap_samples = samples;
  options.seed = seed;
  return options;
}

std::vector<std::string> Keys(const OrderedMetrics& metrics) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : metrics) keys.push_back(key);
  return keys;
}

// SPEC §16.1.
TEST(CalculateScoreTest, ReferenceTestCase) {
  const std::vector<RubricItem> items = {Item(7), Item(5), Item(10), Item(-6)};
  const std::optional<double> score = CalculateScore(items, {true, false, true, true});
  ASSERT_TRUE(score.has_value());
  EXPECT_EQ(*score, 0.5);
}

TEST(CalculateScoreTest, UnclippedAndNoneWithoutPositivePoints) {
  EXPECT_EQ(CalculateScore({Item(2), Item(-6)}, {false, true}), -3.0);
  EXPECT_EQ(CalculateScore({Item(-2), Item(-6)}, {true, true}), std::nullopt);
  EXPECT_EQ(CalculateScore({}, {}), std::nullopt);
}

TEST(ScoreTaskTest, MetricOrderAndTagRules) {
  const std::vector<RubricItem> items = {
      Item(5, {"axis:accuracy", "level:example"}),
      Item(-3, {"axis:safety"}),  // only negative items: omitted
      Item(5, {"axis:completeness", "axis:accuracy"}),
      Item(-2, {"axis:completeness"}),
  };
  HB_ASSERT_OK_AND_ASSIGN(
      const OrderedMetrics metrics,
      ScoreTask("p1", {"theme:hedging", "physician_agreed_category:enough-context"}, items,
                {true, true, false, true}));
  // overall = (5 - 3 - 2) / 10 = 0.
  EXPECT_THAT(metrics, ElementsAre(Pair("overall_score", 0.0), Pair("theme:hedging", 0.0),
                                   Pair("physician_agreed_category:enough-context", 0.0),
                                   Pair("axis:accuracy", 0.5), Pair("level:example", 1.0),
                                   Pair("axis:completeness", -0.4)));
}

TEST(ScoreTaskTest, RubricTagOverridesExampleTagInPlace) {
  HB_ASSERT_OK_AND_ASSIGN(
      const OrderedMetrics metrics,
      ScoreTask("p", {"x", "y"}, {Item(4, {"y"}), Item(4, {"z"})}, {false, true}));
  EXPECT_THAT(metrics, ElementsAre(Pair("overall_score", 0.5), Pair("x", 0.5), Pair("y", 0.0),
                                   Pair("z", 1.0)));
}

TEST(ScoreTaskTest, Errors) {
  EXPECT_THAT(ScoreTask("p-zero", {}, {Item(-1), Item(0)}, {true, false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("p-zero: no rubric item has positive points")));
  EXPECT_THAT(ScoreTask("p-size", {}, {Item(1)}, {true, false}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("p-size")));
  EXPECT_THAT(
      ScoreTask("p-dup", {"a", "b", "a"}, {Item(1)}, {true}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("p-dup: duplicate example tag 'a'")));
  EXPECT_THAT(ScoreTask("p-item", {}, {Item(1, {"t"}), Item(1, {"u", "t", "u"})}, {true, true}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("p-item: rubric item 1 repeats tag 'u'")));
  // The same tag on two different items is fine.
  EXPECT_THAT(ScoreTask("p-ok", {}, {Item(1, {"t"}), Item(1, {"t"})}, {true, false}),
              IsOkAndHolds(ElementsAre(Pair("overall_score", 0.5), Pair("t", 0.5))));
}

// Python's len(): code points, not bytes. "é" is 2 bytes, "漢" 3, "🩺" 4 (one code point each,
// the last outside the BMP).
TEST(LengthAdjustmentTest, PythonStrLenCountsCodePoints) {
  EXPECT_EQ(PythonStrLen(""), 0);
  EXPECT_EQ(PythonStrLen("abc"), 3);
  EXPECT_EQ(PythonStrLen("caf\xc3\xa9"), 4);
  EXPECT_EQ(PythonStrLen("\xe6\xbc\xa2\xf0\x9f\xa9\xba"), 2);
  EXPECT_EQ(std::string("\xe6\xbc\xa2\xf0\x9f\xa9\xba").size(), 7U);
}

TEST(LengthAdjustmentTest, FormulaUnclippedBothWays) {
  const LengthAdjustment professional = kProfessionalLengthAdjustment;
  EXPECT_EQ(professional.center, 2000.0);
  EXPECT_EQ(professional.penalty_per_500_chars, 0.0147);
  // At the center: unchanged.
  EXPECT_EQ(LengthAdjustedScore(0.5, std::string(2000, 'a'), professional), 0.5);
  // 500 characters of 2-byte "é" (1000 bytes): 1500 below the center, a bonus of 3 * 0.0147,
  // and above 1 for a perfect score (no per-task clip).
  std::string accents;
  for (int i = 0; i < 500; ++i) accents += "\xc3\xa9";
  EXPECT_EQ(LengthAdjustedScore(1.0, accents, professional), 1.0 - 0.0147 * (-1500.0 / 500.0));
  EXPECT_GT(LengthAdjustedScore(1.0, accents, professional), 1.0);
  // Long reply: below 0.
  EXPECT_EQ(LengthAdjustedScore(0.0, std::string(4500, 'x'), professional),
            0.0 - 0.0147 * (2500.0 / 500.0));
  EXPECT_EQ(LengthAdjustedScore(0.3, "abc", {10, 0}), 0.3);
}

TEST(LengthAdjustmentTest, InsertedRightAfterOverallScore) {
  HB_ASSERT_OK_AND_ASSIGN(OrderedMetrics metrics,
                          ScoreTask("p", {"theme:x"}, {Item(4, {"axis:a"})}, {true}));
  HB_ASSERT_OK(AddLengthAdjustedScore("\xe6\xbc\xa2", {1, 0.5}, metrics));
  EXPECT_THAT(metrics,
              ElementsAre(Pair("overall_score", 1.0), Pair("overall_score_length_adjusted", 1.0),
                          Pair("theme:x", 1.0), Pair("axis:a", 1.0)));
  OrderedMetrics bad = {{"theme:x", 1.0}};
  EXPECT_THAT(AddLengthAdjustedScore("", {1, 1}, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overall_score")));
}

// The adjusted key is aggregated like any other: clipped mean, its own n and bootstrap.
TEST(LengthAdjustmentTest, AggregatedWithClippedMean) {
  std::vector<OrderedMetrics> tasks;
  for (const auto& [score, chars] : std::vector<std::pair<double, int>>{{1.0, 0}, {0.98, 100}}) {
    HB_ASSERT_OK_AND_ASSIGN(OrderedMetrics m, ScoreTask("p", {}, {Item(10)}, {score == 1.0}));
    m.front().second = score;
    HB_ASSERT_OK(AddLengthAdjustedScore(std::string(chars, 'x'), kProfessionalLengthAdjustment, m));
    tasks.push_back(std::move(m));
  }
  const AggregateResult result = Aggregate(tasks, Options(100, 0));
  ASSERT_GE(result.metrics.size(), 2U);
  EXPECT_EQ(result.metrics[1].name, "overall_score_length_adjusted");
  // Per task 1.0588 and 1.0358 (bonuses of 0.0588 and 0.0558), unclipped; the mean clips.
  EXPECT_EQ(result.metrics[1].mean, 1.0);
  EXPECT_EQ(result.metrics[1].n_samples, 2);
  EXPECT_EQ(result.metrics[1].bootstrap_std, 0.0);  // every resample mean clips to 1
}

TEST(NumpyRandomStateTest, MatchesNumpyLegacySeeding) {
  // np.random.seed(0); [np.random.randint(2**32, dtype=np.uint64) ...] and MT19937's own
  // reference output for init_genrand(5489).
  NumpyRandomState zero(0);
  EXPECT_EQ(zero.NextUint32(), 2357136044U);
  EXPECT_EQ(zero.NextUint32(), 2546248239U);
  EXPECT_EQ(zero.NextUint32(), 3071714933U);
  NumpyRandomState standard(5489);
  EXPECT_EQ(standard.NextUint32(), 3499211612U);
}

TEST(NumpyRandomStateTest, RandIntMasksAndRejects) {
  NumpyRandomState a(7);
  NumpyRandomState b(7);
  // high == 1 consumes nothing.
  EXPECT_EQ(a.RandInt(1), 0U);
  EXPECT_EQ(a.NextUint32(), b.NextUint32());
  // high == 5: mask 7, values 5..7 rejected.
  for (int i = 0; i < 200; ++i) {
    uint32_t expected;
    while ((expected = b.NextUint32() & 7U) > 4U) {
    }
    ASSERT_EQ(a.RandInt(5), expected);
  }
  // high == 2^32: the raw draw.
  EXPECT_EQ(a.RandInt(uint64_t{1} << 32), b.NextUint32());
}

TEST(NumpyRandomStateTest, IsMt19937WordForWordOverManyStates) {
  for (const uint32_t seed : {0U, 1U, 42U, 5489U, 0xFFFFFFFFU}) {
    NumpyRandomState ours(seed);
    std::mt19937 standard(seed);
    for (int i = 0; i < 5 * 624 + 17; ++i) {
      ASSERT_EQ(ours.NextUint32(), static_cast<uint32_t>(standard()))
          << "seed " << seed << " #" << i;
    }
  }
}

TEST(NumpyRandomStateTest, RandIntsDrawsWhatRandIntDrawsAcrossBlocks) {
  // Bounds with no rejection, heavy rejection (5000: mask 8191) and the two special cases;
  // counts that end inside and across the engine's 624-word blocks.
  for (const uint64_t high : {uint64_t{1}, uint64_t{2}, uint64_t{5}, uint64_t{1000}, uint64_t{4096},
                              uint64_t{5000}, uint64_t{1} << 32}) {
    NumpyRandomState a(42);
    NumpyRandomState b(42);
    for (const size_t count : {size_t{1}, size_t{623}, size_t{1000}, size_t{5000}}) {
      std::vector<uint32_t> batch(count);
      a.RandInts(high, batch.data(), count);
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(batch[i], b.RandInt(high)) << "high " << high << " count " << count << " #" << i;
      }
    }
    // Both consumed exactly the same outputs.
    EXPECT_EQ(a.NextUint32(), b.NextUint32()) << "high " << high;
  }
}

// SPEC §16.3 aggregation cases.
TEST(AggregateTest, ClippedMeansAndScoreQuirk) {
  AggregateResult result = Aggregate({{{"overall_score", -0.2}}, {{"overall_score", 0.4}}}, {});
  EXPECT_EQ(result.score, 0.1);
  ASSERT_EQ(result.metrics.size(), 2U);
  EXPECT_EQ(result.metrics[0].name, "overall_score");
  EXPECT_EQ(result.metrics[0].mean, 0.1);
  EXPECT_EQ(result.metrics[0].n_samples, 2);
  EXPECT_EQ(result.metrics[1].name, "score");
  const OrderedMetrics map = ReferenceMetricsMap(result);
  EXPECT_THAT(Keys(map),
              ElementsAre("overall_score", "overall_score:n_samples", "overall_score:bootstrap_std",
                          "score:n_samples", "score:bootstrap_std"));
  EXPECT_EQ(map[3].second, 2.0);

  result = Aggregate({{{"overall_score", -0.5}}, {{"overall_score", -0.1}}}, {});
  EXPECT_EQ(result.score, 0.0);
  EXPECT_EQ(result.metrics[0].mean, 0.0);
  // Every clipped resample mean is 0.
  EXPECT_EQ(result.metrics[0].bootstrap_std, 0.0);
}

TEST(AggregateTest, KeyOrderAndPerKeyCounts) {
  const AggregateResult result = Aggregate(
      {
          {{"overall_score", 1.0}, {"theme:a", 1.0}, {"axis:x", 0.5}},
          {{"overall_score", 0.0}, {"theme:b", 0.0}, {"axis:x", 0.25}, {"axis:y", 1.0}},
      },
      Options(10, 3));
  std::vector<std::string> names;
  std::vector<int64_t> counts;
  for (const MetricSummary& m : result.metrics) {
    names.push_back(m.name);
    counts.push_back(m.n_samples);
  }
  EXPECT_THAT(names,
              ElementsAre("overall_score", "theme:a", "axis:x", "score", "theme:b", "axis:y"));
  EXPECT_THAT(counts, ElementsAre(2, 1, 2, 2, 1, 1));
  EXPECT_EQ(result.metrics[2].mean, 0.375);
  // A single value: every resample is that value.
  EXPECT_EQ(result.metrics[1].bootstrap_std, 0.0);
  EXPECT_EQ(result.score, 0.5);
}

TEST(AggregateTest, SeededRunsRepeatAndSeedsDiffer) {
  std::vector<OrderedMetrics> tasks;
  for (int i = 0; i < 50; ++i) tasks.push_back({{"overall_score", (i % 7) / 6.0 - 0.2}});
  const double a = Aggregate(tasks, Options(1000, 1)).metrics[0].bootstrap_std;
  const double b = Aggregate(tasks, Options(1000, 1)).metrics[0].bootstrap_std;
  const double c = Aggregate(tasks, Options(1000, 2)).metrics[0].bootstrap_std;
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_GT(a, 0.0);
}

TEST(NumpyStatsTest, SmallExactCases) {
  EXPECT_EQ(NumpyMean({1.0, 2.0, 3.0, 4.0}), 2.5);
  EXPECT_EQ(NumpyStd({1.0, 2.0, 3.0, 4.0}), std::sqrt(1.25));
  EXPECT_EQ(NumpyStd({5.0}), 0.0);
  EXPECT_TRUE(std::isnan(NumpyMean({})));
}

TEST(PairedBootstrapTest, IdenticalCheckpointsHaveZeroDifference) {
  const std::vector<double> a = {0.1, 0.5, 0.9, -0.2};
  const PairedDifference d = PairedBootstrap(a, a, {});
  EXPECT_EQ(d.n, 4);
  EXPECT_EQ(d.difference, 0.0);
  EXPECT_EQ(d.ci_low, 0.0);
  EXPECT_EQ(d.ci_high, 0.0);
}

// ---- Cross-check against numpy ---------------------------------------------------------------

std::string Hex(double x) { return absl::StrFormat("%a (%.17g)", x, x); }

// Exact (bitwise) equality with a float.hex() string from Python.
void ExpectSameDouble(double actual, const rapidjson::Value& hex, const std::string& what) {
  ASSERT_TRUE(hex.IsString()) << what;
  const double expected = std::strtod(hex.GetString(), nullptr);
  EXPECT_EQ(std::memcmp(&actual, &expected, sizeof(double)), 0)
      << what << ": ours " << Hex(actual) << " numpy " << Hex(expected);
}

void AppendDoubles(const std::vector<double>& values, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append(PythonFloatRepr(values[i]));
  }
  out->push_back(']');
}

std::string TasksJson(const std::vector<OrderedMetrics>& tasks) {
  std::string out = "[";
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (t > 0) out += ",";
    out += "[";
    for (size_t i = 0; i < tasks[t].size(); ++i) {
      if (i > 0) out += ",";
      absl::StrAppend(&out, "[", JsonQuote(tasks[t][i].first), ",",
                      PythonFloatRepr(tasks[t][i].second), "]");
    }
    out += "]";
  }
  return out + "]";
}

// ~500 graded tasks with example tags, rubric tags and negative items.
std::vector<OrderedMetrics> SyntheticGradedTasks() {
  std::mt19937 rng(12345);
  const auto uniform = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  const std::vector<std::string> axes = {"axis:accuracy", "axis:completeness", "axis:communication",
                                         "axis:context_awareness", "axis:instruction_following"};
  const std::vector<std::string> themes = {"theme:hedging", "theme:emergency_referrals",
                                           "theme:global_health", "theme:communication"};
  std::vector<OrderedMetrics> tasks;
  for (int t = 0; t < 500; ++t) {
    std::vector<RubricItem> items;
    std::vector<bool> met;
    const int n_items = uniform(1, 14);
    for (int i = 0; i < n_items; ++i) {
      int points = uniform(-10, 10);
      if (points == 0 || i == 0) points = uniform(1, 10);
      std::vector<std::string> tags = {axes[uniform(0, 4)]};
      if (uniform(0, 3) == 0) tags.push_back(uniform(0, 1) ? "level:example" : "level:cluster");
      items.push_back(Item(points, tags));
      met.push_back(uniform(0, 2) != 0);
    }
    std::vector<std::string> example_tags = {themes[uniform(0, 3)]};
    if (uniform(0, 1))
      example_tags.push_back("physician_agreed_category:x" + std::to_string(t % 3));
    absl::StatusOr<OrderedMetrics> metrics =
        ScoreTask(absl::StrCat("task-", t), example_tags, items, met);
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    if (metrics.ok()) tasks.push_back(*std::move(metrics));
  }
  return tasks;
}

// 5000 tasks whose keys have n = 1, 7, 8, 9, 127, 128, 129, 1000 and 5000 values.
std::vector<OrderedMetrics> SizeSweepTasks() {
  std::mt19937_64 rng(777);
  std::uniform_real_distribution<double> score(-0.6, 1.0);
  const std::vector<int> sizes = {1, 7, 8, 9, 127, 128, 129, 1000};
  std::vector<OrderedMetrics> tasks;
  for (int t = 0; t < 5000; ++t) {
    OrderedMetrics metrics = {{"overall_score", score(rng)}};
    for (const int size : sizes) {
      if (t < size) metrics.emplace_back(absl::StrCat("n", size), score(rng));
    }
    tasks.push_back(std::move(metrics));
  }
  return tasks;
}

TEST(NumpyCrossCheckTest, BitIdenticalToNumpy) {
  const std::string python = "/usr/bin/python3";
  ASSERT_EQ(::access(python.c_str(), X_OK), 0) << python << " (with numpy) is required";
  const std::string script = hb::testing::SourceDir() + "/scripts/reference/aggregate_reference.py";
  const std::string dir = hb::testing::MakeTempDir();

  struct Case {
    std::vector<OrderedMetrics> tasks;
    uint32_t seed;
  };
  const std::vector<OrderedMetrics> graded = SyntheticGradedTasks();
  const std::vector<OrderedMetrics> sweep = SizeSweepTasks();
  const std::vector<Case> cases = {{graded, 0}, {graded, 42}, {sweep, 0}, {sweep, 42}};

  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::vector<std::vector<double>> vectors;
  for (const int n : {1, 2, 7, 8, 9, 16, 127, 128, 129, 130, 1000, 5000, 8192, 8193, 20000}) {
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) x = real(rng) * 1000.0;
    vectors.push_back(std::move(v));
  }
  struct Paired {
    std::vector<double> a, b;
    uint32_t seed;
  };
  std::vector<Paired> paired;
  for (const auto& [n, seed] : std::vector<std::pair<int, uint32_t>>{{300, 7}, {1, 0}, {9, 42}}) {
    Paired p{{}, {}, seed};
    for (int i = 0; i < n; ++i) {
      p.a.push_back(real(rng));
      p.b.push_back(real(rng) * 0.5 + 0.4);
    }
    paired.push_back(std::move(p));
  }

  std::string input = "{\"cases\":[";
  for (size_t i = 0; i < cases.size(); ++i) {
    absl::StrAppend(&input, i ? "," : "", "{\"seed\":", cases[i].seed,
                    ",\"samples\":1000,\"tasks\":", TasksJson(cases[i].tasks), "}");
  }
  input += "],\"vectors\":[";
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (i > 0) input += ",";
    AppendDoubles(vectors[i], &input);
  }
  input += "],\"paired\":[";
  for (size_t i = 0; i < paired.size(); ++i) {
    absl::StrAppend(&input, i ? "," : "", "{\"seed\":", paired[i].seed, ",\"samples\":1000,\"a\":");
    AppendDoubles(paired[i].a, &input);
    input += ",\"b\":";
    AppendDoubles(paired[i].b, &input);
    input += "}";
  }
  input += "],\"length\":[";
  // Replies with non-ASCII (2-, 3- and 4-byte UTF-8, a JSON-escaped control character) on both
  // sides of the centre.
  const std::vector<std::string> replies = {
      "", "plain ASCII", std::string(2600, 'a'),
      "caf\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\xa9\xba\n",
      std::string(700, 'z') + "\xc3\xa9\xc3\xa9\xc3\xa9"};
  const std::vector<LengthAdjustment> adjustments = {{2000, 0.0147}, {0, 0.0299}, {13.5, 1.0 / 3}};
  for (size_t i = 0; i < replies.size(); ++i) {
    for (size_t j = 0; j < adjustments.size(); ++j) {
      absl::StrAppend(&input, i + j ? "," : "", "{\"score\":", PythonFloatRepr(0.1 * i - 0.2),
                      ",\"reply\":", JsonQuote(replies[i]),
                      ",\"center\":", PythonFloatRepr(adjustments[j].center),
                      ",\"penalty\":", PythonFloatRepr(adjustments[j].penalty_per_500_chars), "}");
    }
  }
  input += "]}";
  const std::string in_path = dir + "/in.json";
  const std::string out_path = dir + "/out.json";
  std::ofstream(in_path, std::ios::binary) << input;
  const std::string command = absl::StrCat(python, " ", script, " ", in_path, " ", out_path);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  std::stringstream buffer;
  buffer << std::ifstream(out_path, std::ios::binary).rdbuf();
  rapidjson::Document expected;
  expected.Parse(buffer.str().c_str());
  ASSERT_FALSE(expected.HasParseError());

  const rapidjson::Value& expected_cases = expected["cases"];
  ASSERT_EQ(expected_cases.Size(), cases.size());
  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(absl::StrCat("case ", c, " seed ", cases[c].seed));
    const AggregateResult result = Aggregate(cases[c].tasks, Options(1000, cases[c].seed));
    const rapidjson::Value& want = expected_cases[static_cast<rapidjson::SizeType>(c)];
    ExpectSameDouble(result.score, want["score"], "score");
    const OrderedMetrics map = ReferenceMetricsMap(result);
    const rapidjson::Value& want_metrics = want["metrics"];
    ASSERT_EQ(map.size(), want_metrics.Size());
    for (rapidjson::SizeType i = 0; i < want_metrics.Size(); ++i) {
      EXPECT_EQ(map[i].first, want_metrics[i][0].GetString());
      ExpectSameDouble(map[i].second, want_metrics[i][1], map[i].first);
    }
  }
  // The sweep case covers every size it claims to.
  std::vector<int64_t> sizes;
  for (const MetricSummary& m : Aggregate(sweep, Options(1, 0)).metrics) {
    sizes.push_back(m.n_samples);
  }
  EXPECT_THAT(sizes, ElementsAre(5000, 1, 7, 8, 9, 127, 128, 129, 1000, 5000));

  const rapidjson::Value& expected_vectors = expected["vectors"];
  ASSERT_EQ(expected_vectors.Size(), vectors.size());
  for (size_t i = 0; i < vectors.size(); ++i) {
    const auto& want = expected_vectors[static_cast<rapidjson::SizeType>(i)];
    ExpectSameDouble(NumpyMean(vectors[i]), want["mean"],
                     absl::StrCat("mean n=", vectors[i].size()));
    ExpectSameDouble(NumpyStd(vectors[i]), want["std"], absl::StrCat("std n=", vectors[i].size()));
  }

  const rapidjson::Value& expected_paired = expected["paired"];
  ASSERT_EQ(expected_paired.Size(), paired.size());
  for (size_t i = 0; i < paired.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("paired n=", paired[i].a.size()));
    const PairedDifference d =
        PairedBootstrap(paired[i].a, paired[i].b, Options(1000, paired[i].seed));
    const auto& want = expected_paired[static_cast<rapidjson::SizeType>(i)];
    ExpectSameDouble(d.difference, want["difference"], "difference");
    ExpectSameDouble(d.ci_low, want["ci_low"], "ci_low");
    ExpectSameDouble(d.ci_high, want["ci_high"], "ci_high");
    EXPECT_EQ(d.n, static_cast<int64_t>(paired[i].a.size()));
  }

  const rapidjson::Value& expected_length = expected["length"];
  ASSERT_EQ(expected_length.Size(), replies.size() * adjustments.size());
  for (size_t i = 0; i < replies.size(); ++i) {
    for (size_t j = 0; j < adjustments.size(); ++j) {
      const auto& want =
          expected_length[static_cast<rapidjson::SizeType>(i * adjustments.size() + j)];
      EXPECT_EQ(PythonStrLen(replies[i]), want["chars"].GetInt64()) << "reply " << i;
      ExpectSameDouble(LengthAdjustedScore(0.1 * i - 0.2, replies[i], adjustments[j]),
                       want["adjusted"], absl::StrCat("length reply ", i, " adjustment ", j));
    }
  }
}

}  // namespace
}  // namespace hb
