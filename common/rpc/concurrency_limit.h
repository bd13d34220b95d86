// ConcurrencyLimit: admission control for a server's RPCs (or any units of work): at most
// `max_in_progress` admitted at once; past it, a refusal that clients retry after a delay
// (RESOURCE_EXHAUSTED carrying google.rpc.RetryInfo and the server-busy mark,
// common/retry/retry_status.h), never an unbounded queue.
//
//   absl::StatusOr<ConcurrencyLimit::Permit> permit = limit.TryAcquire(1);
//   if (!permit.ok()) return Finish(permit.status());
//   ... the work holds *permit until it is done (moving it along).
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace hb {

class ConcurrencyLimit {
 public:
  // `max_in_progress` <= 0 admits everything. `what` names the unit and the setting in the
  // refusal ("RPCs in progress (--max-concurrent-rpcs)").
  ConcurrencyLimit(int64_t max_in_progress, absl::Duration retry_delay, std::string what)
      : max_(max_in_progress), retry_delay_(retry_delay), what_(std::move(what)) {}

  // Released on destruction; movable, not copyable.
  class Permit {
   public:
    Permit() = default;
    Permit(Permit&& other) noexcept : limit_(other.limit_), units_(other.units_) {
      other.limit_ = nullptr;
    }
    Permit& operator=(Permit&& other) noexcept;
    ~Permit() { Release(); }
    void Release();

   private:
    friend class ConcurrencyLimit;
    Permit(ConcurrencyLimit* limit, int64_t units) : limit_(limit), units_(units) {}
    ConcurrencyLimit* limit_ = nullptr;
    int64_t units_ = 0;
  };

  // Admits `units` more, or fails with kResourceExhausted ("server busy: <in progress> <what>
  // ...; the limit is N; retry after D") carrying `retry_delay` as its RetryInfo and marked
  // MarkServerBusy (the server's own capacity, not an upstream's rate limit). Thread-safe. The
  // limit must outlive every permit.
  absl::StatusOr<Permit> TryAcquire(int64_t units = 1);

  int64_t in_progress() const;

 private:
  const int64_t max_;
  const absl::Duration retry_delay_;
  const std::string what_;
  mutable absl::Mutex mu_;
  int64_t in_progress_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace hb
