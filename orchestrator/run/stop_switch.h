// StopSwitch: how a SIGTERM/SIGINT (or a watcher shutting down) reaches the grading in progress.
// `run` attaches its active Dispatcher or BatchGrader; a request stops it (in-flight rows drain
// for --drain-timeout, the journal is flushed) and every later attachment at once.
#pragma once

#include <cstddef>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace hb {

class StopSwitch {
 public:
  // Stops the attached target, and any attached later. Thread-safe (called from the signal
  // watcher's thread).
  void Request() {
    absl::MutexLock lock(&mu_);
    requested_ = true;
    if (active_) active_();
  }
  // Whether Request was called. Thread-safe.
  bool requested() const {
    absl::MutexLock lock(&mu_);
    return requested_;
  }
  // `target` (anything with RequestStop()) gets RequestStop() on a request, until detached; at
  // once when a request came before.
  template <typename T>
  void Attach(T* target) {
    absl::MutexLock lock(&mu_);
    active_ = [target] { target->RequestStop(); };
    if (requested_) active_();
  }
  void Attach(std::nullptr_t) {
    absl::MutexLock lock(&mu_);
    active_ = nullptr;
  }

 private:
  mutable absl::Mutex mu_;
  std::function<void()> active_ ABSL_GUARDED_BY(mu_);
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace hb
