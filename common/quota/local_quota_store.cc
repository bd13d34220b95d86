#include "common/quota/local_quota_store.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hb {
namespace {

// A bucket's refill per second and capacity for a limit per minute (0: unlimited).
struct BucketShape {
  double rate = 0;
  double capacity = 0;
};

BucketShape ShapeOf(int64_t per_minute, double min_capacity, const QuotaShape& shape) {
  BucketShape b;
  if (per_minute <= 0) return b;
  b.rate = static_cast<double>(per_minute) * shape.headroom / 60.0;
  b.capacity = std::max(b.rate * absl::ToDoubleSeconds(shape.burst), min_capacity);
  return b;
}

// Whole leases of `cost` that fit above `floor`; "many" for an unlimited bucket.
int64_t Fits(const BucketShape& b, double level, double floor, double cost) {
  if (b.rate <= 0 || cost <= 0) return std::numeric_limits<int64_t>::max();
  double n = std::floor((level - floor) / cost);
  return n < 0 ? 0 : static_cast<int64_t>(std::min(n, 1e15));
}

// Seconds until `level` reaches floor + cost at the bucket's rate (0 when unlimited or there).
double SecondsUntil(const BucketShape& b, double level, double floor, double cost) {
  if (b.rate <= 0) return 0;
  return std::max(0.0, (floor + cost - level) / b.rate);
}

}  // namespace

absl::string_view QuotaPriorityName(QuotaPriority priority) {
  return priority == QuotaPriority::kInteractive ? "interactive" : "batch";
}

bool AbslParseFlag(absl::string_view text, QuotaPriority* priority, std::string* error) {
  if (text == "interactive") {
    *priority = QuotaPriority::kInteractive;
  } else if (text == "batch") {
    *priority = QuotaPriority::kBatch;
  } else {
    *error = "expected interactive or batch";
    return false;
  }
  return true;
}

std::string AbslUnparseFlag(QuotaPriority priority) {
  return std::string(QuotaPriorityName(priority));
}

absl::StatusOr<LeaseReply> LocalQuotaStore::Lease(const LeaseRequest& request) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  if (request.learned.rpm > 0) learned_.rpm = request.learned.rpm;
  if (request.learned.tpm > 0) learned_.tpm = request.learned.tpm;
  LeaseReply reply;
  reply.limits.rpm = request.configured.rpm > 0 ? request.configured.rpm : learned_.rpm;
  reply.limits.tpm = request.configured.tpm > 0 ? request.configured.tpm : learned_.tpm;
  // A bucket always holds the smallest lease above the batch floor.
  const int64_t least = std::max<int64_t>(1, std::min(request.min_requests, request.requests));
  const double cost = static_cast<double>(request.tokens_per_request);
  const double room = 1.0 / (1.0 - shape_.interactive_reserve);
  const BucketShape req = ShapeOf(reply.limits.rpm, static_cast<double>(least) * room, shape_);
  const BucketShape tok =
      ShapeOf(reply.limits.tpm, static_cast<double>(least) * cost * room, shape_);

  // Refill; a bucket that had no limit before starts full.
  const double elapsed =
      updated_ == absl::InfinitePast() ? 0 : std::max(0.0, absl::ToDoubleSeconds(now - updated_));
  if (applied_.rpm <= 0) requests_.level = req.capacity;
  if (applied_.tpm <= 0) tokens_.level = tok.capacity;
  requests_.level = std::min(req.capacity, requests_.level + elapsed * req.rate);
  tokens_.level = std::min(tok.capacity, tokens_.level + elapsed * tok.rate);
  applied_ = reply.limits;
  updated_ = now;
  tokens_.level = std::min(tok.capacity, tokens_.level - static_cast<double>(request.token_debt));
  if (request.pause > absl::ZeroDuration()) {
    paused_until_ = std::max(paused_until_, now + request.pause);
  }
  if (request.requests <= 0) return reply;
  if (request.priority == QuotaPriority::kInteractive) interactive_seen_ = now;

  if (now < paused_until_) {
    reply.wait = paused_until_ - now;
    return reply;
  }
  const bool reserve = request.priority == QuotaPriority::kBatch &&
                       now - interactive_seen_ < shape_.interactive_window;
  const double share = reserve ? shape_.interactive_reserve : 0.0;
  const double req_floor = share * req.capacity;
  const double tok_floor = share * tok.capacity;
  const int64_t granted = std::min({request.requests, Fits(req, requests_.level, req_floor, 1),
                                    Fits(tok, tokens_.level, tok_floor, cost)});
  if (granted >= least) {
    if (req.rate > 0) requests_.level -= static_cast<double>(granted);
    if (tok.rate > 0) tokens_.level -= static_cast<double>(granted) * cost;
    reply.requests = granted;
    reply.tokens = granted * request.tokens_per_request;
    return reply;
  }
  const double n = static_cast<double>(least);
  const double wait = std::max(SecondsUntil(req, requests_.level, req_floor, n),
                               SecondsUntil(tok, tokens_.level, tok_floor, n * cost));
  reply.wait = std::max(absl::Milliseconds(1), absl::Seconds(wait));
  return reply;
}

}  // namespace hb
