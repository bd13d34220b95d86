#include "common/flow/paced_queue.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"

namespace hb {
namespace {

AdaptiveLimiterOptions LimiterOptions(const PacedQueueOptions& options) {
  AdaptiveLimiterOptions limiter = options.limiter;
  limiter.max_window = std::max(1, options.max_in_flight);
  limiter.clock = options.clock;
  return limiter;
}

}  // namespace

PacedQueue::PacedQueue(Scheduler& scheduler, PacedQueueOptions options)
    : scheduler_(scheduler),
      options_(std::move(options)),
      limiter_(LimiterOptions(options_)),
      started_(!options_.start_paused) {}

PacedQueue::~PacedQueue() { Close("the queue was destroyed"); }

void PacedQueue::Push(Work work, Lane lane, Group group) {
  std::vector<Work> works;
  works.push_back(std::move(work));
  PushAll(std::move(works), lane, group);
}

void PacedQueue::PushAll(std::vector<Work> works, Lane lane, Group group) {
  bool queued = false;
  {
    absl::MutexLock lock(&mu_);
    if (!closed_) {
      queued = true;
      auto at = lane == Lane::kFront ? queue_.begin() + static_cast<std::ptrdiff_t>(front_items_)
                                     : queue_.end();
      std::vector<Item> items;
      items.reserve(works.size());
      for (Work& work : works) items.push_back(Item{std::move(work), group});
      queue_.insert(at, std::make_move_iterator(items.begin()),
                    std::make_move_iterator(items.end()));
      if (lane == Lane::kFront) front_items_ += items.size();
    }
  }
  if (!queued) {
    for (Work& work : works) std::move(work)(absl::CancelledError("the dispatch queue is closed"));
    return;
  }
  Drain();
}

void PacedQueue::Start() {
  {
    absl::MutexLock lock(&mu_);
    started_ = true;
  }
  Drain();
}

void PacedQueue::Finish(const DispatchTicket& ticket, const ReplySignal& signal) {
  {
    absl::MutexLock lock(&mu_);
    in_flight_ = std::max<int64_t>(0, in_flight_ - 1);
    if (options_.adaptive) limiter_.OnReply(ticket, signal);
  }
  Drain();
}

int64_t PacedQueue::Cancel(Group group, absl::string_view reason) {
  std::deque<Item> dropped;
  {
    absl::MutexLock lock(&mu_);
    std::deque<Item> kept;
    size_t front_kept = 0;
    for (size_t i = 0; i < queue_.size(); ++i) {
      if (group != 0 && queue_[i].group == group) {
        dropped.push_back(std::move(queue_[i]));
      } else {
        if (i < front_items_) ++front_kept;
        kept.push_back(std::move(queue_[i]));
      }
    }
    queue_.swap(kept);
    front_items_ = front_kept;
  }
  const int64_t count = static_cast<int64_t>(dropped.size());
  Drop(std::move(dropped), reason);
  return count;
}

void PacedQueue::Close(absl::string_view reason) {
  std::deque<Item> dropped;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    dropped.swap(queue_);
    front_items_ = 0;
    DisarmTimerLocked();
    const std::thread::id self = std::this_thread::get_id();
    // An item that closes the queue runs inside the admitting thread (maybe a timer's): that
    // drain stops at its next look at closed_.
    if (!(draining_ && drainer_ == self)) {
      while (draining_ || live_timers_ > 0) cv_.Wait(&mu_);
    }
  }
  Drop(std::move(dropped), reason);
}

void PacedQueue::SetPendingDemand(int64_t calls) {
  absl::MutexLock lock(&mu_);
  pending_demand_ = std::max<int64_t>(0, calls);
}

PacedQueueStats PacedQueue::Stats() const {
  absl::MutexLock lock(&mu_);
  PacedQueueStats stats;
  stats.queued = static_cast<int64_t>(queue_.size());
  stats.in_flight = in_flight_;
  stats.window = WindowLocked();
  if (options_.adaptive) stats.paced_rate = limiter_.Snapshot().paced_rate;
  return stats;
}

void PacedQueue::Drain() {
  {
    absl::MutexLock lock(&mu_);
    if (draining_) return;  // the admitting thread looks again once its items return
    draining_ = true;
    drainer_ = std::this_thread::get_id();
  }
  while (true) {
    std::deque<Admitted> admitted;
    {
      absl::MutexLock lock(&mu_);
      AdmitLocked(admitted);
      if (admitted.empty()) {
        draining_ = false;
        cv_.SignalAll();
        return;
      }
    }
    for (Admitted& a : admitted) std::move(a.work)(a.ticket);
  }
}

int PacedQueue::WindowLocked() const {
  const int max_in_flight = std::max(1, options_.max_in_flight);
  return options_.adaptive ? std::min(max_in_flight, limiter_.Window()) : max_in_flight;
}

void PacedQueue::AdmitLocked(std::deque<Admitted>& out) {
  if (!started_ || closed_ || queue_.empty()) return;
  const absl::Time now = options_.clock->Now();
  if (options_.adaptive) {
    limiter_.SetDemand(static_cast<int64_t>(queue_.size()) + pending_demand_);
  }
  while (!queue_.empty() && in_flight_ < WindowLocked()) {
    DispatchTicket ticket;
    if (options_.adaptive) {
      const absl::Time next = limiter_.NextDispatchTime();
      if (next > now) {
        ArmTimerLocked(next, now);  // paced or held: a reply or the timer looks again
        break;
      }
      ticket = limiter_.OnDispatch();
    } else {
      ticket = DispatchTicket{next_seq_++, now};
    }
    ++in_flight_;
    out.push_back(Admitted{std::move(queue_.front().work), ticket});
    queue_.pop_front();
    if (front_items_ > 0) --front_items_;
  }
}

void PacedQueue::ArmTimerLocked(absl::Time due, absl::Time now) {
  if (timer_ != 0 && timer_due_ == due) return;
  DisarmTimerLocked();
  const uint64_t generation = ++timer_generation_;
  ++live_timers_;
  timer_due_ = due;
  timer_ = scheduler_.Schedule(due - now, [this, generation] {
    {
      absl::MutexLock lock(&mu_);
      if (generation == timer_generation_) {
        timer_ = 0;
        timer_due_ = absl::InfiniteFuture();
      }
    }
    Drain();
    absl::MutexLock lock(&mu_);
    --live_timers_;
    cv_.SignalAll();
  });
}

void PacedQueue::DisarmTimerLocked() {
  if (timer_ != 0 && scheduler_.CancelTimer(timer_)) --live_timers_;
  timer_ = 0;
  timer_due_ = absl::InfiniteFuture();
}

void PacedQueue::Drop(std::deque<Item> items, absl::string_view reason) {
  for (Item& item : items) std::move(item.work)(absl::CancelledError(std::string(reason)));
}

}  // namespace hb
