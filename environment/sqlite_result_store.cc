#include "environment/sqlite_result_store.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "environment/env_proto.h"

namespace hb::env {
namespace {

// Runs `sql` with `key` (and `blob`) bound as ?1 (and ?2).
int Run(Database& db, const char* sql, const std::string& key, const std::string* blob) {
  Statement stmt(db, sql);
  if (stmt.rc() != SQLITE_OK) return stmt.rc();
  stmt.BindText(1, key);
  if (blob != nullptr) {
    sqlite3_bind_blob(stmt.get(), 2, blob->data(), static_cast<int>(blob->size()),
                      SQLITE_TRANSIENT);
  }
  const int rc = sqlite3_step(stmt.get());
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteResultStore>> SqliteResultStore::Open(
    const std::string& path) {
  DatabaseOptions options;
  options.what = "cache db";
  options.schema =
      "CREATE TABLE IF NOT EXISTS results (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT "
      "UNIQUE NOT NULL, result BLOB NOT NULL);";
  HB_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, options));
  return std::unique_ptr<SqliteResultStore>(new SqliteResultStore(std::move(db)));
}

SqliteResultStore::~SqliteResultStore() = default;

absl::StatusOr<std::vector<std::pair<std::string, SubmitResult>>> SqliteResultStore::LoadAll() {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, SubmitResult>> out;
  Statement select(*db_, "SELECT key, result FROM results ORDER BY seq");
  sqlite3_stmt* const stmt = select.get();
  int rc = select.rc();
  while (rc == SQLITE_OK || rc == SQLITE_ROW) {
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) break;
    const auto* key = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    const auto* blob = static_cast<const char*>(sqlite3_column_blob(stmt, 1));
    env_v1::SubmitResponse proto;
    if (key == nullptr || !proto.ParseFromArray(blob, sqlite3_column_bytes(stmt, 1))) {
      return absl::DataLossError(absl::StrCat("cache db ", db_->path(), ": unreadable row"));
    }
    out.emplace_back(std::string(key, sqlite3_column_bytes(stmt, 0)), SubmitResultFromProto(proto));
  }
  if (rc != SQLITE_DONE) return db_->Error(rc, "read");
  return out;
}

void SqliteResultStore::Put(const std::string& key, const SubmitResult& result) {
  env_v1::SubmitResponse proto;
  SubmitResultToProto(result, &proto);
  proto.set_from_cache(false);
  const std::string blob = proto.SerializeAsString();
  absl::MutexLock lock(&mu_);
  const int rc =
      Run(*db_, "INSERT OR REPLACE INTO results (key, result) VALUES (?1, ?2)", key, &blob);
  if (rc != SQLITE_OK) HB_LOG_WARN("{}", db_->Error(rc, "write").ToString());
}

void SqliteResultStore::Erase(const std::string& key) {
  absl::MutexLock lock(&mu_);
  const int rc = Run(*db_, "DELETE FROM results WHERE key = ?1", key, nullptr);
  if (rc != SQLITE_OK) HB_LOG_WARN("{}", db_->Error(rc, "delete").ToString());
}

}  // namespace hb::env
