// WatchJournal: the state of `hb-orchestrator watch` in OUT/watch.jsonl, one JSON object a line,
// appended and synced before the watcher acts on it, so a restart (after SIGTERM or SIGKILL)
// knows which checkpoint versions are graded and which grading to resume in which folder.
//
//   {"event":"started","checkpoint":"step-100","version":1,"responses_sha256":"…",
//    "dataset_sha256":"…","grader":"<IdentityFingerprint>","run_dir":"versions/step-100/v1"}
//   {"event":"graded", … the same fields …, "exit_code":0,"score":0.41,"cost_usd":0.02}
//   {"event":"failed", … the same fields …, "exit_code":3,"retry_at":"2026-12-06T10:00:00Z"}
//
// A checkpoint version is identified by its key (responses sha256, dataset sha256, grader
// identity fingerprint); "graded" is written once per key. Only the last line may be torn (a
// process killed mid-append): it is ignored on reading; any other bad line is an error.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hb {

// The file name in OUT.
inline constexpr char kWatchJournalFileName[] = "watch.jsonl";

struct WatchRecord {
  // "started", "graded" or "failed".
  std::string event;
  std::string checkpoint;
  int version = 0;
  std::string responses_sha256, dataset_sha256, grader;
  // The version's run folder, relative to OUT.
  std::string run_dir;
  // "graded" and "failed": run's exit code; the score (NaN: none) and cost of the report.
  int exit_code = 0;
  double score = NAN;
  double cost_usd = 0;
  // "failed": when it is retried (RFC 3339), for readers; the watcher keeps its own schedule.
  std::string retry_at;

  // The version's identity: responses, dataset and grader, as one string.
  std::string Key() const { return responses_sha256 + "/" + dataset_sha256 + "/" + grader; }
};

class WatchJournal {
 public:
  // Opens (creating when missing) `path` and reads its records. Errors: kDataLoss naming the
  // path and line for a line that is not a record (other than a torn last line); I/O errors
  // naming the path.
  static absl::StatusOr<std::unique_ptr<WatchJournal>> Open(const std::string& path);
  ~WatchJournal();
  WatchJournal(const WatchJournal&) = delete;
  WatchJournal& operator=(const WatchJournal&) = delete;

  // The records read at Open plus those appended since, in order.
  const std::vector<WatchRecord>& records() const { return records_; }
  // Appends `record` as one line and syncs it to disk before returning. Not thread-safe.
  absl::Status Append(const WatchRecord& record);

 private:
  WatchJournal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  const std::string path_;
  const int fd_;
  std::vector<WatchRecord> records_;
};

// One record as its journal line (without the newline), and back. ParseWatchRecord's errors:
// kInvalidArgument naming the field.
std::string FormatWatchRecord(const WatchRecord& record);
absl::StatusOr<WatchRecord> ParseWatchRecord(const std::string& line);

}  // namespace hb
