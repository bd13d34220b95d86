// BatchGrader (orchestrator/run/batch_grader.h) in process: its BatchApi talks to the real
// simulator logic (hb::sim::Simulator, the Batch API of hb-llm-sim) through an HttpClient
// adapter, on a fake clock whose scheduler runs each timer at once (no sockets, no sleeps).
#include "orchestrator/run/batch_grader.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/healthbench/prompts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/sim_core.h"
#include "simulator/sim_verdict.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/in_memory_verdict_store.h"
#include "tests/testing/inline_scheduler.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/simulator_http_client.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::FakeClock;
using ::hb::testing::InlineScheduler;
using ::hb::testing::InMemoryVerdictStore;
using ::hb::testing::SimulatorHttpClient;
using ::testing::HasSubstr;

class InMemoryBatchJournal final : public BatchJournal {
 public:
  absl::StatusOr<std::vector<BatchRecord>> Batches() override {
    std::vector<BatchRecord> out;
    for (const auto& [name, b] : batches) out.push_back(b);
    return out;
  }
  absl::Status SaveBatch(const BatchRecord& b, const std::vector<BatchRowEntry>& entries) override {
    batches[b.name] = b;
    for (const BatchRowEntry& row : entries) rows[BatchCustomId(row.key)] = row;
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<BatchRowEntry>> BatchRows() override {
    std::vector<BatchRowEntry> out;
    for (const auto& [id, row] : rows) out.push_back(row);
    return out;
  }
  absl::Status ForgetBatchRows(const std::vector<RowKey>& keys) override {
    for (const RowKey& key : keys) rows.erase(BatchCustomId(key));
    return absl::OkStatus();
  }
  std::map<std::string, BatchRecord> batches;
  std::map<std::string, BatchRowEntry> rows;
};

class BatchGraderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = hb::testing::MakeTempDir();
    tmpl_ = std::make_unique<GraderTemplate>(
        *GraderTemplate::FromText("C: <<conversation>>\nR: <<rubric_item>>", false));
    for (int t = 0; t < 4; ++t) {
      Example e;
      e.prompt_id = absl::StrCat("task-", t);
      e.prompt = {Message{"user", absl::StrCat("question ", t)}};
      for (int i = 0; i < 5; ++i) {
        e.rubrics.push_back(RubricItem{absl::StrCat("criterion ", t, ".", i), 2, "2", {}});
      }
      examples_.push_back(std::move(e));
    }
    for (const Example& e : examples_) {
      responses_.push_back(Response{e.prompt_id, "answer for " + e.prompt_id, std::nullopt});
    }
  }

  std::vector<PlannedRow> Rows() const {
    std::vector<PlannedRow> rows;
    for (size_t t = 0; t < examples_.size(); ++t) {
      for (int i = 0; i < 5; ++i)
        rows.push_back(PlannedRow{&checkpoint_, &examples_[t], &responses_[t], i});
    }
    return rows;
  }

  // Runs a BatchGrader over Rows() against `sim`.
  absl::StatusOr<BatchOutcome> Grade(sim::Simulator& sim, BatchGradingOptions options) {
    SimulatorHttpClient http(sim);
    InlineScheduler scheduler(clock_);
    BatchApiOptions api_options;
    api_options.base_url = "http://sim/v1";
    BatchApi api(http, scheduler, api_options);
    options.dir = dir_ + "/batch";
    options.poll_interval = absl::Seconds(30);
    BatchGrader grader(api, store_, journal_, *tmpl_, scheduler, options);
    return grader.Run(Rows());
  }

  sim::SimulatorOptions SimOptions() const {
    sim::SimulatorOptions options;
    options.batch.completion_delay = absl::Minutes(1);
    return options;
  }

  FakeClock clock_;
  std::string dir_;
  std::unique_ptr<GraderTemplate> tmpl_;
  std::vector<Example> examples_;
  std::vector<Response> responses_;
  const std::string checkpoint_ = "base";
  InMemoryVerdictStore store_;
  InMemoryBatchJournal journal_;
};

TEST_F(BatchGraderTest, EveryRowGetsTheSimulatorsVerdictAndExpiredLinesAreResent) {
  sim::SimulatorOptions options = SimOptions();
  options.batch.fault_expired = 0.3;
  sim::Simulator sim(options, &clock_);
  BatchGradingOptions batch;
  batch.max_requests = 8;  // 20 rows: 3 files
  HB_ASSERT_OK_AND_ASSIGN(BatchOutcome outcome, Grade(sim, batch));
  EXPECT_FALSE(outcome.interrupted);
  EXPECT_EQ(outcome.progress.ok_rows, 20);
  EXPECT_EQ(outcome.progress.failed_rows, 0);
  EXPECT_GT(outcome.progress.retried_rows, 0);
  EXPECT_GT(outcome.progress.batches_created, 3);
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> rows, store_.Rows("base"));
  ASSERT_EQ(rows.size(), 20u);
  for (const RowRecord& row : rows) {
    const PlannedRow planned =
        Rows()[std::stoi(row.key.prompt_id.substr(5)) * 5 + row.key.rubric_index];
    const std::string prompt =
        tmpl_->Fill(RenderConversation(GradedConversation(planned.example->prompt, std::nullopt,
                                                          planned.response->response)),
                    RenderRubricItem(planned.example->rubrics[planned.rubric_index]));
    EXPECT_TRUE(row.ok) << row.error;
    EXPECT_EQ(row.criteria_met, SimulatedVerdict(prompt)) << row.key.prompt_id;
  }
  EXPECT_TRUE(journal_.rows.empty());  // every row recorded, none left to send
  for (const auto& [name, record] : journal_.batches) EXPECT_EQ(record.state, "done") << name;
}

// A journaled batch in progress is polled, not created again.
TEST_F(BatchGraderTest, AJournaledBatchIsResumedNotResubmitted) {
  sim::Simulator sim(SimOptions(), &clock_);
  {
    // A first grader whose run stops at its first wait: the batch exists, nothing is recorded.
    SimulatorHttpClient http(sim);
    struct Never final : Scheduler {
      BatchGrader* grader = nullptr;
      TimerId Schedule(absl::Duration, absl::AnyInvocable<void()>) override {
        grader->RequestStop();
        return 1;
      }
      bool CancelTimer(TimerId) override { return true; }
    } never;
    BatchApi api(http, never, BatchApiOptions{"http://sim/v1"});
    BatchGradingOptions options;
    options.dir = dir_ + "/batch";
    BatchGrader first(api, store_, journal_, *tmpl_, never, options);
    never.grader = &first;
    HB_ASSERT_OK_AND_ASSIGN(BatchOutcome outcome, first.Run(Rows()));
    EXPECT_TRUE(outcome.interrupted);
    EXPECT_EQ(outcome.progress.batches_created, 1);
  }
  ASSERT_EQ(journal_.batches.size(), 1u);
  EXPECT_EQ(journal_.batches.begin()->second.state, "submitted");
  HB_ASSERT_OK_AND_ASSIGN(BatchOutcome outcome, Grade(sim, BatchGradingOptions{}));
  EXPECT_EQ(outcome.progress.batches_created, 0);
  EXPECT_EQ(outcome.progress.ok_rows, 20);
  EXPECT_THAT(sim.RenderMetrics(), HasSubstr("hb_sim_batches_total 1\n"));
}

// A reply over max_grader_reply_bytes is final at once: a failed row, never a verdict, never
// sent again.
TEST_F(BatchGraderTest, AnOversizedReplyIsAFinalFailure) {
  sim::Simulator sim(SimOptions(), &clock_);
  BatchGradingOptions options;
  options.limits.max_grader_reply_bytes = 10;
  HB_ASSERT_OK_AND_ASSIGN(BatchOutcome outcome, Grade(sim, options));
  EXPECT_EQ(outcome.progress.failed_rows, 20);
  EXPECT_EQ(outcome.progress.batches_created, 1);
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowRecord> rows, store_.Rows("base"));
  ASSERT_EQ(rows.size(), 20u);
  EXPECT_FALSE(rows[0].ok);
  EXPECT_THAT(rows[0].error, HasSubstr("max_grader_reply_bytes"));
  EXPECT_THAT(rows[0].error, HasSubstr("(attempt 1 of 6)"));
}

}  // namespace
}  // namespace hb
