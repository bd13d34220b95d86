// RedisQuotaStore: the fleet's QuotaStore in Redis (hiredis, synchronous, one connection per
// process). Each Lease is one EVALSHA of one Lua script that does the whole step atomically on
// one hash per budget, with Redis's own clock (TIME), so the processes' clocks never meet. The
// script's arithmetic is LocalQuotaStore's (local_quota_store.cc), line for line.
//
// After a Redis restart or SCRIPT FLUSH the script is sent again (EVAL on NOSCRIPT); after a
// connection error the next Lease reconnects (AUTH, SELECT, SCRIPT LOAD). The budget's hash
// expires `key_ttl` after its last use.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/quota/quota_store.h"
#include "common/quota/redis_url.h"

struct redisContext;

namespace hb {

struct RedisQuotaStoreOptions {
  RedisEndpoint endpoint;
  // The budget's Redis key (QuotaKey in fleet_quota.h).
  std::string key;
  QuotaShape shape;
  absl::Duration connect_timeout = absl::Seconds(2);
  // Each command's timeout: a Redis that is slow (or stopped) for longer counts as down.
  absl::Duration timeout = absl::Milliseconds(500);
  absl::Duration key_ttl = absl::Minutes(10);
};

class RedisQuotaStore final : public QuotaStore {
 public:
  // Connects, authenticates, selects the database and loads the script: the start-up check.
  // Errors: kUnavailable when Redis cannot be reached (naming it, RedisEndpointName);
  // kPermissionDenied when it refuses the credentials or wants some and none were given (the
  // message says where the password comes from, never the password); kInternal otherwise.
  static absl::StatusOr<std::unique_ptr<RedisQuotaStore>> Connect(RedisQuotaStoreOptions options);
  ~RedisQuotaStore() override;

  // Errors: kUnavailable (connection lost, timeout, reconnect failed), kPermissionDenied,
  // kInternal (an unexpected reply). Thread-safe (one round trip at a time).
  absl::StatusOr<LeaseReply> Lease(const LeaseRequest& request) override;

 private:
  explicit RedisQuotaStore(RedisQuotaStoreOptions options);
  absl::Status ConnectLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DisconnectLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RedisQuotaStoreOptions options_;
  absl::Mutex mu_;
  redisContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::string script_sha_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
