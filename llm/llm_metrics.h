// LlmMetrics: what an LLM client reports about its upstream calls. The llm layer's own seam, so
// that it depends on no caller's metrics: the grader implements it with Prometheus series
// (grader/grader_metrics.h), other callers may pass none.
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hb {

class LlmMetrics {
 public:
  virtual ~LlmMetrics() = default;

  // An upstream attempt started.
  virtual void UpstreamStarted() = 0;
  // It finished: `status` is the HTTP status ("200", "429") or a transport failure name
  // ("connection", "timeout", "cancelled").
  virtual void UpstreamFinished(absl::string_view status, absl::Duration latency) = 0;
  // The tokens a successful attempt reported.
  virtual void AddTokens(int64_t prompt, int64_t cached, int64_t completion) = 0;
  // The last x-ratelimit-remaining-{requests,tokens} value (`resource` "requests"/"tokens").
  virtual void SetRateLimitRemaining(absl::string_view resource, double value) = 0;
};

}  // namespace hb
