// PendingCalls: the bookkeeping of a fake asynchronous client (FakeHttpClient, FakeLlmClient):
// requests recorded in order, callbacks held until the test answers them, cancellations. One
// implementation for every fake seam. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace hb::testing {

// `Callback` is invocable with an absl::StatusOr of the client's result type.
template <typename Request, typename Callback>
class PendingCalls {
 public:
  using CallId = uint64_t;

  // Records `request` and holds `done` until CompleteNext or Cancel. Returns a new id (never 0).
  CallId Hold(Request request, Callback done) {
    absl::MutexLock lock(&mu_);
    const CallId id = ++next_id_;
    requests_.push_back(std::move(request));
    pending_.emplace(id, std::move(done));
    return id;
  }

  // Records `request` of a call the fake answers at once. Returns a new id.
  CallId Record(Request request) {
    absl::MutexLock lock(&mu_);
    requests_.push_back(std::move(request));
    return ++next_id_;
  }

  // Completes a held call with kCancelled (inline, like a client that aborts at once) and
  // records the cancellation; nothing when it is not pending.
  void Cancel(CallId id) {
    Callback done;
    {
      absl::MutexLock lock(&mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      done = std::move(it->second);
      pending_.erase(it);
      cancelled_.push_back(id);
    }
    done(absl::CancelledError("HTTP request cancelled"));
  }

  // Completes the oldest held call with `result` on this thread; false when none is held.
  template <typename Result>
  bool CompleteNext(Result result) {
    Callback done;
    {
      absl::MutexLock lock(&mu_);
      if (pending_.empty()) return false;
      done = std::move(pending_.begin()->second);
      pending_.erase(pending_.begin());
    }
    done(std::move(result));
    return true;
  }

  size_t pending() const {
    absl::MutexLock lock(&mu_);
    return pending_.size();
  }
  std::vector<Request> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  std::vector<CallId> cancelled() const {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }

  // Waits until at least `n` calls are held / were cancelled; false on timeout.
  bool WaitForPending(size_t n, absl::Duration timeout) const {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pending_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  bool WaitForCancelled(size_t n, absl::Duration timeout) const {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cancelled_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }

 private:
  mutable absl::Mutex mu_;
  CallId next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<CallId, Callback> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<Request> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<CallId> cancelled_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb::testing
