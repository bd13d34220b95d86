// OrchestratorMetrics: hb-orchestrator's Prometheus series (run, meta-eval, sample, watch),
// the RunMetrics seam (orchestrator/report/run_metrics.h) implemented on a caller-owned
// registry. Every counter exists from the start at 0 for each of its known label values, so that
// `increase()` sees the first failure. Names and meanings (deploy/monitoring/ selects on them):
//
//   hb_orchestrator_rows_planned_total             rows given to this process to grade
//   hb_orchestrator_rows_graded_total              rows graded and journaled
//   hb_orchestrator_rows_from_cache_total          of those, answered by the verdict cache
//   hb_orchestrator_rows_failed_total{reason}      rows failed for good, by gRPC code name
//   hb_orchestrator_row_retries_total{reason}      rows sent again, by gRPC code name
//   hb_orchestrator_rate_limited_total             replies that reported upstream 429s
//   hb_orchestrator_tokens_total{kind}             prompt / cached / completion tokens spent
//   hb_orchestrator_cost_dollars_total             their price (--price-* flags), US dollars
//   hb_orchestrator_job_rows                       rows of the job (journaled ones included)
//   hb_orchestrator_job_rows_done                  of those, recorded (ok or failed)
//   hb_orchestrator_rows_remaining                 job rows not recorded yet
//   hb_orchestrator_rows_in_flight                 grader calls outstanding
//   hb_orchestrator_window                         calls allowed in flight now (adaptive window,
//                                                  else --max-in-flight)
//   hb_orchestrator_max_in_flight                  --max-in-flight (the cap)
//   hb_orchestrator_paced_calls_per_second         the adaptive pacing rate (0: not pacing)
//   hb_orchestrator_sample_tasks                   tasks x policies to sample (0: none)
//   hb_orchestrator_sampled_tasks                  of those, answered or failed for good
//   hb_orchestrator_sampling_in_flight             policy calls outstanding
//   hb_orchestrator_eta_seconds                    time left at this process's rate (NaN before
//                                                  the first row or task)
//   hb_orchestrator_checkpoints_total{state}       watch: checkpoints finished, state graded |
//                                                  failed; checkpoint attempts that failed count
//                                                  under failed each time
//   hb_orchestrator_checkpoints_pending            watch: checkpoints found and not graded yet
//
// Thread-safe. Never put request content or secrets in a label.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "llm/token_prices.h"
#include "orchestrator/report/run_metrics.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace hb {

class OrchestratorMetrics final : public RunMetrics {
 public:
  // Registers the families on `registry`, which must outlive this object. Tokens are priced at
  // `prices`; `max_in_flight` is the cap exported beside the window (0 when not dispatching).
  OrchestratorMetrics(prometheus::Registry& registry, TokenPrices prices, int64_t max_in_flight);

  // RunMetrics.
  void RowsPlanned(int64_t rows) override;
  void RowRecorded(absl::StatusCode code, bool from_cache) override;
  void RowRetried(absl::StatusCode code) override;
  void RateLimited() override;
  void TokensSpent(int64_t prompt, int64_t cached, int64_t completion) override;
  void Progress(const ProgressSnapshot& snapshot) override;

  // The hook of `watch`: a checkpoint finished as `state` ("graded" or "failed"; another state
  // gets its own series), and how many wait to be graded now.
  void CheckpointFinished(absl::string_view state);
  void SetCheckpointsPending(int64_t pending);

  // Readers (tests).
  double RowsFailed(absl::StatusCode code) const;
  double CostDollars() const { return cost_.Value(); }

 private:
  const TokenPrices prices_;
  const int64_t max_in_flight_;
  prometheus::Counter& planned_;
  prometheus::Counter& graded_;
  prometheus::Counter& from_cache_;
  prometheus::Family<prometheus::Counter>& failed_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Counter& rate_limited_;
  prometheus::Family<prometheus::Counter>& tokens_;
  prometheus::Counter& cost_;
  prometheus::Gauge& job_rows_;
  prometheus::Gauge& job_rows_done_;
  prometheus::Gauge& rows_remaining_;
  prometheus::Gauge& in_flight_;
  prometheus::Gauge& window_;
  prometheus::Gauge& max_in_flight_gauge_;
  prometheus::Gauge& paced_rate_;
  prometheus::Gauge& sample_tasks_;
  prometheus::Gauge& sampled_tasks_;
  prometheus::Gauge& sampling_in_flight_;
  prometheus::Gauge& eta_;
  prometheus::Family<prometheus::Counter>& checkpoints_;
  prometheus::Gauge& checkpoints_pending_;
};

// The metrics endpoint of one hb-orchestrator command: its registry, the exposer serving it
// (cli/metrics_flags.h) and the series.
struct OrchestratorMetricsEndpoint {
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<prometheus::Exposer> exposer;
  std::unique_ptr<OrchestratorMetrics> metrics;
};

// Serves OrchestratorMetrics on `listen` (--metrics-listen); an endpoint without an exposer or
// series when `listen` is empty. Errors: cli::ServeMetrics's (kUnavailable naming the address).
absl::StatusOr<OrchestratorMetricsEndpoint> ServeOrchestratorMetrics(const std::string& listen,
                                                                     const std::string& log_name,
                                                                     TokenPrices prices,
                                                                     int64_t max_in_flight);

}  // namespace hb
