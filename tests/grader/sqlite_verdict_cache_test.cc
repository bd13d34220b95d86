// SqliteVerdictCache on real files: round trip, first entry wins, two processes writing one
// file at once, and the start-up errors for a file that cannot be a verdict cache.
#include "grader/sqlite_verdict_cache.h"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

CachedVerdict Entry(const std::string& reply, int64_t prompt_tokens) {
  return CachedVerdict{reply, "gpt-4.1-2025-04-14", {prompt_tokens, prompt_tokens / 2, 41}};
}

TEST(SqliteVerdictCacheTest, StoresAndFindsEntriesAndKeepsTheFirst) {
  const std::string path = hb::testing::MakeTempDir() + "/cache.sqlite";
  HB_ASSERT_OK_AND_ASSIGN(auto cache, SqliteVerdictCache::Open(path));
  EXPECT_FALSE(cache->Lookup("k1").has_value());
  cache->Store("k1", Entry(R"({"criteria_met": true, "explanation": "x"})", 800));
  cache->Store("k1", Entry("a later sample", 900));
  std::optional<CachedVerdict> hit = cache->Lookup("k1");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->raw_reply, R"({"criteria_met": true, "explanation": "x"})");
  EXPECT_EQ(hit->model, "gpt-4.1-2025-04-14");
  EXPECT_EQ(hit->usage.prompt_tokens, 800);
  EXPECT_EQ(hit->usage.cached_tokens, 400);
  EXPECT_EQ(hit->usage.completion_tokens, 41);
  cache.reset();
  // Entries outlive the process that wrote them.
  HB_ASSERT_OK_AND_ASSIGN(auto reopened, SqliteVerdictCache::Open(path));
  EXPECT_TRUE(reopened->Lookup("k1").has_value());
}

TEST(SqliteVerdictCacheTest, TwoProcessesShareOneFile) {
  const std::string path = hb::testing::MakeTempDir() + "/cache.sqlite";
  constexpr int kEntries = 300;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto cache = SqliteVerdictCache::Open(path);
    if (!cache.ok()) ::_exit(3);
    for (int i = 0; i < kEntries; ++i) (*cache)->Store(absl::StrCat("child-", i), Entry("c", i));
    ::_exit(0);
  }
  HB_ASSERT_OK_AND_ASSIGN(auto cache, SqliteVerdictCache::Open(path));
  for (int i = 0; i < kEntries; ++i) cache->Store(absl::StrCat("parent-", i), Entry("p", i));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  int found = 0;
  for (int i = 0; i < kEntries; ++i) {
    found += cache->Lookup(absl::StrCat("child-", i)).has_value();
    found += cache->Lookup(absl::StrCat("parent-", i)).has_value();
  }
  EXPECT_EQ(found, 2 * kEntries);  // no write lost to a lock
}

TEST(SqliteVerdictCacheTest, AFileThatIsNotADatabaseFailsAtOpen) {
  const std::string path = hb::testing::MakeTempDir() + "/cache.sqlite";
  ASSERT_TRUE(WriteFileAtomically(path, std::string(8192, 'x')).ok());
  EXPECT_THAT(SqliteVerdictCache::Open(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("--verdict-cache " + path), HasSubstr("not a database"),
                             HasSubstr("give a writable path"))));
}

TEST(SqliteVerdictCacheTest, AnUnwritablePathFailsAtOpen) {
  const std::string path = hb::testing::MakeTempDir() + "/no/such/folder/cache.sqlite";
  EXPECT_THAT(SqliteVerdictCache::Open(path),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       AllOf(HasSubstr("--verdict-cache " + path), HasSubstr("unable to open"))));
}

TEST(SqliteVerdictCacheTest, AnotherTablesShapeFailsAtOpen) {
  const std::string path = hb::testing::MakeTempDir() + "/other.sqlite";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE verdicts(id INTEGER)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THAT(SqliteVerdictCache::Open(path),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("its `verdicts` table is not a verdict cache's")));
}

}  // namespace
}  // namespace hb
