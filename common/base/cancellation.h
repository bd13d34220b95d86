// CancellationToken: a thread-safe "stop this work" flag with callbacks, shared between the
// party that may cancel (an RPC reactor's OnCancel, a GradeReply fan-out) and the work in
// progress (an upstream call, a pending retry timer).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace hb {

class CancellationToken {
 public:
  using CallbackId = uint64_t;

  CancellationToken() = default;
  CancellationToken(const CancellationToken&) = delete;
  CancellationToken& operator=(const CancellationToken&) = delete;

  // Marks the token cancelled and runs every registered callback once, on the calling thread,
  // outside the token's lock. Idempotent: later calls do nothing.
  void Cancel() {
    std::vector<std::pair<CallbackId, absl::AnyInvocable<void()>>> callbacks;
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return;
      cancelled_ = true;
      callbacks.swap(callbacks_);
    }
    for (auto& [id, fn] : callbacks) fn();
  }

  bool cancelled() const {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }

  // Registers `fn` to run when the token is cancelled. When it already is, `fn` runs right
  // away on this thread and 0 is returned. Otherwise returns an id for Unregister.
  CallbackId OnCancel(absl::AnyInvocable<void()> fn) {
    {
      absl::MutexLock lock(&mu_);
      if (!cancelled_) {
        CallbackId id = ++next_id_;
        callbacks_.emplace_back(id, std::move(fn));
        return id;
      }
    }
    fn();
    return 0;
  }

  // Drops a callback registered with OnCancel (a no-op when it already ran or `id` is 0). The
  // callback may still be running on another thread when this returns, so callbacks should only
  // hold shared ownership of what they touch.
  void Unregister(CallbackId id) {
    if (id == 0) return;
    absl::MutexLock lock(&mu_);
    for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
      if (it->first == id) {
        callbacks_.erase(it);
        return;
      }
    }
  }

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  CallbackId next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<CallbackId, absl::AnyInvocable<void()>>> callbacks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
