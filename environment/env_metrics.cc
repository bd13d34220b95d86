#include "environment/env_metrics.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"

namespace hb::env {
namespace {

std::string CodeLabel(absl::StatusCode code) {
  return absl::AsciiStrToLower(absl::StatusCodeToString(code));
}

// The codes a judge call or a submission fails with that operators alert on.
constexpr absl::StatusCode kFailureCodes[] = {
    absl::StatusCode::kInvalidArgument,   absl::StatusCode::kDeadlineExceeded,
    absl::StatusCode::kResourceExhausted, absl::StatusCode::kUnavailable,
    absl::StatusCode::kInternal,          absl::StatusCode::kUnauthenticated,
    absl::StatusCode::kPermissionDenied,  absl::StatusCode::kFailedPrecondition};

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
  return *buckets;
}

const prometheus::Histogram::BucketBoundaries& RewardBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries{
      -0.5, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
  return *buckets;
}

prometheus::Histogram& LatencySeries(prometheus::Family<prometheus::Histogram>& family,
                                     const std::string& source) {
  return family.Add({{"source", source}}, LatencyBuckets());
}

}  // namespace

EnvMetrics::EnvMetrics(prometheus::Registry& registry)
    : submits_(prometheus::BuildCounter()
                   .Name("hb_env_submits_total")
                   .Help("Submissions finished, by status code")
                   .Register(registry)),
      judge_failures_(prometheus::BuildCounter()
                          .Name("hb_env_judge_failures_total")
                          .Help("Judge calls (one rubric item) that failed, by status code")
                          .Register(registry)),
      cache_hits_(prometheus::BuildCounter()
                      .Name("hb_env_cache_hits_total")
                      .Help("Submissions answered from the result cache")
                      .Register(registry)
                      .Add({})),
      shared_(prometheus::BuildCounter()
                  .Name("hb_env_inflight_shared_total")
                  .Help("Submissions that joined an identical grading already in flight")
                  .Register(registry)
                  .Add({})),
      reward_(prometheus::BuildHistogram()
                  .Name("hb_env_reward")
                  .Help("Rewards of graded submissions (unclipped)")
                  .Register(registry)
                  .Add({}, RewardBuckets())),
      latency_(prometheus::BuildHistogram()
                   .Name("hb_env_submit_latency_seconds")
                   .Help("Submission latency, from acceptance to result")
                   .Register(registry)),
      added_latency_(prometheus::BuildHistogram()
                         .Name("hb_env_added_latency_seconds")
                         .Help("Latency of a graded submission over its slowest judge call "
                               "(queueing of its items, scoring, answering)")
                         .Register(registry)
                         .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.002, 0.005, 0.01,
                                                                          0.02, 0.05, 0.1, 0.25,
                                                                          0.5, 1, 2.5, 5, 10, 30})),
      trainer_requests_(prometheus::BuildCounter()
                            .Name("hb_env_trainer_requests_total")
                            .Help("Requests to the trainer routes, by route and HTTP status")
                            .Register(registry)),
      trainer_latency_(prometheus::BuildHistogram()
                           .Name("hb_env_trainer_request_seconds")
                           .Help("Latency of the trainer routes' requests, by route")
                           .Register(registry)),
      trainer_rewards_(prometheus::BuildHistogram()
                           .Name("hb_env_trainer_reward")
                           .Help("Rewards answered by the trainer routes (unclipped), by route")
                           .Register(registry)),
      trainer_judge_failures_(prometheus::BuildCounter()
                                  .Name("hb_env_trainer_judge_failures_total")
                                  .Help("Samples a trainer route could not grade (never answered "
                                        "as a reward), by route")
                                  .Register(registry)),
      submits_ok_(submits_.Add({{"code", CodeLabel(absl::StatusCode::kOk)}})),
      latency_cache_(LatencySeries(latency_, "cache")),
      latency_graded_(LatencySeries(latency_, "graded")) {
  // At 0 from the start, so that `increase()` sees the first failure (deploy/monitoring/).
  for (absl::StatusCode code : kFailureCodes) {
    judge_failures_.Add({{"code", CodeLabel(code)}});
    submits_.Add({{"code", CodeLabel(code)}});
  }
}

void EnvMetrics::SubmitFinished(absl::StatusCode code, bool from_cache, absl::Duration latency) {
  (code == absl::StatusCode::kOk ? submits_ok_ : submits_.Add({{"code", CodeLabel(code)}}))
      .Increment();
  (from_cache ? latency_cache_ : latency_graded_).Observe(absl::ToDoubleSeconds(latency));
}

void EnvMetrics::Reward(double reward) { reward_.Observe(reward); }

void EnvMetrics::AddedLatency(absl::Duration added) {
  added_latency_.Observe(absl::ToDoubleSeconds(added));
}

void EnvMetrics::JudgeFailure(absl::StatusCode code) {
  judge_failures_.Add({{"code", CodeLabel(code)}}).Increment();
}

void EnvMetrics::TrainerRequest(absl::string_view route, int http_code, absl::Duration latency) {
  trainer_requests_.Add({{"route", std::string(route)}, {"code", std::to_string(http_code)}})
      .Increment();
  trainer_latency_.Add({{"route", std::string(route)}}, LatencyBuckets())
      .Observe(absl::ToDoubleSeconds(latency));
}

void EnvMetrics::TrainerReward(absl::string_view route, double reward) {
  trainer_rewards_.Add({{"route", std::string(route)}}, RewardBuckets()).Observe(reward);
}

void EnvMetrics::TrainerJudgeFailure(absl::string_view route) {
  trainer_judge_failures_.Add({{"route", std::string(route)}}).Increment();
}

void EnvMetrics::CacheHit() { cache_hits_.Increment(); }
void EnvMetrics::SharedInFlight() { shared_.Increment(); }

}  // namespace hb::env
