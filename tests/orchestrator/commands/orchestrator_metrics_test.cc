// OrchestratorMetrics: the series hb-orchestrator exports (deploy/monitoring/ selects on their
// names), present from the start, and what each RunMetrics call moves.
#include "orchestrator/commands/orchestrator_metrics.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace hb {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class OrchestratorMetricsTest : public ::testing::Test {
 protected:
  std::string Text() {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    return out.str();
  }

  prometheus::Registry registry_;
  // $2 / $0.50 / $8 per million input / cached input / output tokens.
  OrchestratorMetrics metrics_{registry_, TokenPrices{}, 64};
};

TEST_F(OrchestratorMetricsTest, CountersExistAtZeroForTheirKnownLabelsFromTheStart) {
  const std::string text = Text();
  for (const char* series :
       {"hb_orchestrator_rows_planned_total 0", "hb_orchestrator_rows_graded_total 0",
        "hb_orchestrator_rows_failed_total{reason=\"UNAVAILABLE\"} 0",
        "hb_orchestrator_rows_failed_total{reason=\"PERMISSION_DENIED\"} 0",
        "hb_orchestrator_row_retries_total{reason=\"RESOURCE_EXHAUSTED\"} 0",
        "hb_orchestrator_rate_limited_total 0", "hb_orchestrator_tokens_total{kind=\"cached\"} 0",
        "hb_orchestrator_cost_dollars_total 0",
        "hb_orchestrator_checkpoints_total{state=\"failed\"} 0",
        "hb_orchestrator_checkpoints_total{state=\"graded\"} 0", "hb_orchestrator_max_in_flight 64",
        "hb_orchestrator_window 64", "hb_orchestrator_eta_seconds Nan"}) {
    EXPECT_THAT(text, HasSubstr(series)) << series;
  }
  EXPECT_THAT(text, Not(HasSubstr("reason=\"OK\"")));
}

TEST_F(OrchestratorMetricsTest, RowsCountByOutcomeAndTokensArePriced) {
  metrics_.RowsPlanned(10);
  metrics_.RowRecorded(absl::StatusCode::kOk, /*from_cache=*/false);
  metrics_.RowRecorded(absl::StatusCode::kOk, /*from_cache=*/true);
  metrics_.RowRecorded(absl::StatusCode::kDeadlineExceeded, /*from_cache=*/false);
  metrics_.RowRetried(absl::StatusCode::kUnavailable);
  metrics_.RateLimited();
  metrics_.TokensSpent(1'000'000, 400'000, 100'000);
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_rows_planned_total 10"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_rows_graded_total 2"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_rows_from_cache_total 1"));
  EXPECT_EQ(metrics_.RowsFailed(absl::StatusCode::kDeadlineExceeded), 1);
  EXPECT_EQ(metrics_.RowsFailed(absl::StatusCode::kUnavailable), 0);
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_row_retries_total{reason=\"UNAVAILABLE\"} 1"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_rate_limited_total 1"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_tokens_total{kind=\"prompt\"} 1000000"));
  // 600k uncached x $2 + 400k cached x $0.50 + 100k out x $8 per million.
  EXPECT_DOUBLE_EQ(metrics_.CostDollars(), 1.2 + 0.2 + 0.8);
}

TEST_F(OrchestratorMetricsTest, ProgressSetsTheGaugesAndTheEta) {
  ProgressSnapshot s;
  s.total_rows = 1000;
  s.done_rows = 400;  // 200 of them from the journal
  s.done_this_run = 200;
  s.elapsed = absl::Seconds(100);  // 2 rows/s: 600 left take 300 s
  s.in_flight = 12;
  s.window = 0;  // not adaptive: the window is the cap
  s.sample_total = 50;
  s.sampled = 20;
  metrics_.Progress(s);
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_job_rows 1000"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_job_rows_done 400"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_rows_remaining 600"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_rows_in_flight 12"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_window 64"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_sampled_tasks 20"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_eta_seconds 300"));
  s.window = 8;
  metrics_.Progress(s);
  EXPECT_THAT(Text(), HasSubstr("hb_orchestrator_window 8"));
}

TEST_F(OrchestratorMetricsTest, SamplingAloneRunsOutWithItsTasks) {
  ProgressSnapshot s;  // `sample`: no rows
  s.sample_total = 100;
  s.sampled = 40;
  s.done_this_run = 40;
  s.elapsed = absl::Seconds(20);  // 2 tasks/s: 60 left take 30 s
  metrics_.Progress(s);
  EXPECT_THAT(Text(), HasSubstr("hb_orchestrator_eta_seconds 30"));
}

TEST_F(OrchestratorMetricsTest, WatchCheckpointsCountByState) {
  metrics_.CheckpointFinished("failed");
  metrics_.CheckpointFinished("failed");
  metrics_.CheckpointFinished("graded");
  metrics_.SetCheckpointsPending(3);
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_checkpoints_total{state=\"failed\"} 2"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_checkpoints_total{state=\"graded\"} 1"));
  EXPECT_THAT(text, HasSubstr("hb_orchestrator_checkpoints_pending 3"));
}

TEST(ServeOrchestratorMetricsTest, OffWithoutAnAddressAndServesOnPortZero) {
  absl::StatusOr<OrchestratorMetricsEndpoint> off =
      ServeOrchestratorMetrics("", "test", TokenPrices{}, 4);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->metrics, nullptr);
  EXPECT_EQ(off->exposer, nullptr);
  absl::StatusOr<OrchestratorMetricsEndpoint> on =
      ServeOrchestratorMetrics("127.0.0.1:0", "test", TokenPrices{}, 4);
  ASSERT_TRUE(on.ok()) << on.status();
  ASSERT_NE(on->metrics, nullptr);
  ASSERT_NE(on->exposer, nullptr);
  EXPECT_GT(on->exposer->GetListeningPorts().at(0), 0);
}

}  // namespace
}  // namespace hb
