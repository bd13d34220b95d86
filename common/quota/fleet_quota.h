// FleetQuota: this process's side of a provider budget shared by a fleet (hb-grader replicas,
// `hb-orchestrator run` processes, hb-env replicas) through a QuotaStore (Redis in
// production). Before each upstream call the caller Acquires a permit for one request and its
// estimated tokens; afterwards it Settles the estimate against the reply's usage, teaches the
// budget the provider's x-ratelimit-limit-* headers (Learn), and on a 429 with Retry-After
// pauses the whole fleet's budget (Pause).
//
// Leases: permits come from the store in batches (about `lease_period` of the fleet's rate,
// at most `max_lease`), so the store sees one round trip per batch, not one per call. Unused
// permits lapse after `lease_ttl`; their tokens go back to the budget with the next round trip.
// While no limit is known (no --quota-rpm/--quota-tpm and none learned yet) every call is
// granted and the store is asked again after `unknown_recheck`.
//
// Fallback: when the store fails (Redis down, slow, restarting) the quota is degraded: it
// grants from a budget of its own (LocalQuotaStore) at `fallback_share` of the last known
// limits (unlimited when none is known: the callers' adaptive limiters still pace), logs one
// line (rate-limited), reports through `on_degraded`, and tries the store again every
// `reconnect_interval`; the first success ends the degraded mode. Nothing fails: work is only
// slowed.
//
// Thread-safe. The store's round trip runs under the quota's lock: callers wait at most the
// store's own timeout (RedisQuotaStoreOptions::timeout) once per `reconnect_interval`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/clock.h"
#include "common/base/rate_limited_log.h"
#include "common/quota/local_quota_store.h"
#include "common/quota/quota_store.h"

namespace hb {

struct FleetQuotaOptions {
  // Limits from flags (--quota-rpm, --quota-tpm); 0: learned from the provider's headers.
  QuotaLimits configured;
  // Share of the known limits this process uses on its own while the store is unavailable,
  // in (0, 1].
  double fallback_share = 0.25;
  // A lease holds about this much of the budget's refill, in [1, max_lease] permits.
  absl::Duration lease_period = absl::Milliseconds(100);
  int64_t max_lease = 64;
  absl::Duration lease_ttl = absl::Seconds(1);
  absl::Duration unknown_recheck = absl::Seconds(1);
  absl::Duration reconnect_interval = absl::Seconds(1);
  // The fallback budget's arithmetic (the fleet's lives in the store).
  QuotaShape shape;
  // Named in log lines (the budget's key, never a secret).
  std::string name;
  // Called with true when the quota becomes degraded, false when it recovers; under the
  // quota's lock (set a gauge, nothing more). Optional.
  absl::AnyInvocable<void(bool degraded)> on_degraded;
  // Not owned; must outlive the quota.
  Clock* clock = &Clock::Real();
};

// What Acquire decided.
struct QuotaDecision {
  bool granted = false;
  // Not granted: try again no earlier than this.
  absl::Time not_before = absl::InfinitePast();
};

// Counters, for metrics and tests.
struct FleetQuotaStats {
  int64_t store_calls = 0;
  int64_t store_errors = 0;
  int64_t granted = 0;
  int64_t waits = 0;
  bool degraded = false;
  QuotaLimits limits;
};

// The Redis key of an upstream's budget: "hb:quota:" + `key_override` (--quota-key) when given,
// else the first 32 hex digits of sha256(base_url + "\n" + sha256(api_key)): processes with
// the same endpoint and key share a budget; the key itself is never stored.
std::string QuotaKey(absl::string_view base_url, absl::string_view api_key,
                     absl::string_view key_override);

class FleetQuota {
 public:
  FleetQuota(std::unique_ptr<QuotaStore> store, FleetQuotaOptions options);

  // A permit for one call of `tokens` estimated tokens at `priority`, or when to ask again.
  QuotaDecision Acquire(int64_t tokens, QuotaPriority priority);
  // A granted call's reply reported `actual` tokens against its `estimated` ones.
  void Settle(int64_t estimated, int64_t actual);
  // The provider refused with a Retry-After: nothing is granted for `retry_after`, in this
  // process at once and in the fleet from the store's next round trip (made now).
  void Pause(absl::Duration retry_after);
  // The provider's x-ratelimit-limit-requests / -tokens (0: not sent); shared through the store.
  void Learn(const QuotaLimits& limits);

  FleetQuotaStats Stats() const;

 private:
  // One round trip; false (degraded) when the store failed.
  bool CallStoreLocked(LeaseRequest request, absl::Time now, LeaseReply* reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  QuotaDecision FromStoreLocked(int64_t tokens, QuotaPriority priority, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  QuotaDecision FromFallbackLocked(int64_t tokens, QuotaPriority priority, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Permits to ask for: about lease_period of the budget, in [1, max_lease].
  int64_t LeaseSizeLocked(int64_t tokens) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the lease; its unused tokens become a refund.
  void DropLeaseLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetDegradedLocked(bool degraded, absl::string_view why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<QuotaStore> store_;
  FleetQuotaOptions options_;
  Clock& clock_;
  LocalQuotaStore fallback_;
  RateLimitedLog log_;
  mutable absl::Mutex mu_;
  // The current lease.
  int64_t lease_requests_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t lease_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time lease_expiry_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // No limit known: grant without asking until then.
  absl::Time unlimited_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time paused_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Per QuotaPriority: when the store said it may have a permit.
  absl::Time hold_until_[2] ABSL_GUARDED_BY(mu_) = {absl::InfinitePast(), absl::InfinitePast()};
  absl::Time next_reconnect_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Tokens to charge with the next round trip, and limits not yet told to the store.
  int64_t debt_ ABSL_GUARDED_BY(mu_) = 0;
  QuotaLimits unsent_learned_ ABSL_GUARDED_BY(mu_);
  FleetQuotaStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
