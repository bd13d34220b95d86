// OutputLock: an exclusive flock(2) on <dir>/.lock held for a whole run, so two runs never
// write the same journal and reports at once (a second `run` on the same --out fails at once).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hb {

// The lock file's name inside the run folder.
inline constexpr char kOutputLockFileName[] = ".lock";

class OutputLock {
 public:
  // Creates <dir>/.lock when missing (dir must exist), takes the lock without waiting and
  // writes this process's pid in the file. Errors: kFailedPrecondition "another hb-orchestrator
  // holds <dir>/.lock (pid N)" when another open file holds it (another process, or another
  // OutputLock of this one); kPermissionDenied naming the file when it cannot be opened.
  // With `wait`, blocks until the holder releases it instead (`merge --when-complete`: two
  // shards finishing together merge one after the other, the second finding the merge done).
  static absl::StatusOr<std::unique_ptr<OutputLock>> Acquire(const std::string& dir,
                                                             bool wait = false);
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  // Releases the lock; the file stays (removing it would race with a waiting run).
  ~OutputLock();

  const std::string& path() const { return path_; }

 private:
  OutputLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  const std::string path_;
  const int fd_;
};

// The folders a command is about to create for its output folder `dir` (recorded before
// MakeDirs), so that a run that fails before writing anything takes them away again instead
// of leaving an --out folder that holds only .lock.
class NewOutputDirs {
 public:
  // Records `dir` and those of its parents that do not exist yet.
  explicit NewOutputDirs(const std::string& dir);

  // When this command created `dir` and it holds nothing but .lock (or nothing): removes the
  // lock file and every recorded folder, deepest first, that is empty. Call once the lock is
  // released. Never removes a folder that existed before, nor one with anything else in it.
  void RemoveIfUnused() const;

 private:
  std::vector<std::string> created_;  // deepest first
};

}  // namespace hb
