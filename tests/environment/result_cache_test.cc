// ResultCache: LRU bound, keys, and persistence through SqliteResultStore across a reopen.
#include "environment/result_cache.h"

#include <memory>
#include <string>

#include "environment/sqlite_result_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb::env {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

SubmitResult Result(const std::string& task, double reward) {
  SubmitResult result;
  result.task_id = task;
  result.reward = reward;
  result.reward_clipped = std::clamp(reward, 0.0, 1.0);
  result.points_met = 3;
  result.points_possible = 7;
  result.items = {ItemResult{"says hello", 3, true, "it does"},
                  ItemResult{"says bye", 4, false, "it does not"}};
  result.tag_scores = {{"theme:x", reward}};
  result.usage = TokenCounts{10, 2, 5};
  return result;
}

TEST(SubmissionKeyTest, EveryPartChangesTheKey) {
  const std::string key = SubmissionKey("t", "reply", "fp");
  EXPECT_NE(key, SubmissionKey("t2", "reply", "fp"));
  EXPECT_NE(key, SubmissionKey("t", "reply ", "fp"));
  EXPECT_NE(key, SubmissionKey("t", "reply", "fp2"));
}

TEST(ResultCacheTest, EvictsTheLeastRecentlyUsed) {
  ResultCache cache(2);
  cache.Put("a", Result("a", 0.1));
  cache.Put("b", Result("b", 0.2));
  ASSERT_TRUE(cache.Find("a").has_value());  // "b" is now the least recently used
  cache.Put("c", Result("c", 0.3));
  EXPECT_TRUE(cache.Find("a").has_value());
  EXPECT_FALSE(cache.Find("b").has_value());
  EXPECT_TRUE(cache.Find("c").has_value());
  EXPECT_EQ(cache.size(), 2u);
}

TEST(ResultCacheTest, ZeroEntriesStoresNothing) {
  ResultCache cache(0);
  cache.Put("a", Result("a", 0.1));
  EXPECT_FALSE(cache.Find("a").has_value());
}

TEST(ResultCacheTest, PersistedResultsAreReloadedAfterAReopen) {
  const std::string path = testing::MakeTempDir() + "/cache.sqlite";
  {
    auto store = SqliteResultStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ResultCache cache(2, store->get());
    cache.Put("a", Result("a", -0.25));
    cache.Put("b", Result("b", 0.5));
    cache.Put("c", Result("c", 0.75));  // evicts "a", also from the file
  }
  auto store = SqliteResultStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ResultCache cache(10, store->get());
  ASSERT_TRUE(cache.Preload().ok());
  EXPECT_FALSE(cache.Find("a").has_value());
  std::optional<SubmitResult> b = cache.Find("b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->task_id, "b");
  EXPECT_EQ(b->reward, 0.5);
  ASSERT_EQ(b->items.size(), 2u);
  EXPECT_EQ(b->items[1].explanation, "it does not");
  EXPECT_EQ(b->tag_scores.at("theme:x"), 0.5);
  EXPECT_EQ(b->usage.completion_tokens, 5);
  EXPECT_TRUE(cache.Find("c").has_value());
}

TEST(SqliteResultStoreTest, AFileThatIsNotADatabaseIsDataLoss) {
  const std::string path = testing::MakeTempDir() + "/not.sqlite";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("this is not a database at all, just some text long enough to be a header....", f);
  std::fclose(f);
  EXPECT_THAT(SqliteResultStore::Open(path),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path)));
}

}  // namespace
}  // namespace hb::env
