// EnvMetrics: the series hb-env exports, and that the pre-resolved ones (ok submissions, the
// two latency sources) and the lazily added ones (other codes) count the right calls.
#include "environment/env_metrics.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace hb::env {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class EnvMetricsTest : public ::testing::Test {
 protected:
  std::string Text() {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    return out.str();
  }

  prometheus::Registry registry_;
  EnvMetrics metrics_{registry_};
};

TEST_F(EnvMetricsTest, TheSeriesEverySubmissionTouchesExistFromTheStart) {
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("hb_env_submits_total{code=\"ok\"} 0"));
  EXPECT_THAT(text, HasSubstr("hb_env_submit_latency_seconds_count{source=\"cache\"} 0"));
  EXPECT_THAT(text, HasSubstr("hb_env_submit_latency_seconds_count{source=\"graded\"} 0"));
  // The failures alerts select on exist at 0 too, so that increase() sees the first one.
  EXPECT_THAT(text, HasSubstr("hb_env_submits_total{code=\"unavailable\"} 0"));
  EXPECT_THAT(text, HasSubstr("hb_env_judge_failures_total{code=\"unauthenticated\"} 0"));
  EXPECT_THAT(text, HasSubstr("hb_env_judge_failures_total{code=\"deadline_exceeded\"} 0"));
  EXPECT_THAT(text, Not(HasSubstr("code=\"data_loss\"")));
}

TEST_F(EnvMetricsTest, SubmissionsCountByCodeAndLatencyBySource) {
  metrics_.SubmitFinished(absl::StatusCode::kOk, /*from_cache=*/true, absl::Milliseconds(2));
  metrics_.SubmitFinished(absl::StatusCode::kOk, /*from_cache=*/true, absl::Milliseconds(3));
  metrics_.SubmitFinished(absl::StatusCode::kOk, /*from_cache=*/false, absl::Seconds(1));
  metrics_.SubmitFinished(absl::StatusCode::kUnavailable, /*from_cache=*/false, absl::Seconds(2));
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("hb_env_submits_total{code=\"ok\"} 3"));
  EXPECT_THAT(text, HasSubstr("hb_env_submits_total{code=\"unavailable\"} 1"));
  EXPECT_THAT(text, HasSubstr("hb_env_submit_latency_seconds_count{source=\"cache\"} 2"));
  EXPECT_THAT(text, HasSubstr("hb_env_submit_latency_seconds_count{source=\"graded\"} 2"));
  EXPECT_THAT(text,
              HasSubstr("hb_env_submit_latency_seconds_bucket{source=\"cache\",le=\"0.005\"} 2"));
  EXPECT_THAT(text,
              HasSubstr("hb_env_submit_latency_seconds_bucket{source=\"graded\",le=\"1\"} 1"));
}

TEST_F(EnvMetricsTest, TrainerRoutesCountRequestsByRouteAndCodeRewardsAndJudgeFailures) {
  metrics_.TrainerRequest("get_reward", 200, absl::Milliseconds(3));
  metrics_.TrainerRequest("get_reward", 503, absl::Seconds(2));
  metrics_.TrainerRequest("verify", 200, absl::Seconds(1));
  metrics_.TrainerReward("get_reward", 0.25);
  metrics_.TrainerReward("get_reward", -0.2);
  metrics_.TrainerJudgeFailure("verify");
  metrics_.TrainerJudgeFailure("verify");
  const std::string text = Text();
  EXPECT_THAT(text,
              HasSubstr("hb_env_trainer_requests_total{code=\"200\",route=\"get_reward\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("hb_env_trainer_requests_total{code=\"503\",route=\"get_reward\"} 1"));
  EXPECT_THAT(text, HasSubstr("hb_env_trainer_requests_total{code=\"200\",route=\"verify\"} 1"));
  EXPECT_THAT(text, HasSubstr("hb_env_trainer_request_seconds_count{route=\"get_reward\"} 2"));
  EXPECT_THAT(
      text,
      HasSubstr("hb_env_trainer_request_seconds_bucket{route=\"get_reward\",le=\"0.005\"} 1"));
  EXPECT_THAT(text, HasSubstr("hb_env_trainer_reward_count{route=\"get_reward\"} 2"));
  EXPECT_THAT(text, HasSubstr("hb_env_trainer_reward_bucket{route=\"get_reward\",le=\"0\"} 1"));
  EXPECT_THAT(text, HasSubstr("hb_env_trainer_judge_failures_total{route=\"verify\"} 2"));
  EXPECT_THAT(text, Not(HasSubstr("hb_env_trainer_judge_failures_total{route=\"get_reward\"}")));
}

}  // namespace
}  // namespace hb::env
