// ScoreTask on rubrics with many distinct tags: exact results, and memory linear in the input.
// The binary replaces the global operator new to count the bytes ScoreTask allocates, so the
// bound is deterministic (no timing): grouping items by tag must not copy the items.
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grading/scoring.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC cannot see that these operators pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
std::atomic<bool> g_counting{false};
std::atomic<size_t> g_allocated_bytes{0};
}  // namespace

void* operator new(size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocated_bytes += size;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace hb {
namespace {

constexpr int kItems = 40;
constexpr int kTagsPerItem = 500;  // 40 x 500 = 20,000 distinct tags

std::string TagOf(int item, int k) { return absl::StrCat("t", item, "-", k); }

// Item i: points i + 1, met when i is even, tags "shared" then t<i>-0 ... t<i>-499.
std::vector<RubricItem> ManyTagRubric() {
  std::vector<RubricItem> items(kItems);
  for (int i = 0; i < kItems; ++i) {
    items[i].criterion = absl::StrCat("criterion ", i);
    items[i].points = i + 1;
    items[i].tags.push_back("shared");
    for (int k = 0; k < kTagsPerItem; ++k) items[i].tags.push_back(TagOf(i, k));
  }
  return items;
}

std::vector<bool> EvenMet() {
  std::vector<bool> met(kItems);
  for (int i = 0; i < kItems; ++i) met[i] = i % 2 == 0;
  return met;
}

TEST(ScoreTaskScaleTest, TwentyThousandDistinctTagsScoreExactlyInOrder) {
  const std::vector<RubricItem> items = ManyTagRubric();
  // "t3-7" is an example tag and a rubric tag: set first (to the overall score), then
  // overwritten in place by its rubric score, as a Python dict assignment does.
  HB_ASSERT_OK_AND_ASSIGN(const OrderedMetrics metrics,
                          ScoreTask("many", {"theme:x", "t3-7"}, items, EvenMet()));
  double possible = 0;
  double achieved = 0;
  for (int i = 0; i < kItems; ++i) {
    possible += i + 1;
    if (i % 2 == 0) achieved += i + 1;
  }
  const double overall = achieved / possible;
  ASSERT_EQ(metrics.size(), 4u + kItems * kTagsPerItem - 1);
  EXPECT_EQ(metrics[0], std::make_pair(std::string("overall_score"), overall));
  EXPECT_EQ(metrics[1], std::make_pair(std::string("theme:x"), overall));
  EXPECT_EQ(metrics[2], std::make_pair(std::string("t3-7"), 0.0));  // item 3 is not met
  EXPECT_EQ(metrics[3], std::make_pair(std::string("shared"), overall));
  size_t at = 4;
  for (int i = 0; i < kItems; ++i) {
    for (int k = 0; k < kTagsPerItem; ++k) {
      if (i == 3 && k == 7) continue;  // kept at its first position
      ASSERT_LT(at, metrics.size());
      EXPECT_EQ(metrics[at].first, TagOf(i, k));
      EXPECT_EQ(metrics[at].second, i % 2 == 0 ? 1.0 : 0.0);
      ++at;
    }
  }
}

TEST(ScoreTaskScaleTest, AllocatesLinearlyInTheRubric) {
  const std::vector<RubricItem> items = ManyTagRubric();
  const std::vector<bool> met = EvenMet();
  g_allocated_bytes = 0;
  g_counting = true;
  absl::StatusOr<OrderedMetrics> metrics = ScoreTask("many", {}, items, met);
  g_counting = false;
  ASSERT_TRUE(metrics.ok());
  // The output alone is 20,001 entries of ~40 bytes; indices and hash tables a few times that.
  // Copying each item into each of its tag groups costs 40 x 501 x 500 strings (> 300 MB).
  EXPECT_LT(g_allocated_bytes.load(), size_t{32} << 20);
}

}  // namespace
}  // namespace hb
