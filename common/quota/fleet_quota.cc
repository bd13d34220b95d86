#include "common/quota/fleet_quota.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/logging.h"
#include "common/base/sha256.h"

namespace hb {
namespace {

// ceil(per_minute x headroom x period / cost), at least 1.
int64_t PermitsIn(int64_t per_minute, double headroom, absl::Duration period, double cost) {
  const double n = std::ceil(static_cast<double>(per_minute) * headroom / 60.0 *
                             absl::ToDoubleSeconds(period) / std::max(cost, 1.0));
  return std::max<int64_t>(1, static_cast<int64_t>(std::min(n, 1e9)));
}

RateLimitedLogOptions OneLinePerMinute() {
  RateLimitedLogOptions options;
  options.max_lines = 1;
  options.interval = absl::Minutes(1);
  return options;
}

}  // namespace

std::string QuotaKey(absl::string_view base_url, absl::string_view api_key,
                     absl::string_view key_override) {
  if (!key_override.empty()) return absl::StrCat("hb:quota:", key_override);
  absl::string_view base = base_url;
  absl::ConsumeSuffix(&base, "/");
  const std::string digest = Sha256Hex(absl::StrCat(base, "\n", Sha256Hex(api_key)));
  return absl::StrCat("hb:quota:", digest.substr(0, 32));
}

FleetQuota::FleetQuota(std::unique_ptr<QuotaStore> store, FleetQuotaOptions options)
    : store_(std::move(store)),
      options_(std::move(options)),
      clock_(*options_.clock),
      fallback_(clock_, options_.shape),
      log_(clock_, OneLinePerMinute()) {}

QuotaDecision FleetQuota::Acquire(int64_t tokens, QuotaPriority priority) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  if (now < paused_until_) {
    ++stats_.waits;
    return {false, paused_until_};
  }
  const bool tokens_fit = stats_.limits.tpm <= 0 || lease_tokens_ >= tokens;
  if (now < lease_expiry_ && lease_requests_ >= 1 && tokens_fit) {
    --lease_requests_;
    lease_tokens_ -= tokens;
    ++stats_.granted;
    return {true};
  }
  if (now < unlimited_until_) {
    ++stats_.granted;
    return {true};
  }
  // The store said when it may have a permit for this priority: no round trip before.
  absl::Time& hold = hold_until_[static_cast<int>(priority)];
  if (now < hold) {
    ++stats_.waits;
    return {false, hold};
  }
  if (stats_.degraded && now < next_reconnect_) return FromFallbackLocked(tokens, priority, now);
  return FromStoreLocked(tokens, priority, now);
}

QuotaDecision FleetQuota::FromStoreLocked(int64_t tokens, QuotaPriority priority, absl::Time now) {
  DropLeaseLocked();
  LeaseRequest request;
  request.priority = priority;
  request.requests = LeaseSizeLocked(tokens);
  // Batch callers wait for a whole lease (one round trip per lease even when the budget is the
  // bottleneck); an interactive call takes the first permit there is.
  request.min_requests = priority == QuotaPriority::kBatch ? request.requests : 1;
  request.tokens_per_request = tokens;
  LeaseReply reply;
  if (!CallStoreLocked(request, now, &reply)) return FromFallbackLocked(tokens, priority, now);
  if (reply.limits.rpm <= 0 && reply.limits.tpm <= 0) {
    unlimited_until_ = now + options_.unknown_recheck;
    ++stats_.granted;
    return {true};
  }
  if (reply.requests <= 0) {
    ++stats_.waits;
    hold_until_[static_cast<int>(priority)] = now + reply.wait;
    return {false, now + reply.wait};
  }
  lease_requests_ = reply.requests - 1;
  lease_tokens_ = reply.tokens - tokens;
  lease_expiry_ = now + options_.lease_ttl;
  ++stats_.granted;
  return {true};
}

QuotaDecision FleetQuota::FromFallbackLocked(int64_t tokens, QuotaPriority priority,
                                             absl::Time now) {
  auto known = [&](int64_t configured, int64_t last, int64_t learned) -> int64_t {
    const int64_t limit = configured > 0 ? configured : std::max(last, learned);
    if (limit <= 0) return 0;
    return std::max<int64_t>(1, std::llround(static_cast<double>(limit) * options_.fallback_share));
  };
  LeaseRequest request;
  request.priority = priority;
  request.requests = 1;
  request.tokens_per_request = tokens;
  request.configured.rpm = known(options_.configured.rpm, stats_.limits.rpm, unsent_learned_.rpm);
  request.configured.tpm = known(options_.configured.tpm, stats_.limits.tpm, unsent_learned_.tpm);
  if (request.configured.rpm <= 0 && request.configured.tpm <= 0) {
    ++stats_.granted;
    return {true};
  }
  absl::StatusOr<LeaseReply> reply = fallback_.Lease(request);
  if (reply.ok() && reply->requests > 0) {
    ++stats_.granted;
    return {true};
  }
  ++stats_.waits;
  return {false, now + (reply.ok() ? reply->wait : options_.reconnect_interval)};
}

bool FleetQuota::CallStoreLocked(LeaseRequest request, absl::Time now, LeaseReply* reply) {
  request.token_debt = debt_;
  request.configured = options_.configured;
  request.learned = unsent_learned_;
  ++stats_.store_calls;
  absl::StatusOr<LeaseReply> result = store_->Lease(request);
  if (!result.ok()) {
    ++stats_.store_errors;
    next_reconnect_ = now + options_.reconnect_interval;
    SetDegradedLocked(true, result.status().message());
    return false;
  }
  debt_ = 0;
  unsent_learned_ = {};
  stats_.limits = result->limits;
  SetDegradedLocked(false, "");
  *reply = *std::move(result);
  return true;
}

void FleetQuota::Settle(int64_t estimated, int64_t actual) {
  absl::MutexLock lock(&mu_);
  debt_ += actual - estimated;
}

void FleetQuota::Pause(absl::Duration retry_after) {
  if (retry_after <= absl::ZeroDuration()) return;
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  paused_until_ = std::max(paused_until_, now + retry_after);
  DropLeaseLocked();
  LeaseRequest request;
  request.pause = retry_after;
  if (stats_.degraded && now < next_reconnect_) {
    (void)fallback_.Lease(request);
    return;
  }
  LeaseReply reply;
  (void)CallStoreLocked(request, now, &reply);
}

void FleetQuota::Learn(const QuotaLimits& limits) {
  absl::MutexLock lock(&mu_);
  bool news = false;
  if (limits.rpm > 0 && options_.configured.rpm <= 0 && limits.rpm != stats_.limits.rpm) {
    unsent_learned_.rpm = limits.rpm;
    news = true;
  }
  if (limits.tpm > 0 && options_.configured.tpm <= 0 && limits.tpm != stats_.limits.tpm) {
    unsent_learned_.tpm = limits.tpm;
    news = true;
  }
  // A limit seen for the first time ends the unlimited grants at once.
  if (news) unlimited_until_ = absl::InfinitePast();
}

FleetQuotaStats FleetQuota::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

int64_t FleetQuota::LeaseSizeLocked(int64_t tokens) const {
  const QuotaLimits& limits = stats_.limits;
  if (limits.rpm <= 0 && limits.tpm <= 0) return 1;
  int64_t n = std::max<int64_t>(1, options_.max_lease);
  const double headroom = options_.shape.headroom;
  if (limits.rpm > 0) n = std::min(n, PermitsIn(limits.rpm, headroom, options_.lease_period, 1));
  if (limits.tpm > 0 && tokens > 0) {
    n = std::min(
        n, PermitsIn(limits.tpm, headroom, options_.lease_period, static_cast<double>(tokens)));
  }
  return n;
}

void FleetQuota::DropLeaseLocked() {
  if (lease_tokens_ > 0 && stats_.limits.tpm > 0) debt_ -= lease_tokens_;
  lease_requests_ = 0;
  lease_tokens_ = 0;
  lease_expiry_ = absl::InfinitePast();
}

void FleetQuota::SetDegradedLocked(bool degraded, absl::string_view why) {
  if (stats_.degraded == degraded) return;
  stats_.degraded = degraded;
  if (options_.on_degraded) options_.on_degraded(degraded);
  if (degraded) {
    if (std::optional<std::string> suffix = log_.Admit("degraded")) {
      HB_LOG_WARN(
          "quota {}: the shared budget is unavailable ({}); using {:.0f}% of the known limits "
          "in this process until it is back (retried every {}){}",
          options_.name, std::string(why), options_.fallback_share * 100,
          absl::FormatDuration(options_.reconnect_interval), *suffix);
    }
  } else if (std::optional<std::string> suffix = log_.Admit("recovered")) {
    HB_LOG_INFO("quota {}: the shared budget is back{}", options_.name, *suffix);
  }
}

}  // namespace hb
