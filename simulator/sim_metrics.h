// SimMetrics: the simulator's counters as Prometheus series (prometheus-cpp), rendered for
// GET /metrics by prometheus::TextSerializer. Thread-safe.
//
//   hb_sim_requests_total, hb_sim_responses_total{status}, hb_sim_faults_total{kind},
//   hb_sim_rate_limited_total, hb_sim_{prompt,completion,cached}_tokens_total, hb_sim_in_flight,
//   Batch API: hb_sim_batch_files_total, hb_sim_batches_total, hb_sim_batch_requests_total
//   (lines of created batches), hb_sim_batch_requests_{completed,failed}_total,
//   hb_sim_batches_cancelled_total
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace hb::sim {

class SimMetrics {
 public:
  // `fault_kinds` are the labels of hb_sim_faults_total, each exported from the start (at 0).
  explicit SimMetrics(const std::vector<std::string>& fault_kinds);

  // A chat-completions request arrived.
  void Request() { requests_.Increment(); }
  // A reply with HTTP `status` (1..599) was decided; the series appears on first use.
  void Response(int status);
  // The fault draw chose `kind` (one of the kinds given at construction).
  void Fault(absl::string_view kind);
  void RateLimited() { rate_limited_.Increment(); }
  void PromptTokens(int64_t n) { prompt_tokens_.Increment(static_cast<double>(n)); }
  void CompletionTokens(int64_t n) { completion_tokens_.Increment(static_cast<double>(n)); }
  void CachedTokens(int64_t n) { cached_tokens_.Increment(static_cast<double>(n)); }
  // Batch API: a file uploaded; a batch of `requests` lines created; lines finished (output or
  // error file); a batch cancelled.
  void BatchFileUploaded() { batch_files_.Increment(); }
  void BatchCreated(int64_t requests) {
    batches_.Increment();
    batch_requests_.Increment(static_cast<double>(requests));
  }
  void BatchRequestsFinished(int64_t completed, int64_t failed) {
    batch_completed_.Increment(static_cast<double>(completed));
    batch_failed_.Increment(static_cast<double>(failed));
  }
  void BatchCancelled() { batches_cancelled_.Increment(); }
  // Requests the server holds (delayed or hanging).
  void AddInFlight(int64_t delta) { in_flight_.Increment(static_cast<double>(delta)); }

  // Every series in the Prometheus text format.
  std::string Render() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  prometheus::Counter& requests_;
  prometheus::Family<prometheus::Counter>& responses_;
  prometheus::Family<prometheus::Counter>& faults_;
  prometheus::Counter& rate_limited_;
  prometheus::Counter& prompt_tokens_;
  prometheus::Counter& completion_tokens_;
  prometheus::Counter& cached_tokens_;
  prometheus::Gauge& in_flight_;
  prometheus::Counter& batch_files_;
  prometheus::Counter& batches_;
  prometheus::Counter& batch_requests_;
  prometheus::Counter& batch_completed_;
  prometheus::Counter& batch_failed_;
  prometheus::Counter& batches_cancelled_;
};

}  // namespace hb::sim
