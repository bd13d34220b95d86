// CheckpointWatcher: the logic of `hb-orchestrator watch`, without processes, signals or inotify.
// A training run writes DIR/<name>/responses.jsonl (or .gz) and then a ready marker
// (DIR/<name>/DONE); each Pass() scans DIR and grades, one at a time in natural name order
// (step-100 < step-200 < step-1000), every ready checkpoint version that is due, through an
// injected GradeFunction (the binary passes run's grading core, run/grading_job.h RunGrading).
//
// Exactly once: a version is keyed by (responses sha256, dataset sha256, grader fingerprint);
// its "started" and "graded" records go to OUT/watch.jsonl (watch_journal.h) before the next
// step, so a key graded once is never graded again, across passes and restarts. A started but
// unfinished version resumes in the same run folder (run's journal keeps its graded rows).
// A responses file that changes is a new key, hence a new version in its own folder
// (OUT/versions/<name>/v<N>); the old one stays. OUT/<name> is a symlink to the newest version's
// report folder that exists.
//
// A grading that does not complete (run's exit code other than 0) leaves the version not done:
// it is retried at a later pass, after poll_interval x 1, 2, 4, 8, then 10 (capped), counted
// from the failure on the injected clock; other checkpoints go on meanwhile. Exit 4
// (interrupted) is not a failure: the version resumes at the next start.
//
// Folders without the marker are never read (not even hashed). Not thread-safe: one thread
// calls Pass; `stop` may be set from another.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/base/clock.h"
#include "orchestrator/watch/watch_journal.h"

namespace hb {

// Natural order of checkpoint names: runs of digits compare as numbers (step-100 < step-200 <
// step-1000), everything else byte by byte; ties by the plain byte order.
bool NaturalLess(absl::string_view a, absl::string_view b);

// Hex sha256 of the bytes of the file at `path` as stored (the identity run's journal gives a
// dataset or responses file), read in pieces. kNotFound / kDataLoss naming the path.
absl::StatusOr<std::string> Sha256OfFile(const std::string& path);

// One checkpoint version to grade.
struct CheckpointVersion {
  std::string name;
  // DIR/<name>/responses.jsonl or .jsonl.gz.
  std::string responses_path;
  std::string responses_sha256;
  int version = 1;
  // Where run keeps its journal and writes <run_dir>/<name>/: OUT/versions/<name>/v<version>.
  std::string run_dir;
};

// What a grading did.
struct GradeOutcome {
  // run's exit code: 0 graded, 3 rows failed/missing, 4 interrupted, 2 bad input, 1 internal.
  int exit_code = 1;
  // The report's score (NaN: none) and cost; the first line of the error for codes 1 and 2.
  double score = 0;
  double cost_usd = 0;
  std::string error;
};

using GradeFunction = std::function<GradeOutcome(const CheckpointVersion&)>;

struct CheckpointWatcherOptions {
  std::string checkpoints_dir;
  std::string out;
  std::string ready_marker = "DONE";
  absl::Duration poll_interval = absl::Seconds(30);
  // The key's other two parts, fixed for the watcher's life.
  std::string dataset_sha256;
  std::string grader_fingerprint;
  // Not owned; outlives the watcher.
  const Clock* clock = &Clock::Real();
  GradeFunction grade;
  // After a grading that left a report: the names whose OUT/<name> report exists, in natural
  // order (the binary writes OUT/comparison.{json,html} over them). May be empty.
  std::function<void(const std::vector<std::string>& names)> on_report;
  // At the start of each pass and after each checkpoint graded in it: how many ready folders
  // are not graded yet (those waiting for a retry included). May be empty.
  std::function<void(int64_t pending)> on_pending;
  // One line per event (queued, graded, failed with its retry time, ...); default stderr.
  std::function<void(const std::string& line)> log;
};

// What one pass did.
struct PassSummary {
  int graded = 0;
  int failed = 0;
  bool interrupted = false;
  // The most serious exit code among this pass's gradings, as `run --once` reports it:
  // 1 over 2 over 4 over 3 over 0.
  int exit_code = 0;
};

class CheckpointWatcher {
 public:
  // Reads OUT/watch.jsonl (created when missing). `options.grade` is required. Errors:
  // WatchJournal::Open's.
  static absl::StatusOr<std::unique_ptr<CheckpointWatcher>> Open(CheckpointWatcherOptions options);

  // Scans checkpoints_dir and grades every due version, one at a time; returns early (before
  // the next checkpoint) once `stop` is set. kInternal when the watch journal cannot be written
  // (the watcher must stop: it could no longer keep its promise).
  absl::StatusOr<PassSummary> Pass(const std::atomic<bool>& stop);

  // When the next pass is due: now + poll_interval, or the earliest retry before that.
  absl::Time NextPassAt() const;

  // The folders under checkpoints_dir seen at the last pass (to watch them with inotify).
  const std::vector<std::string>& folders() const { return folders_; }

 private:
  struct Retry {
    int failures = 0;
    absl::Time at;
  };
  // What a ready folder stands for at this pass.
  struct Ready {
    std::string name;
    std::string responses_path;
  };
  struct FileStamp {
    int64_t size = 0, mtime_ns = 0, inode = 0;
    bool operator==(const FileStamp& o) const {
      return size == o.size && mtime_ns == o.mtime_ns && inode == o.inode;
    }
  };

  explicit CheckpointWatcher(CheckpointWatcherOptions options);
  std::vector<Ready> ScanReady();
  // The ready folders whose (responses, dataset, grader) key is not graded, in natural order.
  struct Pending {
    Ready ready;
    std::string sha256, key;
  };
  std::vector<Pending> ScanPending();
  absl::StatusOr<std::string> ResponsesSha256(const std::string& path);
  absl::StatusOr<CheckpointVersion> VersionFor(const Ready& ready, const std::string& sha256);
  absl::Status GradeOne(const CheckpointVersion& version, PassSummary& summary);
  absl::Status Record(const char* event, const CheckpointVersion& version,
                      const GradeOutcome& outcome, const std::string& retry_at);
  void PointAtReport(const CheckpointVersion& version);
  std::vector<std::string> NamesWithReports() const;
  std::string KeyOf(const std::string& responses_sha256) const;
  void Log(const std::string& line) const;

  CheckpointWatcherOptions options_;
  std::unique_ptr<WatchJournal> journal_;
  // Keys graded (from the journal), started versions by key, the highest version per name.
  absl::flat_hash_map<std::string, int> graded_;
  absl::flat_hash_map<std::string, WatchRecord> started_;
  absl::flat_hash_map<std::string, int> last_version_;
  absl::flat_hash_map<std::string, Retry> retries_;
  // sha256 of a responses file by path, valid while its stamp is unchanged.
  absl::flat_hash_map<std::string, std::pair<FileStamp, std::string>> hashes_;
  // Names already reported as ready without a responses file (logged once).
  absl::flat_hash_map<std::string, bool> warned_;
  std::vector<std::string> folders_;
  // The last error listing checkpoints_dir ("" when it could be listed).
  std::string listing_error_;
};

}  // namespace hb
