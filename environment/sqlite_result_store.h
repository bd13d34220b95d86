// SqliteResultStore: the result cache's SQLite file (`--cache-db`), so graded results survive a
// restart. One table (key, result as a serialized healthbench.env.v1.SubmitResponse, insertion
// sequence), WAL journal, synchronous=NORMAL (a crash may lose the latest results: they are
// only a cache).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/sqlite/database.h"
#include "environment/result_cache.h"

namespace hb::env {

class SqliteResultStore final : public ResultStore {
 public:
  // Opens or creates `path` (Database::Open's policy and errors, naming "cache db" and the path).
  static absl::StatusOr<std::unique_ptr<SqliteResultStore>> Open(const std::string& path);
  ~SqliteResultStore() override;

  // Thread-safe (one connection behind a mutex).
  absl::StatusOr<std::vector<std::pair<std::string, SubmitResult>>> LoadAll() override;
  void Put(const std::string& key, const SubmitResult& result) override;
  void Erase(const std::string& key) override;

 private:
  explicit SqliteResultStore(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  absl::Mutex mu_;
  const std::unique_ptr<Database> db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb::env
