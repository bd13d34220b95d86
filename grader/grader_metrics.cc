#include "grader/grader_metrics.h"

#include <string>

#include "absl/status/status.h"

namespace hb {
namespace {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300};
}

std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

// The label values exported at 0 from the start (the RPC methods of grader_service, the codes
// of a failed RPC, an upstream attempt's outcomes, the retry reasons: FailureKindName's retried
// kinds).
constexpr const char* kMethods[] = {"GradeItem", "GradeReply"};
constexpr absl::StatusCode kRpcCodes[] = {absl::StatusCode::kOk,
                                          absl::StatusCode::kInvalidArgument,
                                          absl::StatusCode::kDeadlineExceeded,
                                          absl::StatusCode::kResourceExhausted,
                                          absl::StatusCode::kUnavailable,
                                          absl::StatusCode::kInternal,
                                          absl::StatusCode::kUnauthenticated,
                                          absl::StatusCode::kPermissionDenied,
                                          absl::StatusCode::kFailedPrecondition,
                                          absl::StatusCode::kCancelled};
constexpr const char* kUpstreamStatuses[] = {"200", "400",        "401",     "403",      "404",
                                             "408", "429",        "500",     "502",      "503",
                                             "504", "connection", "timeout", "cancelled"};
constexpr const char* kRetryReasons[] = {"connection", "timeout",  "http_408",       "http_409",
                                         "http_429",   "http_5xx", "malformed_reply"};

}  // namespace

GraderMetrics::GraderMetrics(prometheus::Registry& registry)
    : rpcs_(prometheus::BuildCounter()
                .Name("hb_grader_rpcs_total")
                .Help("Finished grader RPCs by method and status code")
                .Register(registry)),
      rpcs_in_flight_(prometheus::BuildGauge()
                          .Name("hb_grader_rpcs_in_flight")
                          .Help("Grader RPCs being handled")
                          .Register(registry)),
      rpc_latency_(prometheus::BuildHistogram()
                       .Name("hb_grader_rpc_latency_seconds")
                       .Help("Grader RPC wall time")
                       .Register(registry)),
      upstream_calls_(prometheus::BuildCounter()
                          .Name("hb_grader_upstream_calls_total")
                          .Help("Upstream chat-completions attempts by HTTP status or failure")
                          .Register(registry)),
      upstream_in_flight_family_(prometheus::BuildGauge()
                                     .Name("hb_grader_upstream_in_flight")
                                     .Help("Upstream attempts in progress")
                                     .Register(registry)),
      upstream_latency_family_(prometheus::BuildHistogram()
                                   .Name("hb_grader_upstream_latency_seconds")
                                   .Help("Wall time of one upstream attempt")
                                   .Register(registry)),
      retries_(prometheus::BuildCounter()
                   .Name("hb_grader_retries_total")
                   .Help("Upstream retries scheduled, by failure kind")
                   .Register(registry)),
      tokens_(prometheus::BuildCounter()
                  .Name("hb_grader_tokens_total")
                  .Help("Tokens reported by the upstream endpoint")
                  .Register(registry)),
      ratelimit_(prometheus::BuildGauge()
                     .Name("hb_grader_ratelimit_remaining")
                     .Help("Last x-ratelimit-remaining-* value from the upstream endpoint")
                     .Register(registry)),
      verdict_cache_hits_(prometheus::BuildCounter()
                              .Name("hb_grader_verdict_cache_hits_total")
                              .Help("Rubric items answered from --verdict-cache (no upstream call)")
                              .Register(registry)
                              .Add({})),
      upstream_in_flight_(upstream_in_flight_family_.Add({})),
      upstream_cap_(prometheus::BuildGauge()
                        .Name("hb_grader_upstream_max_in_flight")
                        .Help("The cap on upstream attempts in progress (--max-upstream-in-flight)")
                        .Register(registry)
                        .Add({})),
      upstream_latency_(upstream_latency_family_.Add({}, LatencyBuckets())) {
  for (const char* method : kMethods) {
    for (absl::StatusCode code : kRpcCodes)
      Counter(rpcs_, {{"method", method}, {"code", CodeName(code)}});
  }
  for (const char* status : kUpstreamStatuses) Counter(upstream_calls_, {{"status", status}});
  for (const char* reason : kRetryReasons) Counter(retries_, {{"reason", reason}});
  for (const char* kind : {"prompt", "cached", "completion"}) Counter(tokens_, {{"kind", kind}});
}

void GraderMetrics::SetUpstreamCap(int64_t cap) { upstream_cap_.Set(static_cast<double>(cap)); }

void GraderMetrics::VerdictCacheHit() { verdict_cache_hits_.Increment(); }

double GraderMetrics::VerdictCacheHits() const { return verdict_cache_hits_.Value(); }

prometheus::Counter& GraderMetrics::Counter(prometheus::Family<prometheus::Counter>& family,
                                            const prometheus::Labels& labels) const {
  absl::MutexLock lock(&mu_);
  void*& slot = cache_[{&family, labels}];
  if (slot == nullptr) slot = &family.Add(labels);
  return *static_cast<prometheus::Counter*>(slot);
}

prometheus::Gauge& GraderMetrics::Gauge(prometheus::Family<prometheus::Gauge>& family,
                                        const prometheus::Labels& labels) const {
  absl::MutexLock lock(&mu_);
  void*& slot = cache_[{&family, labels}];
  if (slot == nullptr) slot = &family.Add(labels);
  return *static_cast<prometheus::Gauge*>(slot);
}

void GraderMetrics::RpcStarted(absl::string_view method) {
  Gauge(rpcs_in_flight_, {{"method", std::string(method)}}).Increment();
}

void GraderMetrics::RpcFinished(absl::string_view method, absl::StatusCode code,
                                absl::Duration latency) {
  Gauge(rpcs_in_flight_, {{"method", std::string(method)}}).Decrement();
  Counter(rpcs_, {{"method", std::string(method)}, {"code", CodeName(code)}}).Increment();
  prometheus::Histogram* histogram;
  {
    absl::MutexLock lock(&mu_);
    void*& slot = cache_[{&rpc_latency_, {{"method", std::string(method)}}}];
    if (slot == nullptr)
      slot = &rpc_latency_.Add({{"method", std::string(method)}}, LatencyBuckets());
    histogram = static_cast<prometheus::Histogram*>(slot);
  }
  histogram->Observe(absl::ToDoubleSeconds(latency));
}

void GraderMetrics::UpstreamStarted() { upstream_in_flight_.Increment(); }

void GraderMetrics::UpstreamFinished(absl::string_view status, absl::Duration latency) {
  upstream_in_flight_.Decrement();
  Counter(upstream_calls_, {{"status", std::string(status)}}).Increment();
  upstream_latency_.Observe(absl::ToDoubleSeconds(latency));
}

void GraderMetrics::RetryScheduled(absl::string_view reason) {
  Counter(retries_, {{"reason", std::string(reason)}}).Increment();
}

void GraderMetrics::AddTokens(int64_t prompt, int64_t cached, int64_t completion) {
  if (prompt > 0) Counter(tokens_, {{"kind", "prompt"}}).Increment(static_cast<double>(prompt));
  if (cached > 0) Counter(tokens_, {{"kind", "cached"}}).Increment(static_cast<double>(cached));
  if (completion > 0) {
    Counter(tokens_, {{"kind", "completion"}}).Increment(static_cast<double>(completion));
  }
}

void GraderMetrics::SetRateLimitRemaining(absl::string_view resource, double value) {
  Gauge(ratelimit_, {{"resource", std::string(resource)}}).Set(value);
}

double GraderMetrics::RpcCount(absl::string_view method, absl::StatusCode code) const {
  return Counter(rpcs_, {{"method", std::string(method)}, {"code", CodeName(code)}}).Value();
}

double GraderMetrics::RpcsInFlight(absl::string_view method) const {
  return Gauge(rpcs_in_flight_, {{"method", std::string(method)}}).Value();
}

double GraderMetrics::UpstreamCalls(absl::string_view status) const {
  return Counter(upstream_calls_, {{"status", std::string(status)}}).Value();
}

double GraderMetrics::UpstreamInFlight() const { return upstream_in_flight_.Value(); }

double GraderMetrics::Retries(absl::string_view reason) const {
  return Counter(retries_, {{"reason", std::string(reason)}}).Value();
}

double GraderMetrics::Tokens(absl::string_view kind) const {
  return Counter(tokens_, {{"kind", std::string(kind)}}).Value();
}

}  // namespace hb
