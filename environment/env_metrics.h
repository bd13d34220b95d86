// EnvMetrics: hb-env's Prometheus series: submissions by outcome, rewards, judge failures,
// cache hits, in-flight de-duplications, submission latency and the latency hb-env adds over
// the slowest judge call of a graded submission; and per trainer route (OpenRLHF /get_reward,
// slime /reward, NeMo-Gym /verify, ...): requests by HTTP code, their latency, the rewards
// answered and the samples that could not be graded. Submissions and judge failures exist at 0
// from the start for the failure codes operators alert on.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace hb::env {

class EnvMetrics {
 public:
  // Registers the series in `registry`, which must outlive this object.
  explicit EnvMetrics(prometheus::Registry& registry);

  // One submission finished with `code` after `latency` (hb_env_submits_total{code},
  // hb_env_submit_latency_seconds{source="graded"|"cache"}). Thread-safe.
  void SubmitFinished(absl::StatusCode code, bool from_cache, absl::Duration latency);
  // A graded reward (hb_env_reward histogram, unclipped).
  void Reward(double reward);
  // The latency a graded submission had over its slowest judge call
  // (hb_env_added_latency_seconds): time its items waited to be sent, plus scoring and
  // answering.
  void AddedLatency(absl::Duration added);
  // A judge call that failed with `code` (hb_env_judge_failures_total{code}).
  void JudgeFailure(absl::StatusCode code);
  // hb_env_cache_hits_total / hb_env_inflight_shared_total.
  void CacheHit();
  void SharedInFlight();

  // A trainer route's request answered with HTTP `http_code` after `latency`
  // (hb_env_trainer_requests_total{route,code}, hb_env_trainer_request_seconds{route}); `route`
  // is the path without its slash and without NeMo-Gym's /ng-rollout/<id> prefix.
  void TrainerRequest(absl::string_view route, int http_code, absl::Duration latency);
  // A reward a trainer route answered (hb_env_trainer_reward{route}, unclipped).
  void TrainerReward(absl::string_view route, double reward);
  // A sample a trainer route could not grade (hb_env_trainer_judge_failures_total{route}):
  // answered as a 5xx (OpenRLHF, slime) or NeMo-Gym's judge_failed marker, never as a reward.
  void TrainerJudgeFailure(absl::string_view route);

 private:
  prometheus::Family<prometheus::Counter>& submits_;
  prometheus::Family<prometheus::Counter>& judge_failures_;
  prometheus::Counter& cache_hits_;
  prometheus::Counter& shared_;
  prometheus::Histogram& reward_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Histogram& added_latency_;
  prometheus::Family<prometheus::Counter>& trainer_requests_;
  prometheus::Family<prometheus::Histogram>& trainer_latency_;
  prometheus::Family<prometheus::Histogram>& trainer_rewards_;
  prometheus::Family<prometheus::Counter>& trainer_judge_failures_;
  // The series every submission touches, resolved once: Family::Add takes the family's lock
  // and builds a label map, which is most of a cache hit's metrics cost.
  prometheus::Counter& submits_ok_;
  prometheus::Histogram& latency_cache_;
  prometheus::Histogram& latency_graded_;
};

}  // namespace hb::env
