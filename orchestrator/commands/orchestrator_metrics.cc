#include "orchestrator/commands/orchestrator_metrics.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "cli/metrics_flags.h"
#include "common/base/status_macros.h"

namespace hb {
namespace {

prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& registry,
                                                       const std::string& name,
                                                       const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

prometheus::Counter& NewCounter(prometheus::Registry& registry, const std::string& name,
                                const std::string& help) {
  return CounterFamily(registry, name, help).Add({});
}

prometheus::Gauge& NewGauge(prometheus::Registry& registry, const std::string& name,
                            const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

std::string Reason(absl::StatusCode code) { return absl::StatusCodeToString(code); }

// Every non-OK code a row can fail with (rows_failed_total's known reasons).
constexpr absl::StatusCode kFailureCodes[] = {
    absl::StatusCode::kCancelled,          absl::StatusCode::kUnknown,
    absl::StatusCode::kInvalidArgument,    absl::StatusCode::kDeadlineExceeded,
    absl::StatusCode::kNotFound,           absl::StatusCode::kAlreadyExists,
    absl::StatusCode::kPermissionDenied,   absl::StatusCode::kResourceExhausted,
    absl::StatusCode::kFailedPrecondition, absl::StatusCode::kAborted,
    absl::StatusCode::kOutOfRange,         absl::StatusCode::kUnimplemented,
    absl::StatusCode::kInternal,           absl::StatusCode::kUnavailable,
    absl::StatusCode::kDataLoss,           absl::StatusCode::kUnauthenticated};

// The codes a row is retried for (IsRetryableCode, common/retry/retry_status.h).
constexpr absl::StatusCode kRetryCodes[] = {
    absl::StatusCode::kUnavailable, absl::StatusCode::kResourceExhausted,
    absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kInternal, absl::StatusCode::kUnknown};

}  // namespace

OrchestratorMetrics::OrchestratorMetrics(prometheus::Registry& registry, TokenPrices prices,
                                         int64_t max_in_flight)
    : prices_(prices),
      max_in_flight_(max_in_flight),
      planned_(NewCounter(registry, "hb_orchestrator_rows_planned_total",
                          "Rows given to this process to grade (rows already journaled excluded)")),
      graded_(NewCounter(registry, "hb_orchestrator_rows_graded_total",
                         "Rows graded and journaled by this process")),
      from_cache_(NewCounter(registry, "hb_orchestrator_rows_from_cache_total",
                             "Graded rows answered from the grader's verdict cache")),
      failed_(CounterFamily(registry, "hb_orchestrator_rows_failed_total",
                            "Rows failed after their attempts, by gRPC status code")),
      retries_(CounterFamily(registry, "hb_orchestrator_row_retries_total",
                             "Rows sent again after a retryable failure, by gRPC status code")),
      rate_limited_(NewCounter(registry, "hb_orchestrator_rate_limited_total",
                               "Grader replies that reported upstream 429 (rate limited)")),
      tokens_(CounterFamily(registry, "hb_orchestrator_tokens_total",
                            "Grader tokens spent upstream by kind (verdict-cache hits excluded)")),
      cost_(NewCounter(registry, "hb_orchestrator_cost_dollars_total",
                       "Estimated spend of those tokens at the --price-* flags, US dollars")),
      job_rows_(NewGauge(registry, "hb_orchestrator_job_rows",
                         "Rows of the job, rows already journaled included")),
      job_rows_done_(NewGauge(registry, "hb_orchestrator_job_rows_done",
                              "Rows of the job recorded (graded or failed)")),
      rows_remaining_(
          NewGauge(registry, "hb_orchestrator_rows_remaining", "Rows of the job not recorded yet")),
      in_flight_(NewGauge(registry, "hb_orchestrator_rows_in_flight", "Grader calls outstanding")),
      window_(NewGauge(registry, "hb_orchestrator_window",
                       "Calls allowed in flight now: the adaptive window, else --max-in-flight")),
      max_in_flight_gauge_(NewGauge(registry, "hb_orchestrator_max_in_flight",
                                    "The in-flight cap, --max-in-flight")),
      paced_rate_(NewGauge(registry, "hb_orchestrator_paced_calls_per_second",
                           "Calls per second the adaptive pacing allows (0: not pacing)")),
      sample_tasks_(NewGauge(registry, "hb_orchestrator_sample_tasks",
                             "Tasks x policy checkpoints to sample (0: no sampling)")),
      sampled_tasks_(NewGauge(registry, "hb_orchestrator_sampled_tasks",
                              "Tasks sampled: a reply journaled, or failed for good")),
      sampling_in_flight_(
          NewGauge(registry, "hb_orchestrator_sampling_in_flight", "Policy calls outstanding")),
      eta_(NewGauge(registry, "hb_orchestrator_eta_seconds",
                    "Time left at this process's rate (NaN before the first row)")),
      checkpoints_(CounterFamily(registry, "hb_orchestrator_checkpoints_total",
                                 "watch: checkpoints finished (graded) or failed, by state")),
      checkpoints_pending_(NewGauge(registry, "hb_orchestrator_checkpoints_pending",
                                    "watch: checkpoints found and not graded yet")) {
  for (absl::StatusCode code : kFailureCodes) failed_.Add({{"reason", Reason(code)}});
  for (absl::StatusCode code : kRetryCodes) retries_.Add({{"reason", Reason(code)}});
  for (const char* kind : {"prompt", "cached", "completion"}) tokens_.Add({{"kind", kind}});
  for (const char* state : {"graded", "failed"}) checkpoints_.Add({{"state", state}});
  max_in_flight_gauge_.Set(static_cast<double>(max_in_flight));
  window_.Set(static_cast<double>(max_in_flight));
  eta_.Set(std::numeric_limits<double>::quiet_NaN());
}

void OrchestratorMetrics::RowsPlanned(int64_t rows) {
  planned_.Increment(static_cast<double>(rows));
}

void OrchestratorMetrics::RowRecorded(absl::StatusCode code, bool from_cache) {
  if (code != absl::StatusCode::kOk) {
    failed_.Add({{"reason", Reason(code)}}).Increment();
    return;
  }
  graded_.Increment();
  if (from_cache) from_cache_.Increment();
}

void OrchestratorMetrics::RowRetried(absl::StatusCode code) {
  retries_.Add({{"reason", Reason(code)}}).Increment();
}

void OrchestratorMetrics::RateLimited() { rate_limited_.Increment(); }

void OrchestratorMetrics::TokensSpent(int64_t prompt, int64_t cached, int64_t completion) {
  if (prompt <= 0 && cached <= 0 && completion <= 0) return;
  tokens_.Add({{"kind", "prompt"}}).Increment(static_cast<double>(std::max<int64_t>(prompt, 0)));
  tokens_.Add({{"kind", "cached"}}).Increment(static_cast<double>(std::max<int64_t>(cached, 0)));
  tokens_.Add({{"kind", "completion"}})
      .Increment(static_cast<double>(std::max<int64_t>(completion, 0)));
  cost_.Increment(CostUsd({prompt, cached, completion}, prices_));
}

void OrchestratorMetrics::Progress(const ProgressSnapshot& s) {
  job_rows_.Set(static_cast<double>(s.total_rows));
  job_rows_done_.Set(static_cast<double>(s.done_rows));
  rows_remaining_.Set(static_cast<double>(std::max<int64_t>(0, s.total_rows - s.done_rows)));
  in_flight_.Set(static_cast<double>(s.in_flight));
  window_.Set(static_cast<double>(s.window > 0 ? s.window : max_in_flight_));
  paced_rate_.Set(s.paced_rate);
  sample_tasks_.Set(static_cast<double>(s.sample_total));
  sampled_tasks_.Set(static_cast<double>(s.sampled));
  sampling_in_flight_.Set(static_cast<double>(s.sampling_in_flight));
  // A job that grades (total_rows > 0) runs out with its rows; `sample` with its tasks.
  ProgressSnapshot rate = s;
  if (s.total_rows == 0 && s.sample_total > 0) {
    rate.total_rows = s.sample_total;
    rate.done_rows = s.sampled;
  }
  const std::optional<absl::Duration> left = EstimatedTimeLeft(rate);
  eta_.Set(left.has_value() ? absl::ToDoubleSeconds(*left)
                            : std::numeric_limits<double>::quiet_NaN());
}

void OrchestratorMetrics::CheckpointFinished(absl::string_view state) {
  checkpoints_.Add({{"state", std::string(state)}}).Increment();
}

void OrchestratorMetrics::SetCheckpointsPending(int64_t pending) {
  checkpoints_pending_.Set(static_cast<double>(pending));
}

double OrchestratorMetrics::RowsFailed(absl::StatusCode code) const {
  return failed_.Add({{"reason", Reason(code)}}).Value();
}

absl::StatusOr<OrchestratorMetricsEndpoint> ServeOrchestratorMetrics(const std::string& listen,
                                                                     const std::string& log_name,
                                                                     TokenPrices prices,
                                                                     int64_t max_in_flight) {
  OrchestratorMetricsEndpoint endpoint;
  if (listen.empty()) return endpoint;
  endpoint.registry = std::make_shared<prometheus::Registry>();
  endpoint.metrics =
      std::make_unique<OrchestratorMetrics>(*endpoint.registry, prices, max_in_flight);
  HB_ASSIGN_OR_RETURN(endpoint.exposer, cli::ServeMetrics(listen, endpoint.registry, log_name));
  return endpoint;
}

}  // namespace hb
