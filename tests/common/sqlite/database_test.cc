#include "common/sqlite/database.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A path in this process's temporary directory (removed when the binary exits).
std::string TempPath(const std::string& name) {
  static const std::string* const dir = new std::string(::hb::testing::MakeTempDir());
  return *dir + "/" + name;
}

int ScalarInt(Database& db, const char* sql) {
  Statement stmt(db, sql);
  EXPECT_EQ(stmt.rc(), SQLITE_OK);
  EXPECT_EQ(sqlite3_step(stmt.get()), SQLITE_ROW);
  return sqlite3_column_int(stmt.get(), 0);
}

std::string JournalMode(Database& db) {
  Statement stmt(db, "PRAGMA journal_mode");
  EXPECT_EQ(sqlite3_step(stmt.get()), SQLITE_ROW);
  return stmt.ColumnText(0);
}

TEST(DatabaseTest, OpensWithThePolicyCreatesTheSchemaAndStampsTheVersion) {
  const std::string path = TempPath("policy.sqlite");
  std::remove(path.c_str());
  DatabaseOptions options;
  options.schema = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v TEXT);";
  options.schema_version = 3;
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, Database::Open(path, options));
  EXPECT_EQ(JournalMode(*db), "wal");
  EXPECT_EQ(ScalarInt(*db, "PRAGMA user_version"), 3);
  EXPECT_EQ(ScalarInt(*db, "PRAGMA synchronous"), 1);  // NORMAL
  HB_ASSERT_OK(db->Exec("INSERT INTO t VALUES ('a', 'b')"));
  Statement select(*db, "SELECT v FROM t WHERE k = ?1");
  select.BindText(1, "a");
  ASSERT_EQ(sqlite3_step(select.get()), SQLITE_ROW);
  EXPECT_EQ(select.ColumnText(0), "b");
}

TEST(DatabaseTest, RunsMigrationsAtEveryOpenInOrder) {
  const std::string path = TempPath("migrations.sqlite");
  std::remove(path.c_str());
  std::string order;
  DatabaseOptions options;
  options.schema = "CREATE TABLE IF NOT EXISTS t (k TEXT);";
  options.migrations = {[&](Database&) {
                          order += "1";
                          return absl::OkStatus();
                        },
                        [&](Database&) {
                          order += "2";
                          return absl::OkStatus();
                        }};
  { HB_ASSERT_OK_AND_ASSIGN(auto db, Database::Open(path, options)); }
  { HB_ASSERT_OK_AND_ASSIGN(auto db, Database::Open(path, options)); }
  EXPECT_EQ(order, "1212");
  options.migrations = {[](Database&) { return absl::DataLossError("broken"); }};
  EXPECT_THAT(Database::Open(path, options), StatusIs(absl::StatusCode::kDataLoss, "broken"));
}

TEST(DatabaseTest, RefusesAFileOfANewerSchemaVersion) {
  const std::string path = TempPath("newer.sqlite");
  std::remove(path.c_str());
  DatabaseOptions newer;
  newer.what = "journal";
  newer.schema_version = 5;
  { HB_ASSERT_OK_AND_ASSIGN(auto db, Database::Open(path, newer)); }
  DatabaseOptions older = newer;
  older.schema_version = 4;
  EXPECT_THAT(Database::Open(path, older),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("journal " + path), HasSubstr("schema version 5"),
                             HasSubstr("reads up to 4"))));
}

TEST(DatabaseTest, AFileThatIsNotADatabaseIsDataLossNamingIt) {
  const std::string path = TempPath("text.sqlite");
  std::ofstream(path) << "this is not a SQLite file, it only pretends to be one at length\n";
  DatabaseOptions options;
  options.what = "cache db";
  EXPECT_THAT(Database::Open(path, options),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("cache db " + path), HasSubstr("not a database"))));
}

TEST(DatabaseTest, AnUnopenablePathIsPermissionDenied) {
  EXPECT_THAT(
      Database::Open("/nonexistent-dir/x.sqlite", DatabaseOptions{}),
      StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("/nonexistent-dir/x.sqlite")));
}

TEST(DatabaseTest, ALockErrorCarriesTheLockHintAndNoOtherErrorDoes) {
  const std::string path = TempPath("locked.sqlite");
  std::remove(path.c_str());
  DatabaseOptions options;
  options.what = "journal";
  options.lock_hint = " (is another writer running?)";
  options.busy_timeout = absl::Milliseconds(1);
  HB_ASSERT_OK_AND_ASSIGN(auto holder, Database::Open(path, options));
  HB_ASSERT_OK(holder->Exec("BEGIN IMMEDIATE"));
  HB_ASSERT_OK_AND_ASSIGN(auto second, Database::Open(path, options));
  EXPECT_THAT(second->Exec("BEGIN IMMEDIATE"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("journal " + path + ": BEGIN IMMEDIATE: "),
                             HasSubstr("(is another writer running?)"))));
  EXPECT_THAT(second->Exec("NOT SQL"),
              StatusIs(absl::StatusCode::kInternal, ::testing::Not(HasSubstr("another writer"))));
}

}  // namespace
}  // namespace hb
