// LocalQuotaStore: the QuotaStore budget (quota_store.h) held in this process, on an injected
// clock. It is the reference arithmetic of the Redis script (redis_quota_store.cc mirrors it
// line for line), the budget a process falls back to when Redis is unavailable, and the store
// of the budget logic's unit tests.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/base/clock.h"
#include "common/quota/quota_store.h"

namespace hb {

class LocalQuotaStore final : public QuotaStore {
 public:
  // `clock` is not owned and must outlive the store.
  LocalQuotaStore(Clock& clock, QuotaShape shape) : clock_(clock), shape_(shape) {}

  // Never fails. Thread-safe.
  absl::StatusOr<LeaseReply> Lease(const LeaseRequest& request) override;

 private:
  // One bucket: its level after the last refill.
  struct Bucket {
    double level = 0;
  };

  Clock& clock_;
  const QuotaShape shape_;
  absl::Mutex mu_;
  // The limits of the last lease (a bucket whose limit was 0 starts full).
  QuotaLimits applied_ ABSL_GUARDED_BY(mu_);
  absl::Time updated_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  Bucket requests_ ABSL_GUARDED_BY(mu_);
  Bucket tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time paused_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time interactive_seen_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  QuotaLimits learned_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
