// Database: one SQLite file opened with the project's one policy, and Statement, a prepared
// statement. Every SQLite file the project keeps (the run journal, the verdict cache, hb-env's
// result store) opens through Database::Open, so they share one answer to locking, durability,
// schema creation, migrations and files written by another version.
//
// The policy: a busy timeout instead of immediate lock errors; WAL (switching a new file to WAL
// can answer SQLITE_BUSY without the busy handler while another process does the same: retried
// within the busy timeout) with synchronous=NORMAL (a committed transaction survives a process
// crash; a power loss may drop the last ones, which are graded again); the schema created if
// missing; migrations run in order; PRAGMA user_version records the schema version, and a file
// of a newer version is refused instead of being misread.
#pragma once

#include <sqlite3.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hb {

class Database;

struct DatabaseOptions {
  // How errors name the file, e.g. "journal", "--verdict-cache", "cache db".
  std::string what = "database";
  // Appended to the message of an error that means another connection holds a lock
  // (SQLITE_BUSY, SQLITE_LOCKED), e.g. " (is another hb-orchestrator using this --out folder?)".
  std::string lock_hint;
  absl::Duration busy_timeout = absl::Seconds(5);
  // `CREATE TABLE IF NOT EXISTS ...` statements, run at every open.
  std::string schema;
  // The schema's version (PRAGMA user_version). A file with a higher one is refused
  // (kFailedPrecondition); a lower one (0: new, or written before versions were recorded) is
  // migrated and then stamped with this one.
  int schema_version = 1;
  // Idempotent steps run after the schema at every open, in order (e.g. adding a column that
  // older files lack).
  std::vector<std::function<absl::Status(Database&)>> migrations;
  // Take and release the write lock once at open, so a file another process holds for writing
  // fails here (within busy_timeout) rather than at the first write.
  bool check_write_lock = false;
  // SQLITE_OPEN_FULLMUTEX (a connection shared by threads without the caller's lock) rather than
  // SQLITE_OPEN_NOMUTEX.
  bool serialized = false;
};

class Database {
 public:
  // Opens or creates `path` with the policy above. Errors name options.what and the path, with
  // SqliteStatus's codes (kDataLoss: not a database; kPermissionDenied: cannot open or write;
  // kFailedPrecondition: locked, or a newer schema version).
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                        const DatabaseOptions& options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs `sql` (one or more statements).
  absl::Status Exec(absl::string_view sql);
  // The status for a failed call with result code `rc` while doing `step`: "<what> <path>:
  // <step>: <sqlite's message>", then options.lock_hint when `rc` is a lock error.
  absl::Status Error(int rc, absl::string_view step) const;

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  Database(sqlite3* db, std::string path, std::string what, std::string lock_hint);

  sqlite3* db_;
  const std::string path_;
  const std::string what_;
  const std::string lock_hint_;
};

// A prepared statement, finalized when it goes out of scope. Not thread-safe.
class Statement {
 public:
  Statement(const Database& db, const char* sql);
  Statement(sqlite3* db, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // SQLITE_OK when it was prepared.
  int rc() const { return rc_; }
  sqlite3_stmt* get() { return stmt_; }

  // Binds `text` (copied) as parameter `index` (1-based).
  void BindText(int index, absl::string_view text);
  // Column `index` (0-based) of the current row as text ("" for NULL).
  std::string ColumnText(int index);

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

}  // namespace hb
