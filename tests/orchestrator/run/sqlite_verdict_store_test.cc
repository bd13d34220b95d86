#include "orchestrator/run/sqlite_verdict_store.h"

#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOk;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::SizeIs;

JournalMeta TestMeta() {
  JournalMeta meta;
  meta.dataset_sha256 = "dataset-aaa";
  meta.grader.template_sha256 = "template-ttt";
  meta.grader.settings.model = "gpt-4.1-2025-04-14";
  meta.grader.settings.temperature = 0.5;
  meta.grader.settings.max_tokens = 2048;
  meta.grader.settings.system_message = "You are a helpful assistant.";
  meta.tool_version = "0.1.0";
  meta.responses_sha256 = {{"base", "resp-111"}};
  return meta;
}

SqliteVerdictStoreOptions Options(const std::string& dir, JournalMeta meta = TestMeta()) {
  SqliteVerdictStoreOptions options;
  options.path = dir + "/" + kJournalFileName;
  options.meta = std::move(meta);
  options.batch_interval = absl::Milliseconds(1);
  return options;
}

RowRecord OkRow(const std::string& prompt_id, int index, bool met) {
  RowRecord row;
  row.key = RowKey{"base", prompt_id, index};
  row.ok = true;
  row.criteria_met = met;
  row.explanation = "because " + prompt_id;
  row.attempts = 1;
  row.prompt_tokens = 100;
  row.cached_tokens = 40;
  row.completion_tokens = 7;
  row.time = absl::FromUnixMillis(1700000000123);
  return row;
}

RowRecord FailedRow(const std::string& prompt_id, int index) {
  RowRecord row;
  row.key = RowKey{"base", prompt_id, index};
  row.ok = false;
  row.attempts = 3;
  row.error = "UNAVAILABLE: connection refused (attempt 3 of 3)";
  row.time = absl::FromUnixMillis(1700000000999);
  return row;
}

// Counts rows through a separate SQLite connection (what another process would see).
int CountRowsExternally(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM rows", -1, &stmt, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  const int n = sqlite3_column_int(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

TEST(SqliteVerdictStoreTest, RowsSurviveReopen) {
  const std::string dir = hb::testing::MakeTempDir();
  {
    HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
    store->Append(OkRow("p2", 1, true), nullptr);
    store->Append(OkRow("p1", 0, false), nullptr);
    store->Append(FailedRow("p1", 1), nullptr);
    HB_ASSERT_OK(store->Flush());
  }
  HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> rows, store->Rows("base"));
  ASSERT_THAT(rows, SizeIs(3));
  EXPECT_EQ(rows[0].key, (RowKey{"base", "p1", 0}));
  EXPECT_TRUE(rows[0].ok);
  EXPECT_FALSE(rows[0].criteria_met);
  EXPECT_EQ(rows[0].explanation, "because p1");
  EXPECT_EQ(rows[0].prompt_tokens, 100);
  EXPECT_EQ(rows[0].cached_tokens, 40);
  EXPECT_EQ(rows[0].completion_tokens, 7);
  EXPECT_EQ(rows[0].time, absl::FromUnixMillis(1700000000123));
  EXPECT_EQ(rows[1].key, (RowKey{"base", "p1", 1}));
  EXPECT_FALSE(rows[1].ok);
  EXPECT_EQ(rows[1].error, "UNAVAILABLE: connection refused (attempt 3 of 3)");
  EXPECT_EQ(rows[1].attempts, 3);
  EXPECT_EQ(rows[2].key, (RowKey{"base", "p2", 1}));
  EXPECT_TRUE(rows[2].criteria_met);
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> other, store->Rows("other"));
  EXPECT_THAT(other, SizeIs(0));
}

TEST(SqliteVerdictStoreTest, RepliesShareTheJournalAndTheFirstOneIsKept) {
  const std::string dir = hb::testing::MakeTempDir();
  {
    HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
    absl::Status committed = absl::UnknownError("no callback");
    store->AppendReply(
        ReplyRecord{"base", "p2", "{\"response\":\"two\"}", absl::FromUnixMillis(1700000000123)},
        [&](const absl::Status& status) { committed = status; });
    store->Append(OkRow("p2", 0, true), nullptr);  // one transaction may hold both kinds
    store->AppendReply(ReplyRecord{"base", "p1", "one", absl::UnixEpoch()}, nullptr);
    HB_ASSERT_OK(store->Flush());
    HB_EXPECT_OK(committed);
    // A second reply for a task never replaces the first (its rows were graded on it).
    store->AppendReply(ReplyRecord{"base", "p1", "one again", absl::UnixEpoch()}, nullptr);
    HB_ASSERT_OK(store->Flush());
  }
  HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
  HB_ASSERT_OK_AND_ASSIGN(std::vector<ReplyRecord> replies, store->Replies("base"));
  ASSERT_THAT(replies, SizeIs(2));
  EXPECT_EQ(replies[0].prompt_id, "p1");
  EXPECT_EQ(replies[0].reply, "one");
  EXPECT_EQ(replies[1].reply, "{\"response\":\"two\"}");
  EXPECT_EQ(replies[1].time, absl::FromUnixMillis(1700000000123));
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> rows, store->Rows("base"));
  EXPECT_THAT(rows, SizeIs(1));
  HB_ASSERT_OK_AND_ASSIGN(std::vector<ReplyRecord> other, store->Replies("other"));
  EXPECT_THAT(other, SizeIs(0));
}

// What the reports' totals need across resumes: which rows came from the verdict cache, and
// the wall time of every run.
TEST(SqliteVerdictStoreTest, KeepsFromCacheBatchAndRunTimesAcrossReopen) {
  const std::string dir = hb::testing::MakeTempDir();
  {
    HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
    RowRecord hit = OkRow("p1", 0, true);
    hit.from_cache = true;
    hit.attempts = 0;
    store->Append(hit, nullptr);
    RowRecord batch = OkRow("p1", 1, false);
    batch.batch = true;
    store->Append(batch, nullptr);
    store->Append(OkRow("p1", 2, false), nullptr);
    HB_ASSERT_OK(store->Flush());
    HB_ASSERT_OK(store->AddRunTime(absl::FromUnixSeconds(1700000000), absl::Milliseconds(1500)));
    HB_ASSERT_OK_AND_ASSIGN(const bool simulated, store->AnySimulatedRow());
    EXPECT_FALSE(simulated);
    RowRecord sim = OkRow("p2", 0, true);
    sim.simulated = true;
    store->Append(sim, nullptr);
    HB_ASSERT_OK(store->Flush());
  }
  HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
  HB_ASSERT_OK_AND_ASSIGN(const bool simulated, store->AnySimulatedRow());
  EXPECT_TRUE(simulated);
  HB_ASSERT_OK(store->AddRunTime(absl::FromUnixSeconds(1700000100), absl::Milliseconds(2250)));
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> rows, store->Rows("base"));
  ASSERT_THAT(rows, SizeIs(4));
  EXPECT_TRUE(rows[3].simulated);
  EXPECT_FALSE(rows[0].simulated);
  EXPECT_TRUE(rows[0].from_cache);
  EXPECT_FALSE(rows[0].batch);
  EXPECT_EQ(rows[0].attempts, 0);
  EXPECT_FALSE(rows[1].from_cache);
  EXPECT_TRUE(rows[1].batch);
  EXPECT_FALSE(rows[2].from_cache);
  EXPECT_FALSE(rows[2].batch);
  HB_ASSERT_OK_AND_ASSIGN(absl::Duration total, store->TotalRunTime());
  EXPECT_EQ(total, absl::Milliseconds(3750));
}

// A journal written before the verdict cache and batch grading existed gets the columns, its
// rows neither from the cache nor batch-graded.
TEST(SqliteVerdictStoreTest, OpensAJournalWithoutTheFromCacheAndBatchColumns) {
  const std::string dir = hb::testing::MakeTempDir();
  {
    HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
    store->Append(OkRow("p1", 0, true), nullptr);
    HB_ASSERT_OK(store->Flush());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/" + kJournalFileName).c_str(), &db), SQLITE_OK);
  for (const char* sql :
       {"ALTER TABLE rows DROP COLUMN from_cache", "ALTER TABLE rows DROP COLUMN batch",
        "ALTER TABLE rows DROP COLUMN simulated"}) {
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  }
  sqlite3_close(db);
  HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
  store->Append(OkRow("p1", 1, true), nullptr);
  HB_ASSERT_OK(store->Flush());
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> rows, store->Rows("base"));
  ASSERT_THAT(rows, SizeIs(2));
  EXPECT_FALSE(rows[0].from_cache);
  EXPECT_FALSE(rows[1].from_cache);
  EXPECT_FALSE(rows[0].batch);
  EXPECT_FALSE(rows[1].batch);
  EXPECT_FALSE(rows[0].simulated);
  HB_ASSERT_OK_AND_ASSIGN(const bool simulated, store->AnySimulatedRow());
  EXPECT_FALSE(simulated);
}

TEST(SqliteVerdictStoreTest, CommittedRowsSurviveSigkill) {
  const std::string dir = hb::testing::MakeTempDir();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child commits 50 rows, reports, then hangs until killed: nothing closes the
    // database cleanly.
    ::close(ready[0]);
    auto store = SqliteVerdictStore::Open(Options(dir));
    if (!store.ok()) ::_exit(3);
    std::atomic<int> committed{0};
    absl::Notification all;
    for (int i = 0; i < 50; ++i) {
      (*store)->Append(OkRow("p" + std::to_string(i), 0, i % 2 == 0),
                       [&](const absl::Status& status) {
                         if (status.ok() && ++committed == 50) all.Notify();
                       });
    }
    // Bounded: a child that never sees its 50 commits exits, which closes the pipe and fails
    // the parent's read below instead of leaving it waiting forever.
    if (!all.WaitForNotificationWithTimeout(absl::Seconds(60))) ::_exit(5);
    const char byte = 'x';
    if (::write(ready[1], &byte, 1) != 1) ::_exit(4);
    while (true) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "child failed before committing";
  ::close(ready[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus));

  HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> rows, store->Rows("base"));
  EXPECT_THAT(rows, SizeIs(50));
}

TEST(SqliteVerdictStoreTest, CommitCallbackRunsAfterRowIsVisibleToOthers) {
  const std::string dir = hb::testing::MakeTempDir();
  SqliteVerdictStoreOptions options = Options(dir);
  HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(options));
  auto done = std::make_shared<absl::Notification>();
  auto visible = std::make_shared<int>(-1);
  const std::string path = options.path;
  store->Append(OkRow("p1", 0, true), [done, visible, path](const absl::Status& status) {
    EXPECT_THAT(status, IsOk());
    *visible = CountRowsExternally(path);
    done->Notify();
  });
  ASSERT_TRUE(done->WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(*visible, 1);
}

TEST(SqliteVerdictStoreTest, BatchesByCountAndFlush) {
  const std::string dir = hb::testing::MakeTempDir();
  SqliteVerdictStoreOptions options = Options(dir);
  options.batch_rows = 3;
  options.batch_interval = absl::Hours(1);  // only count or Flush can commit
  // Declared before the store, so they outlive its writer thread.
  std::atomic<int> committed{0};
  absl::Notification third;
  auto count = [&](const absl::Status& status) {
    EXPECT_THAT(status, IsOk());
    if (++committed == 3) third.Notify();
  };
  HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(options));
  store->Append(OkRow("p1", 0, true), count);
  store->Append(OkRow("p1", 1, true), count);
  EXPECT_EQ(committed.load(), 0);
  EXPECT_EQ(CountRowsExternally(options.path), 0);
  store->Append(OkRow("p1", 2, true), count);
  ASSERT_TRUE(third.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(store->transactions_committed(), 1);
  EXPECT_EQ(CountRowsExternally(options.path), 3);

  store->Append(OkRow("p2", 0, true), count);
  HB_ASSERT_OK(store->Flush());
  EXPECT_EQ(committed.load(), 4);
  EXPECT_EQ(store->transactions_committed(), 2);
  EXPECT_EQ(CountRowsExternally(options.path), 4);
}

TEST(SqliteVerdictStoreTest, OkRowsAreFinalAndFailedRowsAreReplaced) {
  const std::string dir = hb::testing::MakeTempDir();
  HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
  store->Append(FailedRow("p1", 0), nullptr);
  store->Append(OkRow("p2", 0, true), nullptr);
  HB_ASSERT_OK(store->Flush());
  RowRecord retried = OkRow("p1", 0, true);
  retried.attempts = 1;
  store->Append(retried, nullptr);
  store->Append(FailedRow("p2", 0), nullptr);  // must not replace the verdict
  HB_ASSERT_OK(store->Flush());
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> rows, store->Rows("base"));
  ASSERT_THAT(rows, SizeIs(2));
  EXPECT_TRUE(rows[0].ok);
  EXPECT_TRUE(rows[0].criteria_met);
  EXPECT_EQ(rows[0].attempts, 4);  // 3 failed attempts, then 1
  EXPECT_TRUE(rows[1].ok);
  EXPECT_EQ(rows[1].attempts, 1);
  EXPECT_EQ(rows[1].error, "");
}

TEST(SqliteVerdictStoreTest, DifferentDatasetFailsNamingFieldAndValues) {
  const std::string dir = hb::testing::MakeTempDir();
  { HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir))); }
  JournalMeta other = TestMeta();
  other.dataset_sha256 = "dataset-bbb";
  EXPECT_THAT(SqliteVerdictStore::Open(Options(dir, other)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("journal " + dir +
                                 "/journal.sqlite belongs to another run: "
                                 "dataset_sha256 is 'dataset-aaa' in the journal but 'dataset-bbb' "
                                 "for this run; use another --out folder, or --force-new")));
}

TEST(SqliteVerdictStoreTest, EveryMetaFieldIsChecked) {
  const std::string dir = hb::testing::MakeTempDir();
  { HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir))); }
  struct Case {
    std::function<void(JournalMeta&)> change;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](JournalMeta& m) { m.grader.template_sha256 = "t2"; },
       "template_sha256 is 'template-ttt' in the journal but 't2'"},
      {[](JournalMeta& m) { m.grader.settings.model = "gpt-5"; },
       "grader_model is 'gpt-4.1-2025-04-14' in the journal but 'gpt-5'"},
      {[](JournalMeta& m) { m.grader.settings.temperature = 0; },
       "grader_temperature is '0.5' in the journal but '0'"},
      {[](JournalMeta& m) { m.grader.settings.max_tokens = 10; },
       "grader_max_tokens is '2048' in the journal but '10'"},
      {[](JournalMeta& m) { m.grader.settings.system_message = ""; },
       "grader_system_message is 'You are a helpful assistant.' in the journal but ''"},
      {[](JournalMeta& m) { m.tool_version = "0.2.0"; },
       "tool_version is '0.1.0' in the journal but '0.2.0'"},
      {[](JournalMeta& m) {
         m.responses_sha256 = {{"base", "resp-222"}};
       },
       "responses_sha256 of checkpoint 'base' is 'resp-111' in the journal but 'resp-222'"},
  };
  for (const Case& c : cases) {
    JournalMeta meta = TestMeta();
    c.change(meta);
    EXPECT_THAT(SqliteVerdictStore::Open(Options(dir, meta)),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(c.expected)));
  }
}

TEST(SqliteVerdictStoreTest, NewCheckpointIsAddedAndThenChecked) {
  const std::string dir = hb::testing::MakeTempDir();
  { HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir))); }
  JournalMeta two = TestMeta();
  two.responses_sha256.emplace_back("tuned", "resp-999");
  { HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir, two))); }
  JournalMeta changed = TestMeta();
  changed.responses_sha256 = {{"tuned", "resp-000"}};
  EXPECT_THAT(SqliteVerdictStore::Open(Options(dir, changed)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint 'tuned' is 'resp-999' in the journal but "
                                 "'resp-000'")));
}

TEST(SqliteVerdictStoreTest, ForceNewMovesTheOldJournalAside) {
  const std::string dir = hb::testing::MakeTempDir();
  {
    HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(Options(dir)));
    store->Append(OkRow("p1", 0, true), nullptr);
    HB_ASSERT_OK(store->Flush());
  }
  JournalMeta other = TestMeta();
  other.dataset_sha256 = "dataset-bbb";
  SqliteVerdictStoreOptions options = Options(dir, other);
  options.force_new = true;
  std::string moved;
  {
    HB_ASSERT_OK_AND_ASSIGN(auto store, SqliteVerdictStore::Open(options));
    moved = store->moved_aside_path();
    EXPECT_THAT(moved, HasSubstr(dir + "/journal.sqlite.old-"));
    HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> rows, store->Rows("base"));
    EXPECT_THAT(rows, SizeIs(0));
  }
  // The new journal carries the new meta; the old one still holds its row.
  HB_EXPECT_OK(SqliteVerdictStore::Open(Options(dir, other)).status());
  EXPECT_EQ(CountRowsExternally(moved), 1);
}

// A truncated journal is not silently taken for a new one (which would re-grade everything).
TEST(SqliteVerdictStoreTest, AnEmptyJournalFileIsAnErrorNamingIt) {
  const std::string dir = hb::testing::MakeTempDir();
  FILE* f = std::fopen((dir + "/journal.sqlite").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_THAT(SqliteVerdictStore::Open(Options(dir)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("journal " + dir + "/journal.sqlite is empty (0 bytes)")));
  SqliteVerdictStoreOptions options = Options(dir);
  options.force_new = true;
  HB_EXPECT_OK(SqliteVerdictStore::Open(options).status());
}

TEST(SqliteVerdictStoreTest, NotADatabaseIsDataLoss) {
  const std::string dir = hb::testing::MakeTempDir();
  FILE* f = std::fopen((dir + "/journal.sqlite").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("this is not a database, just some text that is long enough to matter........", f);
  std::fclose(f);
  EXPECT_THAT(SqliteVerdictStore::Open(Options(dir)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(dir + "/journal.sqlite")));
}

// The batch tables (batch_journal.h): a batch's record and rows commit together, survive a
// reopen, and rows leave batch_rows once forgotten.
TEST(SqliteVerdictStoreTest, BatchRecordsAndRowsSurviveReopen) {
  const std::string dir = hb::testing::MakeTempDir();
  BatchRecord batch{"batch-000001", dir + "/batch/batch-000001.jsonl", 2, "", "", "written"};
  {
    HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteVerdictStore> store,
                            SqliteVerdictStore::Open(Options(dir)));
    HB_ASSERT_OK(store->SaveBatch(batch, {{RowKey{"base", "p1", 0}, "batch-000001", 1},
                                          {RowKey{"base", "p1", 1}, "batch-000001", 1}}));
    batch.file_id = "file-1";
    batch.batch_id = "batch_abc";
    batch.state = "submitted";
    HB_ASSERT_OK(store->SaveBatch(batch, {}));
  }
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteVerdictStore> store,
                          SqliteVerdictStore::Open(Options(dir)));
  HB_ASSERT_OK_AND_ASSIGN(std::vector<BatchRecord> batches, store->Batches());
  ASSERT_THAT(batches, SizeIs(1));
  EXPECT_EQ(batches[0].batch_id, "batch_abc");
  EXPECT_EQ(batches[0].file_id, "file-1");
  EXPECT_EQ(batches[0].state, "submitted");
  EXPECT_EQ(batches[0].requests, 2);
  HB_ASSERT_OK_AND_ASSIGN(std::vector<BatchRowEntry> rows, store->BatchRows());
  ASSERT_THAT(rows, SizeIs(2));
  EXPECT_EQ(rows[0].attempts, 1);
  HB_ASSERT_OK(store->ForgetBatchRows({RowKey{"base", "p1", 0}}));
  HB_ASSERT_OK_AND_ASSIGN(rows, store->BatchRows());
  ASSERT_THAT(rows, SizeIs(1));
  EXPECT_EQ(rows[0].key, (RowKey{"base", "p1", 1}));
}

}  // namespace
}  // namespace hb
