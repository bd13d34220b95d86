// QuotaStore: where a fleet's shared provider budget lives (Redis in production,
// redis_quota_store.h; in this process for the fallback and for tests, local_quota_store.h), and
// the one operation on it: Lease, which in one round trip refills the budget, charges what
// earlier calls cost beyond their estimate, records a shared pause and learned limits, and
// grants a batch of permits or says how long to wait.
//
// The budget is two token buckets, requests and tokens, refilled continuously at
// headroom x limit per minute and holding at most one second of it (so no fixed one-minute
// window of the provider ever sees more than the limit), with a priority floor:
//   * an interactive lease may empty a bucket;
//   * a batch lease may not take a bucket below half its capacity while interactive demand
//     exists (an interactive lease in the last `interactive_window`). Interactive callers thus
//     always find half a second of the whole budget waiting, and batch callers get what
//     interactive ones leave: the refill above the floor (all of it when interactive callers
//     take nothing, so the floor costs a backfill only its half-second burst).
// A dimension whose limit is unknown (0) is not limited.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hb {

enum class QuotaPriority { kInteractive, kBatch };

// "interactive" or "batch".
absl::string_view QuotaPriorityName(QuotaPriority priority);
// The inverse of QuotaPriorityName; kInvalidArgument otherwise. For absl flag parsing.
bool AbslParseFlag(absl::string_view text, QuotaPriority* priority, std::string* error);
std::string AbslUnparseFlag(QuotaPriority priority);

// A provider's limits per minute; 0 is unknown (not limited).
struct QuotaLimits {
  int64_t rpm = 0;
  int64_t tpm = 0;
  bool operator==(const QuotaLimits& o) const { return rpm == o.rpm && tpm == o.tpm; }
};

// The fixed parameters of a budget's arithmetic (the same in every process of a fleet).
struct QuotaShape {
  // The buckets refill at headroom x limit, in (0, 1].
  double headroom = 0.95;
  // A bucket holds this much of its refill at most (and starts full).
  absl::Duration burst = absl::Seconds(1);
  // Batch leases leave this share of each bucket's capacity while interactive demand exists.
  double interactive_reserve = 0.5;
  // Interactive demand exists this long after an interactive lease: longer than the pauses
  // between a trainer's steps, so that the first rewards of a step find the floor too. (At 2 s
  // a backfill emptied the bucket in each pause and those rewards waited for the refill:
  // p99 3-4x its value without a backfill in bench/fleet_quota.sh --env.)
  absl::Duration interactive_window = absl::Minutes(10);
};

struct LeaseRequest {
  QuotaPriority priority = QuotaPriority::kBatch;
  // Permits wanted: up to `requests` calls of `tokens_per_request` tokens each. The store grants
  // between `min_requests` and `requests` of them, or none. 0 asks for nothing (a settle or a
  // pause only).
  int64_t requests = 0;
  int64_t min_requests = 1;
  int64_t tokens_per_request = 0;
  // Tokens to charge now: what calls cost beyond their estimate (negative: a refund).
  int64_t token_debt = 0;
  // Hold the whole budget this long from now (a 429's Retry-After); zero: no new pause.
  absl::Duration pause = absl::ZeroDuration();
  // Limits given by flags (win over learned ones) and learned from the provider's
  // x-ratelimit-limit-* headers (shared with the fleet); 0: none.
  QuotaLimits configured;
  QuotaLimits learned;
};

struct LeaseReply {
  // Permits granted (0 or more); `tokens` = requests x tokens_per_request.
  int64_t requests = 0;
  int64_t tokens = 0;
  // Nothing granted: when the budget may have `min_requests`.
  absl::Duration wait = absl::ZeroDuration();
  // The limits in force (configured, else the fleet's learned ones); 0: unknown.
  QuotaLimits limits;
};

class QuotaStore {
 public:
  virtual ~QuotaStore() = default;
  // One atomic step on the budget (see the file comment). Errors: kUnavailable (connection,
  // timeout), kInternal (an unexpected reply). Thread-safe.
  virtual absl::StatusOr<LeaseReply> Lease(const LeaseRequest& request) = 0;
};

}  // namespace hb
