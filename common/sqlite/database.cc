#include "common/sqlite/database.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "common/sqlite/sqlite_status.h"

namespace hb {
namespace {

// PRAGMA journal_mode=WAL, retried on SQLITE_BUSY until `give_up` (see the header).
int SetWalMode(sqlite3* db, absl::Time give_up) {
  for (;;) {
    const int rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
    if ((rc & 0xff) != SQLITE_BUSY || absl::Now() >= give_up) return rc;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

absl::StatusOr<int> UserVersion(Database& db) {
  Statement stmt(db, "PRAGMA user_version");
  if (stmt.rc() != SQLITE_OK) return db.Error(stmt.rc(), "reading the schema version");
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return db.Error(rc, "reading the schema version");
  return sqlite3_column_int(stmt.get(), 0);
}

// The schema, the migrations and the version stamp.
absl::Status Prepare(Database& db, const DatabaseOptions& options) {
  HB_ASSIGN_OR_RETURN(const int version, UserVersion(db));
  if (version > options.schema_version) {
    return absl::FailedPreconditionError(
        absl::StrCat(options.what, " ", db.path(), ": schema version ", version,
                     " was written by a newer version of this tool (this one reads up to ",
                     options.schema_version, "): use that version, or another file"));
  }
  if (!options.schema.empty()) HB_RETURN_IF_ERROR(db.Exec(options.schema));
  for (const auto& migrate : options.migrations) HB_RETURN_IF_ERROR(migrate(db));
  if (version != options.schema_version) {
    HB_RETURN_IF_ERROR(db.Exec(absl::StrCat("PRAGMA user_version=", options.schema_version)));
  }
  if (options.check_write_lock) HB_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE; ROLLBACK;"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                         const DatabaseOptions& options) {
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                    (options.serialized ? SQLITE_OPEN_FULLMUTEX : SQLITE_OPEN_NOMUTEX);
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<Database> db(new Database(raw, path, options.what, options.lock_hint));
  if (rc != SQLITE_OK) return db->Error(rc, "open");
  const int busy_ms = static_cast<int>(absl::ToInt64Milliseconds(options.busy_timeout));
  sqlite3_busy_timeout(raw, busy_ms);
  const int wal = SetWalMode(raw, absl::Now() + options.busy_timeout);
  if (wal != SQLITE_OK) return db->Error(wal, "PRAGMA journal_mode=WAL");
  HB_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=NORMAL"));
  HB_RETURN_IF_ERROR(Prepare(*db, options));
  return db;
}

Database::Database(sqlite3* db, std::string path, std::string what, std::string lock_hint)
    : db_(db), path_(std::move(path)), what_(std::move(what)), lock_hint_(std::move(lock_hint)) {}

Database::~Database() { sqlite3_close(db_); }

absl::Status Database::Exec(absl::string_view sql) {
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc, text);
}

absl::Status Database::Error(int rc, absl::string_view step) const {
  std::string text = absl::StrCat(what_, " ", path_, ": ", step, ": ",
                                  db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
  if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
    absl::StrAppend(&text, lock_hint_);
  return SqliteStatus(rc, std::move(text));
}

Statement::Statement(const Database& db, const char* sql) : Statement(db.get(), sql) {}

Statement::Statement(sqlite3* db, const char* sql) {
  rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::BindText(int index, absl::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

std::string Statement::ColumnText(int index) {
  const unsigned char* text = sqlite3_column_text(stmt_, index);
  const int size = sqlite3_column_bytes(stmt_, index);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), size);
}

}  // namespace hb
