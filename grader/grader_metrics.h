// GraderMetrics: the grader's Prometheus metrics, registered on a caller-owned registry (the
// binary exposes it on /metrics; tests read values back through the accessors).
//
//   hb_grader_rpcs_total{method,code}            finished RPCs
//   hb_grader_rpcs_in_flight{method}             RPCs being handled
//   hb_grader_rpc_latency_seconds{method}        RPC wall time
//   hb_grader_upstream_calls_total{status}       upstream attempts by HTTP status (or
//                                                "connection", "timeout", "cancelled")
//   hb_grader_upstream_in_flight                 upstream attempts in progress
//   hb_grader_upstream_max_in_flight             the cap on them (--max-upstream-in-flight)
//   hb_grader_upstream_latency_seconds           one attempt's wall time
//   hb_grader_retries_total{reason}              retries scheduled, by failure kind
//   hb_grader_tokens_total{kind}                 prompt / cached / completion tokens
//   hb_grader_ratelimit_remaining{resource}      last x-ratelimit-remaining-{requests,tokens}
//   hb_grader_verdict_cache_hits_total           items answered from --verdict-cache
//
// Counters exist at 0 from the start for their known label values (RPC methods x the codes
// alerts select on, the HTTP statuses and failure names an upstream answers, the retry reasons),
// so that `increase()` sees the first 401 or 429 (deploy/monitoring/ alerts on them).
//
// Every method is thread-safe. Never put request content or secrets in a label.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "llm/llm_metrics.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace hb {

class GraderMetrics final : public LlmMetrics {
 public:
  // Registers the families on `registry`, which must outlive this object.
  explicit GraderMetrics(prometheus::Registry& registry);

  void RpcStarted(absl::string_view method);
  void RpcFinished(absl::string_view method, absl::StatusCode code, absl::Duration latency);
  // LlmMetrics: the upstream client reports into the grader's series.
  void UpstreamStarted() override;
  void UpstreamFinished(absl::string_view status, absl::Duration latency) override;
  void RetryScheduled(absl::string_view reason);
  void AddTokens(int64_t prompt, int64_t cached, int64_t completion) override;
  void SetRateLimitRemaining(absl::string_view resource, double value) override;
  void VerdictCacheHit();
  // The cap on upstream attempts in progress (hb_grader_upstream_max_in_flight).
  void SetUpstreamCap(int64_t cap);

  // Readers (tests). A series never touched reads 0.
  double RpcCount(absl::string_view method, absl::StatusCode code) const;
  double RpcsInFlight(absl::string_view method) const;
  double UpstreamCalls(absl::string_view status) const;
  double UpstreamInFlight() const;
  double Retries(absl::string_view reason) const;
  double Tokens(absl::string_view kind) const;
  double VerdictCacheHits() const;

 private:
  prometheus::Counter& Counter(prometheus::Family<prometheus::Counter>& family,
                               const prometheus::Labels& labels) const;
  prometheus::Gauge& Gauge(prometheus::Family<prometheus::Gauge>& family,
                           const prometheus::Labels& labels) const;

  prometheus::Family<prometheus::Counter>& rpcs_;
  prometheus::Family<prometheus::Gauge>& rpcs_in_flight_;
  prometheus::Family<prometheus::Histogram>& rpc_latency_;
  prometheus::Family<prometheus::Counter>& upstream_calls_;
  prometheus::Family<prometheus::Gauge>& upstream_in_flight_family_;
  prometheus::Family<prometheus::Histogram>& upstream_latency_family_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Counter>& tokens_;
  prometheus::Family<prometheus::Gauge>& ratelimit_;
  prometheus::Counter& verdict_cache_hits_;
  prometheus::Gauge& upstream_in_flight_;
  prometheus::Gauge& upstream_cap_;
  prometheus::Histogram& upstream_latency_;

  // Series lookups are cached: Family::Add builds a new object on every call.
  mutable absl::Mutex mu_;
  mutable std::map<std::pair<const void*, prometheus::Labels>, void*> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
