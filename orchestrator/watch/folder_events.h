// FolderEvents: how `watch` waits between passes. Wait() returns when a watched folder changes
// (inotify, where the filesystem delivers events: local disks yes, NFS and most network volumes
// no), when Wake() is called (a signal), or at a deadline (the rescan every --poll-interval that
// finds what inotify missed). Linux only; without inotify it is a plain timed wait.
#pragma once

#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hb {

class FolderEvents {
 public:
  enum class Woken { kFolderChanged, kWake, kDeadline };

  // kInternal when the wake-up channel cannot be made. A failed inotify_init is not an error:
  // inotify() says so and Wait relies on its deadline.
  static absl::StatusOr<std::unique_ptr<FolderEvents>> Create();
  ~FolderEvents();
  FolderEvents(const FolderEvents&) = delete;
  FolderEvents& operator=(const FolderEvents&) = delete;

  // Watches `dir` for entries created, moved in, written or removed (again for a folder already
  // watched: nothing). A folder inotify refuses is left to the deadline. Not thread-safe.
  void Watch(const std::string& dir);
  // Blocks until a change in a watched folder (its pending events are read), Wake(), or
  // `deadline` (real time). Not thread-safe: one waiter.
  Woken Wait(absl::Time deadline);
  // Ends the current (or next) Wait. Thread-safe; safe from the signal watcher's thread.
  void Wake();
  bool inotify() const { return inotify_fd_ >= 0; }

 private:
  FolderEvents(int inotify_fd, int wake_fd) : inotify_fd_(inotify_fd), wake_fd_(wake_fd) {}
  const int inotify_fd_;
  const int wake_fd_;
  absl::flat_hash_set<std::string> watched_;
};

}  // namespace hb
