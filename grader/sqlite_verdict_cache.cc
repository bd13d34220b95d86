#include "grader/sqlite_verdict_cache.h"

#include <sqlite3.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/base/logging.h"

namespace hb {
namespace {

constexpr char kSchema[] =
    "CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, raw_reply TEXT NOT NULL, "
    "model TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, "
    "completion_tokens INTEGER NOT NULL, created_unix_ms INTEGER NOT NULL) WITHOUT ROWID";
constexpr char kLookup[] =
    "SELECT raw_reply, model, prompt_tokens, cached_tokens, completion_tokens FROM verdicts "
    "WHERE key = ?1";
constexpr char kStore[] =
    "INSERT OR IGNORE INTO verdicts (key, raw_reply, model, prompt_tokens, cached_tokens, "
    "completion_tokens, created_unix_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteVerdictCache>> SqliteVerdictCache::Open(
    const std::string& path, SqliteVerdictCacheOptions options) {
  DatabaseOptions db_options;
  db_options.what = "--verdict-cache";
  db_options.busy_timeout = options.busy_timeout;
  db_options.schema = kSchema;
  db_options.check_write_lock = true;
  absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path, db_options);
  if (!db.ok()) {
    return absl::Status(
        db.status().code(),
        absl::StrCat(db.status().message(),
                     " (give a writable path for a new SQLite file, or an existing verdict "
                     "cache; move away a file that is not one)"));
  }
  std::unique_ptr<SqliteVerdictCache> cache(new SqliteVerdictCache(*std::move(db)));
  absl::MutexLock lock(&cache->mu_);
  cache->lookup_ = std::make_unique<Statement>(*cache->db_, kLookup);
  cache->store_ = std::make_unique<Statement>(*cache->db_, kStore);
  if (cache->lookup_->rc() != SQLITE_OK || cache->store_->rc() != SQLITE_OK) {
    // The table exists with other columns: someone else's file.
    return absl::FailedPreconditionError(
        absl::StrCat("--verdict-cache ", path, ": its `verdicts` table is not a verdict cache's (",
                     sqlite3_errmsg(cache->db_->get()), "); give another path"));
  }
  return cache;
}

SqliteVerdictCache::SqliteVerdictCache(std::unique_ptr<Database> db)
    : db_(std::move(db)), path_(db_->path()), log_(Clock::Real(), {}) {}

void SqliteVerdictCache::LogError(absl::string_view what, int rc) {
  if (auto suffix = log_.Admit(what)) {
    HB_LOG_WARN("verdict cache {}: {} failed{}: {} ({}; grading goes on without the cache)", path_,
                std::string(what), *suffix, sqlite3_errmsg(db_->get()), sqlite3_errstr(rc));
  }
}

SqliteVerdictCache::~SqliteVerdictCache() {
  absl::MutexLock lock(&mu_);
  lookup_.reset();
  store_.reset();
}

std::optional<CachedVerdict> SqliteVerdictCache::Lookup(const std::string& key) {
  absl::MutexLock lock(&mu_);
  Statement& lookup = *lookup_;
  sqlite3_stmt* const stmt = lookup.get();
  sqlite3_reset(stmt);
  lookup.BindText(1, key);
  const int rc = sqlite3_step(stmt);
  std::optional<CachedVerdict> out;
  if (rc == SQLITE_ROW) {
    CachedVerdict v;
    v.raw_reply = lookup.ColumnText(0);
    v.model = lookup.ColumnText(1);
    v.usage.prompt_tokens = sqlite3_column_int64(stmt, 2);
    v.usage.cached_tokens = sqlite3_column_int64(stmt, 3);
    v.usage.completion_tokens = sqlite3_column_int64(stmt, 4);
    out = std::move(v);
  } else if (rc != SQLITE_DONE) {
    LogError("read", rc);
  }
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  return out;
}

void SqliteVerdictCache::Store(const std::string& key, const CachedVerdict& verdict) {
  absl::MutexLock lock(&mu_);
  Statement& store = *store_;
  sqlite3_stmt* const stmt = store.get();
  sqlite3_reset(stmt);
  store.BindText(1, key);
  store.BindText(2, verdict.raw_reply);
  store.BindText(3, verdict.model);
  sqlite3_bind_int64(stmt, 4, verdict.usage.prompt_tokens);
  sqlite3_bind_int64(stmt, 5, verdict.usage.cached_tokens);
  sqlite3_bind_int64(stmt, 6, verdict.usage.completion_tokens);
  sqlite3_bind_int64(stmt, 7, absl::ToUnixMillis(absl::Now()));
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) {
    LogError("write", rc);
  }
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
}

}  // namespace hb
