// PacedQueue: the one dispatch queue of every loop that calls a rate-limited upstream (run's
// dispatcher, hb-env, the policy sampler). Work items wait in order and are admitted while the
// flow control allows: at most the window in flight (max_in_flight, or with `adaptive` the
// AdaptiveLimiter's window, which also paces dispatch from relayed rate-limit budgets and holds
// it for a Retry-After). The owner reports each admitted call's outcome with Finish(ticket,
// signal), which feeds the limiter and admits what now fits; a pacing hold arms one timer on the
// injected scheduler. Shaped like tensorstore's rate limiter (Admit, then Finish).
//
//   PacedQueue queue(scheduler, {.max_in_flight = 64, .clock = &clock});
//   queue.Push([&](absl::StatusOr<DispatchTicket> ticket) {
//     if (!ticket.ok()) return;  // dropped: Cancel or Close
//     client.Call(..., [&, t = *ticket](Result r) { queue.Finish(t, SignalOf(r)); });
//   });
//
// Ownership: the queue owns the queued work items until it calls them. Each item is called
// exactly once: with its ticket when admitted, or with kCancelled when dropped (Cancel, Close,
// or destruction). Items are called outside the queue's lock, on the thread that pushed,
// finished, started or fired the pacing timer; one thread at a time admits (a Finish from inside
// an item, e.g. a client that answers inline, never recurses: the admitting thread picks its
// effect up). Items must not block.
//
// Thread-safety: every method is thread-safe. Lock order: an owner may call Stats() under its
// own lock; every other method must be called without locks the items take.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/base/clock.h"
#include "common/base/scheduler.h"
#include "common/flow/adaptive_limiter.h"

namespace hb {

struct PacedQueueOptions {
  // Calls in flight at most (>= 1); the upper bound of the adaptive window.
  int max_in_flight = 512;
  // Adapt the window within [1, max_in_flight] and pace dispatch (AdaptiveLimiter, configured
  // by `limiter`; its max_window and clock are taken from this struct). False: keep up to
  // max_in_flight calls in flight and ignore the signals.
  bool adaptive = true;
  AdaptiveLimiterOptions limiter;
  // Admit nothing until Start() (items queue up meanwhile).
  bool start_paused = false;
  // Not owned; must outlive the queue.
  Clock* clock = &Clock::Real();
};

// A view of the queue, for progress lines and tests.
struct PacedQueueStats {
  // Items waiting to be admitted.
  int64_t queued = 0;
  // Admitted and not finished.
  int64_t in_flight = 0;
  // Calls allowed in flight now.
  int64_t window = 0;
  // Calls per second the pacing allows now; 0 when not pacing.
  double paced_rate = 0;
};

class PacedQueue {
 public:
  // The admitted call's ticket, or kCancelled (with the reason) when the item is dropped.
  using Work = absl::AnyInvocable<void(absl::StatusOr<DispatchTicket>) &&>;
  // Where a pushed item goes: kBack behind every item; kFront ahead of every kBack item but
  // behind the kFront items pushed before it (retries first, in the order they became due).
  enum class Lane { kBack, kFront };
  // Items pushed with the same non-zero group can be dropped together (Cancel).
  using Group = uint64_t;

  // `scheduler` (the pacing timer) is not owned and must outlive the queue.
  PacedQueue(Scheduler& scheduler, PacedQueueOptions options);
  // Close("the queue was destroyed"). Must not run inside an item.
  ~PacedQueue();
  PacedQueue(const PacedQueue&) = delete;
  PacedQueue& operator=(const PacedQueue&) = delete;

  // Queues `work` and admits what fits. After Close, `work` is dropped at once.
  void Push(Work work, Lane lane = Lane::kBack, Group group = 0);
  // Queues `works` together, in order (no other item lands between them, and a Cancel of
  // `group` drops all of them or none), then admits what fits.
  void PushAll(std::vector<Work> works, Lane lane = Lane::kBack, Group group = 0);
  // Starts admitting (start_paused). Idempotent.
  void Start();
  // Ends the call of `ticket`; call exactly once per admitted item, whatever the outcome (a
  // signal neither ok nor rate-limited only ends the call). Valid after Close.
  void Finish(const DispatchTicket& ticket, const ReplySignal& signal);
  // Drops the queued items of `group` (called with kCancelled `reason`); returns how many.
  int64_t Cancel(Group group, absl::string_view reason);
  // Drops every queued item (kCancelled `reason`) and admits nothing any more; Finish still
  // ends the calls in flight. When it returns no item is being admitted on another thread and
  // the pacing timer will not fire. Idempotent.
  void Close(absl::string_view reason);
  // Calls the owner will push later (retries on a backoff timer): with the queued items, the
  // demand that decides whether a budget is worth pacing (AdaptiveLimiter::SetDemand).
  void SetPendingDemand(int64_t calls);

  PacedQueueStats Stats() const;

 private:
  struct Item {
    Work work;
    Group group = 0;
  };
  struct Admitted {
    Work work;
    DispatchTicket ticket;
  };

  // Admits on this thread until nothing more fits (unless another thread is admitting: it then
  // picks up whatever changed).
  void Drain();
  void AdmitLocked(std::deque<Admitted>& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int WindowLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes sure the timer fires at `due` (replacing one due at another time).
  void ArmTimerLocked(absl::Time due, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DisarmTimerLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls each dropped item with kCancelled `reason`.
  static void Drop(std::deque<Item> items, absl::string_view reason);

  Scheduler& scheduler_;
  const PacedQueueOptions options_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  AdaptiveLimiter limiter_ ABSL_GUARDED_BY(mu_);
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  // The kFront items at the head of queue_.
  size_t front_items_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t pending_demand_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  bool started_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // A thread is admitting (calling items); which one.
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::thread::id drainer_ ABSL_GUARDED_BY(mu_);
  // The pacing timer (0: none), when it is due, and timer callbacks that may still run.
  Scheduler::TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time timer_due_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  uint64_t timer_generation_ ABSL_GUARDED_BY(mu_) = 0;
  int live_timers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace hb
