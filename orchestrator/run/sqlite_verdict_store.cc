#include "orchestrator/run/sqlite_verdict_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/base/json.h"
#include "common/base/status_macros.h"

namespace hb {
namespace {

constexpr char kSchemaVersion[] = "1";

constexpr char kJournalSchema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS rows("
    " checkpoint TEXT NOT NULL, prompt_id TEXT NOT NULL,"
    " rubric_index INTEGER NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),"
    " criteria_met INTEGER, explanation TEXT, attempts INTEGER NOT NULL,"
    " prompt_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL,"
    " completion_tokens INTEGER NOT NULL, error TEXT,"
    " time_unix_ms INTEGER NOT NULL,"
    " PRIMARY KEY (checkpoint, prompt_id, rubric_index)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS batches(name TEXT PRIMARY KEY,"
    " input_path TEXT NOT NULL, requests INTEGER NOT NULL, file_id TEXT,"
    " batch_id TEXT, state TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS batch_rows("
    " checkpoint TEXT NOT NULL, prompt_id TEXT NOT NULL,"
    " rubric_index INTEGER NOT NULL, batch TEXT NOT NULL,"
    " attempts INTEGER NOT NULL,"
    " PRIMARY KEY (checkpoint, prompt_id, rubric_index)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS replies("
    " checkpoint TEXT NOT NULL, prompt_id TEXT NOT NULL, reply TEXT NOT NULL,"
    " time_unix_ms INTEGER NOT NULL,"
    " PRIMARY KEY (checkpoint, prompt_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS runs(started_unix_ms INTEGER NOT NULL,"
    " wall_ms INTEGER NOT NULL);";

// Journals written before the verdict cache (resp. batch grading, simulator detection) have no
// rows.from_cache (resp. rows.batch, rows.simulated): add it with the default 0 (their rows were
// all graded online; a simulator was then declared by --simulated-verdicts, not recorded).
absl::Status AddFlagColumn(Database& db, const std::string& column) {
  const std::string select = "SELECT " + column + " FROM rows LIMIT 0";
  if (Statement(db, select.c_str()).rc() == SQLITE_OK) return absl::OkStatus();
  return db.Exec("ALTER TABLE rows ADD COLUMN " + column + " INTEGER NOT NULL DEFAULT 0");
}

// The journal file with the project's SQLite policy (common/sqlite/database.h), its schema
// and the columns older journals lack.
absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& path) {
  DatabaseOptions options;
  options.what = "journal";
  options.lock_hint = " (is another hb-orchestrator using this --out folder?)";
  options.busy_timeout = absl::Seconds(5);
  options.schema = kJournalSchema;
  for (const char* column : {"from_cache", "batch", "simulated"}) {
    options.migrations.push_back([column](Database& db) { return AddFlagColumn(db, column); });
  }
  return Database::Open(path, options);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The meta rows this run expects, in a stable order: (key, value).
std::vector<std::pair<std::string, std::string>> MetaPairs(const JournalMeta& meta) {
  std::vector<std::pair<std::string, std::string>> pairs = {
      {"schema_version", kSchemaVersion},
      {"dataset_sha256", meta.dataset_sha256},
  };
  for (const IdentityField& field : IdentityFields(meta.grader)) {
    pairs.emplace_back(field.journal_key, field.value);
  }
  pairs.emplace_back("tool_version", meta.tool_version);
  for (const auto& [checkpoint, sha] : meta.responses_sha256) {
    pairs.emplace_back(absl::StrCat("responses_sha256:", checkpoint), sha);
  }
  return pairs;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ReadMeta(Database& db) {
  std::vector<std::pair<std::string, std::string>> out;
  Statement stmt(db, "SELECT key, value FROM meta");
  if (stmt.rc() != SQLITE_OK) return db.Error(stmt.rc(), "reading meta");
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    out.emplace_back(stmt.ColumnText(0), stmt.ColumnText(1));
  }
  if (rc != SQLITE_DONE) return db.Error(rc, "reading meta");
  return out;
}

absl::Status WriteMeta(Database& db,
                       const std::vector<std::pair<std::string, std::string>>& pairs) {
  Statement stmt(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)");
  if (stmt.rc() != SQLITE_OK) return db.Error(stmt.rc(), "writing meta");
  for (const auto& [key, value] : pairs) {
    sqlite3_reset(stmt.get());
    stmt.BindText(1, key);
    stmt.BindText(2, value);
    const int rc = sqlite3_step(stmt.get());
    if (rc != SQLITE_DONE) return db.Error(rc, "writing meta");
  }
  return absl::OkStatus();
}

// Compares the journal's meta with this run's. Returns the first difference as
// kFailedPrecondition, or the pairs to add (new checkpoints, or everything for a new journal).
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> CheckMeta(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& existing,
    const std::vector<std::pair<std::string, std::string>>& wanted) {
  std::vector<std::pair<std::string, std::string>> to_add;
  for (const auto& [key, value] : wanted) {
    const std::pair<std::string, std::string>* found = nullptr;
    for (const auto& pair : existing) {
      if (pair.first == key) found = &pair;
    }
    if (found == nullptr) {
      // A journal without meta is new. In an existing journal only a new checkpoint may be
      // added; any other missing key means the journal is from another version.
      if (!existing.empty() && !absl::StartsWith(key, "responses_sha256:")) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "journal %s belongs to another run: %s is missing in the journal but '%s' for this "
            "run; use another --out folder, or --force-new to move the old journal aside",
            path, key, value));
      }
      to_add.emplace_back(key, value);
      continue;
    }
    if (found->second != value) {
      std::string field = key;
      if (absl::StartsWith(key, "responses_sha256:")) {
        field = absl::StrCat("responses_sha256 of checkpoint '",
                             key.substr(std::strlen("responses_sha256:")), "'");
      }
      return absl::FailedPreconditionError(absl::StrFormat(
          "journal %s belongs to another run: %s is '%s' in the journal but '%s' for this run; "
          "use another --out folder, or --force-new to move the old journal aside",
          path, field, found->second, value));
    }
  }
  // A grader field the journal has and this run does not (a default-valued identity field is
  // not listed: a chat run must not resume a Responses grader's journal).
  for (const auto& [key, value] : existing) {
    if (!absl::StartsWith(key, "grader_")) continue;
    bool wanted_key = false;
    for (const auto& pair : wanted) wanted_key = wanted_key || pair.first == key;
    if (!wanted_key) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "journal %s belongs to another run: %s is '%s' in the journal but not set for this "
          "run; use another --out folder, or --force-new to move the old journal aside",
          path, key, value));
    }
  }
  return to_add;
}

std::string MoveAsideSuffix() {
  return absl::StrCat(".old-",
                      absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()));
}

// A 0-byte journal is a truncated or clobbered one, not a fresh start: SQLite would open it as
// an empty database and the run would silently grade everything again.
absl::Status CheckNotEmpty(const std::string& path, bool force_new) {
  struct stat st;
  if (force_new || ::stat(path.c_str(), &st) != 0 || st.st_size != 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("journal ", path,
                   " is empty (0 bytes): it lost what it held; delete it to grade everything "
                   "again, or use --force-new to move it aside"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteVerdictStore>> SqliteVerdictStore::Open(
    const SqliteVerdictStoreOptions& options) {
  const std::string& path = options.path;
  const std::vector<std::pair<std::string, std::string>> wanted = MetaPairs(options.meta);
  std::string moved_aside;
  HB_RETURN_IF_ERROR(CheckNotEmpty(path, options.force_new));

  for (int round = 0; round < 2; ++round) {
    HB_ASSIGN_OR_RETURN(std::unique_ptr<Database> database, OpenDatabase(path));
    absl::StatusOr<std::vector<std::pair<std::string, std::string>>> existing = ReadMeta(*database);
    if (!existing.ok()) return existing.status();
    absl::StatusOr<std::vector<std::pair<std::string, std::string>>> to_add =
        CheckMeta(path, *existing, wanted);
    const bool move_aside = round == 0 && options.force_new && !existing->empty();
    if (!to_add.ok() || move_aside) {
      if (!move_aside) return to_add.status();
      // --force-new: move the old journal aside and start again with an empty one. A clean
      // close checkpoints the WAL into the main file, so moving the main file is enough; the
      // -wal file is moved too in case it survived.
      database.reset();
      moved_aside = path + MoveAsideSuffix();
      if (std::rename(path.c_str(), moved_aside.c_str()) != 0) {
        return absl::PermissionDeniedError(absl::StrCat("journal ", path, ": cannot move to ",
                                                        moved_aside, ": ", std::strerror(errno)));
      }
      for (const char* suffix : {"-wal", "-shm"}) {
        const std::string side = path + suffix;
        if (FileExists(side)) std::rename(side.c_str(), (moved_aside + suffix).c_str());
      }
      continue;
    }
    if (!to_add->empty()) HB_RETURN_IF_ERROR(WriteMeta(*database, *to_add));
    auto store = std::unique_ptr<SqliteVerdictStore>(
        new SqliteVerdictStore(path, std::move(database), options));
    store->moved_aside_path_ = moved_aside;
    return store;
  }
  return absl::InternalError("unreachable");
}

SqliteVerdictStore::SqliteVerdictStore(std::string path, std::unique_ptr<Database> database,
                                       SqliteVerdictStoreOptions options)
    : path_(std::move(path)), options_(std::move(options)), database_(std::move(database)) {
  db_ = database_->get();
  writer_ = std::thread([this] { WriterLoop(); });
}

SqliteVerdictStore::~SqliteVerdictStore() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    queue_cv_.SignalAll();
  }
  writer_.join();
  absl::MutexLock lock(&db_mu_);
  db_ = nullptr;
  database_.reset();
}

void SqliteVerdictStore::Append(RowRecord row, CommitCallback on_commit) {
  Enqueue(Queued{std::move(row), std::nullopt, std::move(on_commit)});
}

void SqliteVerdictStore::AppendReply(ReplyRecord reply, CommitCallback on_commit) {
  Enqueue(Queued{std::nullopt, std::move(reply), std::move(on_commit)});
}

void SqliteVerdictStore::Enqueue(Queued entry) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(entry));
  ++appended_;
  if (static_cast<int>(queue_.size()) == 1 ||
      static_cast<int>(queue_.size()) >= options_.batch_rows) {
    queue_cv_.Signal();
  }
}

absl::Status SqliteVerdictStore::Flush() {
  absl::MutexLock lock(&mu_);
  const int64_t target = appended_;
  flush_requested_ = true;
  queue_cv_.SignalAll();
  while (completed_ < target) completed_cv_.Wait(&mu_);
  return write_error_;
}

int64_t SqliteVerdictStore::transactions_committed() const {
  absl::MutexLock lock(&mu_);
  return transactions_;
}

void SqliteVerdictStore::WriterLoop() {
  while (true) {
    std::vector<Queued> batch;
    {
      absl::MutexLock lock(&mu_);
      while (queue_.empty() && !shutting_down_) queue_cv_.Wait(&mu_);
      if (queue_.empty() && shutting_down_) return;
      // Give the batch `batch_interval` to fill up, unless it is full or someone waits. The
      // wait is bounded by real time on purpose: batching is a throughput device, not logic.
      bool timed_out = false;
      while (!timed_out && static_cast<int>(queue_.size()) < options_.batch_rows &&
             !flush_requested_ && !shutting_down_) {
        timed_out = queue_cv_.WaitWithTimeout(&mu_, options_.batch_interval);
      }
      const size_t n =
          std::min(queue_.size(), static_cast<size_t>(std::max(1, options_.batch_rows)));
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      if (queue_.empty()) flush_requested_ = false;
    }
    absl::Status status = WriteBatch(batch);
    {
      absl::MutexLock lock(&mu_);
      if (status.ok()) {
        ++transactions_;
      } else if (write_error_.ok()) {
        write_error_ = status;
      }
    }
    // Callbacks run without our locks held: they take the dispatcher's.
    for (Queued& entry : batch) {
      if (entry.on_commit) entry.on_commit(status);
    }
    absl::MutexLock lock(&mu_);
    completed_ += static_cast<int64_t>(batch.size());
    completed_cv_.SignalAll();
  }
}

absl::Status SqliteVerdictStore::WriteBatch(const std::vector<Queued>& batch) {
  absl::MutexLock lock(&db_mu_);
  return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_mu_) -> absl::Status {
    // An ok row is final: a later failure of the same row (e.g. a duplicate delivery) never
    // replaces it. Attempts add up across runs.
    Statement insert_row(
        db_,
        "INSERT INTO rows(checkpoint, prompt_id, rubric_index, status, criteria_met,"
        " explanation, attempts, prompt_tokens, cached_tokens, completion_tokens,"
        " error, time_unix_ms, from_cache, batch, simulated)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
        " ON CONFLICT(checkpoint, prompt_id, rubric_index) DO UPDATE SET"
        " status = excluded.status, criteria_met = excluded.criteria_met,"
        " explanation = excluded.explanation,"
        " attempts = rows.attempts + excluded.attempts,"
        " prompt_tokens = rows.prompt_tokens + excluded.prompt_tokens,"
        " cached_tokens = rows.cached_tokens + excluded.cached_tokens,"
        " completion_tokens = rows.completion_tokens + excluded.completion_tokens,"
        " error = excluded.error, time_unix_ms = excluded.time_unix_ms,"
        " from_cache = excluded.from_cache, batch = excluded.batch,"
        " simulated = excluded.simulated"
        " WHERE rows.status != 'ok'");
    // A task's first reply is the one its rows were graded on: never replace it.
    Statement insert_reply(db_,
                           "INSERT OR IGNORE INTO replies(checkpoint, prompt_id, reply,"
                           " time_unix_ms) VALUES (?1, ?2, ?3, ?4)");
    if (insert_row.rc() != SQLITE_OK) {
      return database_->Error(insert_row.rc(), "preparing insert");
    }
    if (insert_reply.rc() != SQLITE_OK) {
      return database_->Error(insert_reply.rc(), "preparing reply insert");
    }
    for (const Queued& entry : batch) {
      HB_RETURN_IF_ERROR(entry.row.has_value() ? WriteRow(insert_row, *entry.row)
                                               : WriteReply(insert_reply, *entry.reply));
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteVerdictStore::WriteReply(Statement& insert, const ReplyRecord& reply) {
  sqlite3_stmt* const s = insert.get();
  sqlite3_reset(s);
  insert.BindText(1, reply.checkpoint);
  insert.BindText(2, reply.prompt_id);
  insert.BindText(3, reply.reply);
  sqlite3_bind_int64(s, 4, absl::ToUnixMillis(reply.time));
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return database_->Error(rc, "inserting a reply");
  return absl::OkStatus();
}

absl::Status SqliteVerdictStore::WriteRow(Statement& insert, const RowRecord& row) {
  sqlite3_stmt* const s = insert.get();
  sqlite3_reset(s);
  insert.BindText(1, row.key.checkpoint);
  insert.BindText(2, row.key.prompt_id);
  sqlite3_bind_int(s, 3, row.key.rubric_index);
  insert.BindText(4, row.ok ? "ok" : "failed");
  if (row.ok) {
    sqlite3_bind_int(s, 5, row.criteria_met ? 1 : 0);
  } else {
    sqlite3_bind_null(s, 5);
  }
  insert.BindText(6, row.explanation);
  sqlite3_bind_int(s, 7, row.attempts);
  sqlite3_bind_int64(s, 8, row.prompt_tokens);
  sqlite3_bind_int64(s, 9, row.cached_tokens);
  sqlite3_bind_int64(s, 10, row.completion_tokens);
  insert.BindText(11, row.error);
  sqlite3_bind_int64(s, 12, absl::ToUnixMillis(row.time));
  sqlite3_bind_int(s, 13, row.from_cache ? 1 : 0);
  sqlite3_bind_int(s, 14, row.batch ? 1 : 0);
  sqlite3_bind_int(s, 15, row.simulated ? 1 : 0);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return database_->Error(rc, "inserting a row");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RowRecord>> SqliteVerdictStore::Rows(const std::string& checkpoint) {
  absl::MutexLock lock(&db_mu_);
  Statement stmt(db_,
                 "SELECT prompt_id, rubric_index, status, criteria_met, explanation, attempts,"
                 " prompt_tokens, cached_tokens, completion_tokens, error, time_unix_ms,"
                 " from_cache, batch, simulated FROM rows WHERE checkpoint = ?1"
                 " ORDER BY prompt_id, rubric_index");
  if (stmt.rc() != SQLITE_OK) return database_->Error(stmt.rc(), "reading rows");
  stmt.BindText(1, checkpoint);
  std::vector<RowRecord> out;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = stmt.get();
    RowRecord row;
    row.key.checkpoint = checkpoint;
    row.key.prompt_id = stmt.ColumnText(0);
    row.key.rubric_index = sqlite3_column_int(s, 1);
    row.ok = stmt.ColumnText(2) == "ok";
    row.criteria_met = sqlite3_column_int(s, 3) != 0;
    row.explanation = stmt.ColumnText(4);
    row.attempts = sqlite3_column_int(s, 5);
    row.prompt_tokens = sqlite3_column_int64(s, 6);
    row.cached_tokens = sqlite3_column_int64(s, 7);
    row.completion_tokens = sqlite3_column_int64(s, 8);
    row.error = stmt.ColumnText(9);
    row.time = absl::FromUnixMillis(sqlite3_column_int64(s, 10));
    row.from_cache = sqlite3_column_int(s, 11) != 0;
    row.batch = sqlite3_column_int(s, 12) != 0;
    row.simulated = sqlite3_column_int(s, 13) != 0;
    out.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return database_->Error(rc, "reading rows");
  return out;
}

absl::StatusOr<bool> SqliteVerdictStore::AnySimulatedRow() {
  absl::MutexLock lock(&db_mu_);
  Statement stmt(db_, "SELECT EXISTS(SELECT 1 FROM rows WHERE simulated != 0)");
  if (stmt.rc() != SQLITE_OK) return database_->Error(stmt.rc(), "reading rows");
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return database_->Error(rc, "reading rows");
  return sqlite3_column_int(stmt.get(), 0) != 0;
}

absl::Status SqliteVerdictStore::InTransaction(const std::function<absl::Status()>& body) {
  HB_RETURN_IF_ERROR(database_->Exec("BEGIN IMMEDIATE"));
  absl::Status status = body();
  if (!status.ok()) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return status;
  }
  return database_->Exec("COMMIT");
}

absl::StatusOr<std::vector<BatchRecord>> SqliteVerdictStore::Batches() {
  absl::MutexLock lock(&db_mu_);
  Statement stmt(db_,
                 "SELECT name, input_path, requests, file_id, batch_id, state FROM batches"
                 " ORDER BY name");
  if (stmt.rc() != SQLITE_OK) return database_->Error(stmt.rc(), "reading batches");
  std::vector<BatchRecord> out;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = stmt.get();
    out.push_back(BatchRecord{stmt.ColumnText(0), stmt.ColumnText(1), sqlite3_column_int64(s, 2),
                              stmt.ColumnText(3), stmt.ColumnText(4), stmt.ColumnText(5)});
  }
  if (rc != SQLITE_DONE) return database_->Error(rc, "reading batches");
  return out;
}

absl::Status SqliteVerdictStore::SaveBatch(const BatchRecord& batch,
                                           const std::vector<BatchRowEntry>& rows) {
  absl::MutexLock lock(&db_mu_);
  return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_mu_) -> absl::Status {
    Statement b(db_,
                "INSERT OR REPLACE INTO batches(name, input_path, requests, file_id, batch_id,"
                " state) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    if (b.rc() != SQLITE_OK) return database_->Error(b.rc(), "preparing a batch");
    b.BindText(1, batch.name);
    b.BindText(2, batch.input_path);
    sqlite3_bind_int64(b.get(), 3, batch.requests);
    b.BindText(4, batch.file_id);
    b.BindText(5, batch.batch_id);
    b.BindText(6, batch.state);
    int rc = sqlite3_step(b.get());
    if (rc != SQLITE_DONE) return database_->Error(rc, "saving a batch");
    Statement r(db_,
                "INSERT OR REPLACE INTO batch_rows(checkpoint, prompt_id, rubric_index, batch,"
                " attempts) VALUES (?1, ?2, ?3, ?4, ?5)");
    if (r.rc() != SQLITE_OK) return database_->Error(r.rc(), "preparing batch rows");
    for (const BatchRowEntry& row : rows) {
      sqlite3_stmt* s = r.get();
      sqlite3_reset(s);
      r.BindText(1, row.key.checkpoint);
      r.BindText(2, row.key.prompt_id);
      sqlite3_bind_int(s, 3, row.key.rubric_index);
      r.BindText(4, row.batch);
      sqlite3_bind_int(s, 5, row.attempts);
      rc = sqlite3_step(s);
      if (rc != SQLITE_DONE) return database_->Error(rc, "saving batch rows");
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<BatchRowEntry>> SqliteVerdictStore::BatchRows() {
  absl::MutexLock lock(&db_mu_);
  Statement stmt(db_,
                 "SELECT checkpoint, prompt_id, rubric_index, batch, attempts FROM batch_rows");
  if (stmt.rc() != SQLITE_OK) return database_->Error(stmt.rc(), "reading batch rows");
  std::vector<BatchRowEntry> out;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = stmt.get();
    out.push_back(
        BatchRowEntry{RowKey{stmt.ColumnText(0), stmt.ColumnText(1), sqlite3_column_int(s, 2)},
                      stmt.ColumnText(3), sqlite3_column_int(s, 4)});
  }
  if (rc != SQLITE_DONE) return database_->Error(rc, "reading batch rows");
  return out;
}

absl::Status SqliteVerdictStore::ForgetBatchRows(const std::vector<RowKey>& keys) {
  if (keys.empty()) return absl::OkStatus();
  absl::MutexLock lock(&db_mu_);
  return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_mu_) -> absl::Status {
    Statement d(db_,
                "DELETE FROM batch_rows WHERE checkpoint = ?1 AND prompt_id = ?2 AND"
                " rubric_index = ?3");
    if (d.rc() != SQLITE_OK) return database_->Error(d.rc(), "preparing a delete");
    for (const RowKey& key : keys) {
      sqlite3_stmt* s = d.get();
      sqlite3_reset(s);
      d.BindText(1, key.checkpoint);
      d.BindText(2, key.prompt_id);
      sqlite3_bind_int(s, 3, key.rubric_index);
      const int rc = sqlite3_step(s);
      if (rc != SQLITE_DONE) return database_->Error(rc, "forgetting batch rows");
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<ReplyRecord>> SqliteVerdictStore::Replies(
    const std::string& checkpoint) {
  absl::MutexLock lock(&db_mu_);
  Statement stmt(db_,
                 "SELECT prompt_id, reply, time_unix_ms FROM replies WHERE checkpoint = ?1"
                 " ORDER BY prompt_id");
  if (stmt.rc() != SQLITE_OK) return database_->Error(stmt.rc(), "reading replies");
  stmt.BindText(1, checkpoint);
  std::vector<ReplyRecord> out;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    out.push_back(ReplyRecord{checkpoint, stmt.ColumnText(0), stmt.ColumnText(1),
                              absl::FromUnixMillis(sqlite3_column_int64(stmt.get(), 2))});
  }
  if (rc != SQLITE_DONE) return database_->Error(rc, "reading replies");
  return out;
}

absl::Status SqliteVerdictStore::AddRunTime(absl::Time started, absl::Duration wall) {
  absl::MutexLock lock(&db_mu_);
  return database_->Exec(absl::StrCat("INSERT INTO runs(started_unix_ms, wall_ms) VALUES (",
                                      absl::ToUnixMillis(started), ", ",
                                      absl::ToInt64Milliseconds(wall), ")"));
}

absl::StatusOr<absl::Duration> SqliteVerdictStore::TotalRunTime() {
  absl::MutexLock lock(&db_mu_);
  Statement stmt(db_, "SELECT COALESCE(SUM(wall_ms), 0) FROM runs");
  if (stmt.rc() != SQLITE_OK) return database_->Error(stmt.rc(), "reading run times");
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return database_->Error(rc, "reading run times");
  return absl::Milliseconds(sqlite3_column_int64(stmt.get(), 0));
}

}  // namespace hb
