#include "environment/sqlite_result_store.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "common/base/logging.h"
#include "common/base/sqlite_status.h"
#include "environment/grpc/env_service.h"

namespace hb::env {
namespace {

absl::Status SqliteError(sqlite3* db, int rc, const std::string& path, absl::string_view what) {
  return SqliteStatus(rc, absl::StrCat("cache db ", path, ": ", what, ": ",
                                       db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

// Runs `sql` with `key` (and `blob`) bound as ?1 (and ?2).
int Run(sqlite3* db, const char* sql, const std::string& key, const std::string* blob) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(stmt, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    if (blob != nullptr) {
      sqlite3_bind_blob(stmt, 2, blob->data(), static_cast<int>(blob->size()), SQLITE_TRANSIENT);
    }
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  sqlite3_finalize(stmt);
  return rc;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteResultStore>> SqliteResultStore::Open(
    const std::string& path) {
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(db,
                      "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                      "CREATE TABLE IF NOT EXISTS results (seq INTEGER PRIMARY KEY "
                      "AUTOINCREMENT, key TEXT UNIQUE NOT NULL, result BLOB NOT NULL);",
                      nullptr, nullptr, nullptr);
  }
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(db, rc, path, "open");
    sqlite3_close(db);
    return status;
  }
  return std::unique_ptr<SqliteResultStore>(new SqliteResultStore(db, path));
}

SqliteResultStore::~SqliteResultStore() {
  absl::MutexLock lock(&mu_);
  sqlite3_close(db_);
}

absl::StatusOr<std::vector<std::pair<std::string, SubmitResult>>> SqliteResultStore::LoadAll() {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, SubmitResult>> out;
  sqlite3_stmt* stmt = nullptr;
  int rc =
      sqlite3_prepare_v2(db_, "SELECT key, result FROM results ORDER BY seq", -1, &stmt, nullptr);
  while (rc == SQLITE_OK || rc == SQLITE_ROW) {
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) break;
    const auto* key = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    const auto* blob = static_cast<const char*>(sqlite3_column_blob(stmt, 1));
    env_v1::SubmitResponse proto;
    if (key == nullptr || !proto.ParseFromArray(blob, sqlite3_column_bytes(stmt, 1))) {
      sqlite3_finalize(stmt);
      return absl::DataLossError(absl::StrCat("cache db ", path_, ": unreadable row"));
    }
    out.emplace_back(std::string(key, sqlite3_column_bytes(stmt, 0)), SubmitResultFromProto(proto));
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, path_, "read");
  return out;
}

void SqliteResultStore::Put(const std::string& key, const SubmitResult& result) {
  env_v1::SubmitResponse proto;
  SubmitResultToProto(result, &proto);
  proto.set_from_cache(false);
  const std::string blob = proto.SerializeAsString();
  absl::MutexLock lock(&mu_);
  const int rc =
      Run(db_, "INSERT OR REPLACE INTO results (key, result) VALUES (?1, ?2)", key, &blob);
  if (rc != SQLITE_OK) HB_LOG_WARN("{}", SqliteError(db_, rc, path_, "write").ToString());
}

void SqliteResultStore::Erase(const std::string& key) {
  absl::MutexLock lock(&mu_);
  const int rc = Run(db_, "DELETE FROM results WHERE key = ?1", key, nullptr);
  if (rc != SQLITE_OK) HB_LOG_WARN("{}", SqliteError(db_, rc, path_, "delete").ToString());
}

}  // namespace hb::env
