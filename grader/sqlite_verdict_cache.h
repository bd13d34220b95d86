// SqliteVerdictCache: the VerdictCache in one SQLite file (`--verdict-cache PATH`), shared by
// every process given the same path (hb-grader replicas on one volume, `run`'s embedded
// grader, hb-env): WAL journal, a busy timeout instead of lock errors, synchronous=NORMAL (a
// crash may lose the latest entries: they are only a cache, never a verdict of record).
//
// Schema (table `verdicts`, one row per request): key TEXT PRIMARY KEY (VerdictCacheKey),
// raw_reply, model, prompt_tokens, cached_tokens, completion_tokens, created_unix_ms.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/rate_limited_log.h"
#include "common/sqlite/database.h"
#include "grader/verdict_cache.h"

namespace hb {

struct SqliteVerdictCacheOptions {
  // How long a statement waits for another process's write lock before giving up.
  absl::Duration busy_timeout = absl::Seconds(10);
};

class SqliteVerdictCache final : public VerdictCache {
 public:
  // Opens or creates `path` and checks, before any grading, that it is a verdict cache this
  // process can read and write. Errors name `path` and the fix: kDataLoss (not a SQLite file,
  // or corrupt), kPermissionDenied (cannot be created, opened or written), kFailedPrecondition
  // (a `verdicts` table of another shape, or another process holding a lock past the timeout).
  static absl::StatusOr<std::unique_ptr<SqliteVerdictCache>> Open(
      const std::string& path, SqliteVerdictCacheOptions options = {});
  ~SqliteVerdictCache() override;

  // Thread-safe (one connection behind a mutex).
  std::optional<CachedVerdict> Lookup(const std::string& key) override;
  void Store(const std::string& key, const CachedVerdict& verdict) override;

  const std::string& path() const { return path_; }

 private:
  explicit SqliteVerdictCache(std::unique_ptr<Database> db);

  // A failed read or write, rate-limited (a full disk must not flood the log).
  void LogError(absl::string_view what, int rc) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::unique_ptr<Database> db_ ABSL_GUARDED_BY(mu_);
  // Prepared once at Open; finalized before db_ closes (declared after it).
  std::unique_ptr<Statement> lookup_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Statement> store_ ABSL_GUARDED_BY(mu_);
  const std::string path_;
  RateLimitedLog log_;
};

}  // namespace hb
