// What one GradeItem outcome tells the flow control (common/flow/adaptive_limiter.h): one
// reading, shared by every loop that grades through a GraderClient (run's dispatcher, hb-env),
// so they never disagree on what a reply means. Pure functions; thread-safe.
#pragma once

#include "absl/status/statusor.h"
#include "common/flow/adaptive_limiter.h"
#include "healthbench/grader/v1/grader.pb.h"

namespace hb {

// The relayed x-ratelimit-* budgets of a reply.
RelayedRateLimit RateLimitFromProto(const healthbench::grader::v1::UpstreamRateLimit& rl);

// ok; rate-limited (rate_limited_attempts > 0, or kResourceExhausted not marked server-busy:
// a grader or hb-env refusing past its own capacity, IsServerBusy in common/retry/retry_status.h,
// is retried but leaves the window alone); the Retry-After of any error that carries one
// (RetryInfo: the upstream or grader asked to wait, a busy server included); the relayed budgets;
// attempts; and the tokens spent upstream (prompt + completion), which are 0 for a verdict-cache
// hit: it made no upstream request, so it must not teach the limiter a token cost that was never
// paid.
ReplySignal ReplySignalOf(const absl::StatusOr<healthbench::grader::v1::GradeItemResponse>& result);

}  // namespace hb
