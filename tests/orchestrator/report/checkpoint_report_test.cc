#include "orchestrator/report/checkpoint_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "common/base/sha256.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/responses.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/report/html_report.h"
#include "rapidjson/document.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::MakeTempDir;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

rapidjson::Document ParseJson(const std::string& text) {
  rapidjson::Document doc;
  // Full precision: numbers must read back bit for bit.
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str());
  EXPECT_FALSE(doc.HasParseError()) << text.substr(0, 200);
  return doc;
}

std::vector<rapidjson::Document> ParseJsonl(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  std::vector<rapidjson::Document> docs;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    docs.push_back(ParseJson(std::string(line)));
  }
  return docs;
}

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

// Six tasks covering every outcome:
//   A graded: +10 met, +5 not met, -5 met        -> (10 - 5) / 15 = 1/3
//   B graded: two +4 items met; a "<script>" criterion and explanation -> 1
//   C no response                                -> not graded
//   D row 1 failed                               -> not graded
//   E row 1 has neither verdict nor failure       -> not graded (incomplete)
//   F graded: +4 not met, -1 met                  -> -1/4 (unclipped)
constexpr char kDataset[] =
    R"({"prompt_id":"A","prompt":[{"role":"user","content":"question A"}],)"
    R"("example_tags":["theme:alpha"],"rubrics":[)"
    R"({"criterion":"gives the right answer","points":10,"tags":["axis:accuracy","level:example"]},)"
    R"({"criterion":"mentions follow-up","points":5,"tags":["axis:completeness","level:example"]},)"
    R"({"criterion":"adds a wrong claim","points":-5,"tags":["axis:accuracy","level:example"]}]})"
    "\n"
    R"({"prompt_id":"B","prompt":[{"role":"user","content":"question B"},)"
    R"({"role":"assistant","content":"earlier reply"},{"role":"user","content":"follow-up B"}],)"
    R"("example_tags":["theme:beta"],"rubrics":[)"
    R"({"criterion":"<script>alert(1)</script> & more","points":4,"tags":["axis:accuracy"]},)"
    R"({"criterion":"is kind","points":4,"tags":["axis:communication_quality"]}]})"
    "\n"
    R"({"prompt_id":"C","prompt":[{"role":"user","content":"question C"}],)"
    R"("example_tags":["theme:alpha"],"rubrics":[{"criterion":"c","points":1,"tags":[]}]})"
    "\n"
    R"({"prompt_id":"D","prompt":[{"role":"user","content":"question D"}],)"
    R"("example_tags":["theme:alpha"],"rubrics":[{"criterion":"d0","points":1,"tags":[]},)"
    R"({"criterion":"d1","points":1,"tags":[]},{"criterion":"d2","points":1,"tags":[]}]})"
    "\n"
    R"({"prompt_id":"E","prompt":[{"role":"user","content":"question E"}],)"
    R"("example_tags":["theme:beta"],"rubrics":[{"criterion":"e0","points":2,"tags":[]},)"
    R"({"criterion":"e1","points":2,"tags":[]}]})"
    "\n"
    R"({"prompt_id":"F","prompt":[{"role":"user","content":"question F"}],)"
    R"("example_tags":["theme:alpha"],"rubrics":[)"
    R"({"criterion":"f-positive","points":4,"tags":["axis:accuracy"]},)"
    R"({"criterion":"f-negative","points":-1,"tags":["axis:accuracy"]}]})"
    "\n";

constexpr char kResponses[] = R"({"prompt_id":"A","response":"reply A","system_prompt":"be brief"})"
                              "\n"
                              R"({"prompt_id":"B","response":"reply B"})"
                              "\n"
                              R"({"prompt_id":"D","response":"reply D"})"
                              "\n"
                              R"({"prompt_id":"E","response":"reply E"})"
                              "\n"
                              R"({"prompt_id":"F","response":"reply F"})"
                              "\n";

class CheckpointReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    HB_ASSERT_OK(WriteFileAtomically(dir_ + "/dataset.jsonl", kDataset));
    HB_ASSERT_OK(WriteFileAtomically(dir_ + "/responses.jsonl", kResponses));
    HB_ASSERT_OK_AND_ASSIGN(dataset_, LoadDataset(dir_ + "/dataset.jsonl", {}));
    HB_ASSERT_OK_AND_ASSIGN(responses_, LoadResponses(dir_ + "/responses.jsonl", dataset_));
    // Deliberately out of order: the report sorts rows by task, then rubric index.
    verdicts_ = {
        {"F", 1, true, "it does add the bad thing", 1, 100, 0, 10},
        {"A", 2, true, "wrong claim present", 2, 100, 50, 10},
        {"A", 0, true, "right answer", 1, 100, 0, 10},
        {"A", 1, false, "no follow-up", 1, 100, 0, 10},
        {"B", 0, true, "<script>steal()</script>", 1, 100, 0, 10},
        {"B", 1, true, "kind", 1, 100, 0, 10},
        {"D", 0, true, "d0", 1, 100, 0, 10},
        {"D", 2, true, "d2", 1, 100, 0, 10},
        {"E", 0, true, "e0", 1, 100, 0, 10},
        {"F", 0, false, "not positive", 1, 100, 0, 10},
    };
    failures_ = {{"D", 1, "upstream returned 400"}};
    context_.checkpoint = "ckpt <1>";
    context_.dataset_path = dir_ + "/dataset.jsonl";
    context_.dataset_sha256 = dataset_.sha256;
    context_.responses_path = dir_ + "/responses.jsonl";
    context_.responses_sha256 = responses_.sha256;
    context_.template_sha256 = "feed";
    context_.seed = 3;
    context_.simulated = true;
    context_.grader_endpoint = "http://127.0.0.1:1/v1";
    context_.generated_at = "2026-01-02T03:04:05Z";
  }

  std::string dir_;
  Dataset dataset_;
  ResponseSet responses_;
  std::vector<VerdictRow> verdicts_;
  std::vector<RowFailure> failures_;
  ReportContext context_;
};

// summary.json "usage" and report.html's cost line: spent tokens and dollars at the context's
// prices, verdict-cache rows apart with what they saved, the wall time.
TEST_F(CheckpointReportTest, UsageSeparatesWhatWasSpentFromWhatTheVerdictCacheSaved) {
  for (VerdictRow& row : verdicts_) {
    row.prompt_tokens = 100000;
    row.cached_tokens = 0;
    row.completion_tokens = 10000;
    row.from_cache = row.prompt_id == "B";  // 2 of the 10 rows
    if (row.from_cache) row.attempts = 0;
  }
  context_.prices = TokenPrices{2.0, 0.5, 8.0};
  context_.wall_time = absl::Seconds(95);
  const std::string out = dir_ + "/out";
  HB_ASSERT_OK_AND_ASSIGN(
      CheckpointResult result,
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, out));
  EXPECT_EQ(result.usage.prompt_tokens, 800000);
  EXPECT_EQ(result.usage.from_cache_rows, 2);
  EXPECT_EQ(result.usage.saved.prompt_tokens, 200000);
  rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
  const rapidjson::Value& usage = summary["usage"];
  EXPECT_EQ(usage["prompt_tokens"].GetInt64(), 800000);
  EXPECT_EQ(usage["completion_tokens"].GetInt64(), 80000);
  // 0.8M input at $2 + 0.08M output at $8.
  EXPECT_DOUBLE_EQ(usage["cost_usd"].GetDouble(), 1.6 + 0.64);
  EXPECT_EQ(usage["from_cache_rows"].GetInt64(), 2);
  EXPECT_EQ(usage["saved_tokens"]["prompt_tokens"].GetInt64(), 200000);
  EXPECT_DOUBLE_EQ(usage["saved_usd"].GetDouble(), 0.4 + 0.16);
  EXPECT_DOUBLE_EQ(usage["wall_seconds"].GetDouble(), 95);
  EXPECT_DOUBLE_EQ(usage["prices_usd_per_mtok"]["cached_input"].GetDouble(), 0.5);
  EXPECT_THAT(Read(out + "/report.html"),
              HasSubstr("$2.24: 800000 input tokens (0 cached), 80000 output tokens; 2 rows from "
                        "the verdict cache saved $0.56; wall time 1m35s"));
  EXPECT_THAT(Read(out + "/verdicts.jsonl"), HasSubstr("\"from_cache\":true"));
  // Under a minute, tenths of a second: a 0.95 s run is not "0".
  context_.wall_time = absl::Milliseconds(950);
  HB_ASSERT_OK(
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, out).status());
  EXPECT_THAT(Read(out + "/report.html"), HasSubstr("; wall time 900ms"));

  // Unknown wall time (score, merge) is null.
  context_.wall_time.reset();
  HB_ASSERT_OK(
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, out).status());
  EXPECT_TRUE(ParseJson(Read(out + "/summary.json"))["usage"]["wall_seconds"].IsNull());
}

// Rows graded through the Batch API are priced at the context's batch price factor, in
// summary.json, report.html and verdicts.jsonl (so `score` and `merge` price them the same).
TEST_F(CheckpointReportTest, BatchRowsArePricedAtTheBatchFactor) {
  for (VerdictRow& row : verdicts_) {
    row.prompt_tokens = 100000;
    row.cached_tokens = 0;
    row.completion_tokens = 10000;
    row.batch = row.prompt_id != "A";  // 7 of the 10 rows
  }
  context_.prices = TokenPrices{2.0, 0.5, 8.0};
  context_.batch_price_factor = 0.5;
  const std::string out = dir_ + "/out";
  HB_ASSERT_OK_AND_ASSIGN(
      CheckpointResult result,
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, out));
  EXPECT_EQ(result.usage.batch_rows, 7);
  EXPECT_EQ(result.usage.batch.prompt_tokens, 700000);
  EXPECT_EQ(result.usage.prompt_tokens, 1000000);
  const rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
  const rapidjson::Value& usage = summary["usage"];
  // Per row $0.28 online: 3 rows online ($0.84) + 7 rows at half ($0.98).
  EXPECT_DOUBLE_EQ(usage["cost_usd"].GetDouble(), 0.84 + 0.98);
  EXPECT_EQ(usage["batch_rows"].GetInt64(), 7);
  EXPECT_DOUBLE_EQ(usage["batch_price_factor"].GetDouble(), 0.5);
  EXPECT_THAT(Read(out + "/report.html"),
              HasSubstr("$1.82: 1000000 input tokens (0 cached), 100000 output tokens; 7 rows "
                        "through the Batch API at x0.5 the price"));
  EXPECT_THAT(Read(out + "/verdicts.jsonl"), HasSubstr("\"batch\":true"));
}

// run's final line sums the checkpoints' usage: every field, the cost of the sum is the sum of
// the costs.
TEST(ReportUsageTest, SumsEveryFieldAndPricesTheSum) {
  VerdictRow online, batch, cached;
  online.attempts = 2;
  online.prompt_tokens = 1000;
  online.cached_tokens = 100;
  online.completion_tokens = 50;
  batch = online;
  batch.batch = true;
  cached = online;
  cached.from_cache = true;
  ReportUsage a, b;
  a.Add(online);
  a.Add(cached);
  b.Add(batch);
  ReportUsage sum = a;
  sum += b;
  EXPECT_EQ(sum.attempts, 6);
  EXPECT_EQ(sum.prompt_tokens, 2000);
  EXPECT_EQ(sum.cached_tokens, 200);
  EXPECT_EQ(sum.completion_tokens, 100);
  EXPECT_EQ(sum.from_cache_rows, 1);
  EXPECT_EQ(sum.saved.prompt_tokens, 1000);
  EXPECT_EQ(sum.batch_rows, 1);
  EXPECT_EQ(sum.batch.prompt_tokens, 1000);
  const TokenPrices prices{2.0, 0.5, 8.0};
  EXPECT_DOUBLE_EQ(sum.CostUsd(prices, 0.5), a.CostUsd(prices, 0.5) + b.CostUsd(prices, 0.5));
  EXPECT_DOUBLE_EQ(b.CostUsd(prices, 0.5), 0.5 * a.CostUsd(prices, 0.5));
}

TEST_F(CheckpointReportTest, ScoresGradedTasksAndExplainsTheOthers) {
  const std::string out = dir_ + "/out";
  HB_ASSERT_OK_AND_ASSIGN(
      CheckpointResult result,
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, out));
  const double a = 1.0 / 3, b = 1.0, f = -0.25;
  EXPECT_EQ(result.tasks, 6);
  EXPECT_EQ(result.graded, 3);
  EXPECT_EQ(result.not_graded, 3);
  EXPECT_EQ(result.rows, 12);  // rubric rows of A, B, D, E, F (C has no response)
  EXPECT_EQ(result.graded_rows, 10);
  EXPECT_EQ(result.failed_rows, 1);
  EXPECT_DOUBLE_EQ(result.score, (a + b + f) / 3);
  EXPECT_THAT(result.task_scores, ElementsAre(Optional(a), Optional(b), std::nullopt, std::nullopt,
                                              std::nullopt, Optional(f)));
  EXPECT_THAT(result.prompt_ids, ElementsAre("A", "B", "C", "D", "E", "F"));

  std::vector<rapidjson::Document> tasks = ParseJsonl(out + "/tasks.jsonl");
  ASSERT_EQ(tasks.size(), 6u);
  EXPECT_STREQ(tasks[0]["prompt_id"].GetString(), "A");
  EXPECT_DOUBLE_EQ(tasks[0]["score"].GetDouble(), a);
  EXPECT_FALSE(tasks[0].HasMember("error"));
  EXPECT_EQ(tasks[0]["completion_id"].GetString(), Sha256Hex("Areply A"));
  EXPECT_STREQ(tasks[0]["system_prompt"].GetString(), "be brief");
  EXPECT_TRUE(tasks[1]["system_prompt"].IsNull());
  // The task's metrics, in the reference's order.
  std::vector<std::string> keys;
  for (const auto& m : tasks[0]["metrics"].GetObject()) keys.push_back(m.name.GetString());
  EXPECT_THAT(keys, ElementsAre("overall_score", "theme:alpha", "axis:accuracy", "level:example",
                                "axis:completeness"));
  EXPECT_DOUBLE_EQ(tasks[0]["metrics"]["axis:accuracy"].GetDouble(), 0.5);  // (10-5)/10
  EXPECT_DOUBLE_EQ(tasks[0]["metrics"]["axis:completeness"].GetDouble(), 0.0);
  const rapidjson::Value& item = tasks[0]["rubric_items"][2];
  EXPECT_STREQ(item["criterion"].GetString(), "adds a wrong claim");
  EXPECT_EQ(item["points"].GetInt(), -5);
  EXPECT_TRUE(item["criteria_met"].GetBool());
  EXPECT_STREQ(item["explanation"].GetString(), "wrong claim present");

  EXPECT_TRUE(tasks[2]["score"].IsNull());
  EXPECT_STREQ(tasks[2]["error"].GetString(), "no response");
  EXPECT_TRUE(tasks[2]["response"].IsNull());
  EXPECT_TRUE(tasks[2]["completion_id"].IsNull());
  EXPECT_TRUE(tasks[3]["score"].IsNull());
  EXPECT_STREQ(tasks[3]["error"].GetString(),
               "1 of 3 rubric rows failed: [1] upstream returned 400");
  EXPECT_STREQ(tasks[3]["rubric_items"][1]["failure"].GetString(), "upstream returned 400");
  EXPECT_TRUE(tasks[3]["rubric_items"][1]["criteria_met"].IsNull());
  EXPECT_TRUE(tasks[4]["score"].IsNull());
  EXPECT_STREQ(tasks[4]["error"].GetString(),
               "1 of 2 rubric rows have no verdict (rubric_index 1)");
  EXPECT_TRUE(tasks[4]["metrics"].ObjectEmpty());
  EXPECT_DOUBLE_EQ(tasks[5]["score"].GetDouble(), f);

  rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
  EXPECT_DOUBLE_EQ(summary["score"].GetDouble(), (a + b + f) / 3);
  EXPECT_STREQ(summary["checkpoint"].GetString(), "ckpt <1>");
  const rapidjson::Value& metrics = summary["metrics"];
  EXPECT_FALSE(metrics.HasMember("score"));  // the top line, removed from the metrics
  EXPECT_EQ(metrics["score:n_samples"].GetInt(), 3);
  EXPECT_EQ(metrics["overall_score:n_samples"].GetInt(), 3);
  EXPECT_DOUBLE_EQ(metrics["theme:alpha"].GetDouble(), (a + f) / 2);
  EXPECT_EQ(metrics["theme:alpha:n_samples"].GetInt(), 2);
  EXPECT_DOUBLE_EQ(metrics["theme:beta"].GetDouble(), 1.0);
  EXPECT_EQ(metrics["theme:beta:n_samples"].GetInt(), 1);
  // axis:accuracy per task: A 0.5, B 1, F -0.25 -> mean 5/12.
  EXPECT_DOUBLE_EQ(metrics["axis:accuracy"].GetDouble(), (0.5 + 1.0 - 0.25) / 3);
  EXPECT_EQ(summary["counts"]["tasks"].GetInt(), 6);
  EXPECT_EQ(summary["counts"]["graded"].GetInt(), 3);
  EXPECT_EQ(summary["counts"]["not_graded"].GetInt(), 3);
  EXPECT_EQ(summary["counts"]["rows"].GetInt(), 12);
  EXPECT_EQ(summary["counts"]["graded_rows"].GetInt(), 10);
  EXPECT_EQ(summary["counts"]["failed_rows"].GetInt(), 1);
  EXPECT_EQ(summary["usage"]["attempts"].GetInt(), 11);
  EXPECT_EQ(summary["usage"]["prompt_tokens"].GetInt(), 1000);
  EXPECT_EQ(summary["usage"]["cached_tokens"].GetInt(), 50);
  const rapidjson::Value& provenance = summary["provenance"];
  EXPECT_EQ(provenance["dataset"]["sha256"].GetString(), dataset_.sha256);
  EXPECT_EQ(provenance["responses"]["sha256"].GetString(), responses_.sha256);
  EXPECT_TRUE(provenance["examples"].IsNull());
  EXPECT_STREQ(provenance["grader_template_sha256"].GetString(), "feed");
  EXPECT_STREQ(provenance["grader"]["model"].GetString(), "gpt-4.1-2025-04-14");
  EXPECT_DOUBLE_EQ(provenance["grader"]["temperature"].GetDouble(), 0.5);
  EXPECT_EQ(provenance["grader"]["max_tokens"].GetInt(), 2048);
  EXPECT_STREQ(provenance["grader"]["system_message"].GetString(), "You are a helpful assistant.");
  EXPECT_STREQ(provenance["grader_endpoint"].GetString(), "http://127.0.0.1:1/v1");
  EXPECT_EQ(provenance["seed"].GetInt(), 3);
  EXPECT_EQ(provenance["bootstrap_samples"].GetInt(), 1000);
  EXPECT_STREQ(provenance["tool_version"].GetString(), ToolVersion());
  EXPECT_TRUE(provenance["simulated"].GetBool());
  EXPECT_TRUE(provenance["incomplete"].GetBool());  // E has a row without verdict
  EXPECT_STREQ(provenance["generated_at"].GetString(), "2026-01-02T03:04:05Z");

  // verdicts.jsonl: every graded row, sorted by task then rubric index; failures likewise.
  HB_ASSERT_OK_AND_ASSIGN(std::vector<VerdictRow> reread,
                          LoadVerdicts(out + "/verdicts.jsonl", dataset_));
  std::vector<std::string> order;
  for (const VerdictRow& row : reread)
    order.push_back(absl::StrCat(row.prompt_id, row.rubric_index));
  EXPECT_THAT(order, ElementsAre("A0", "A1", "A2", "B0", "B1", "D0", "D2", "E0", "F0", "F1"));
  EXPECT_EQ(reread[2].attempts, 2);
  EXPECT_EQ(reread[2].cached_tokens, 50);
  EXPECT_EQ(Read(out + "/failures.jsonl"),
            R"({"prompt_id":"D","rubric_index":1,"reason":"upstream returned 400"})"
            "\n");
}

TEST_F(CheckpointReportTest, RescoringItsOwnVerdictFileGivesIdenticalReports) {
  HB_ASSERT_OK(
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, dir_ + "/first")
          .status());
  HB_ASSERT_OK_AND_ASSIGN(std::vector<VerdictRow> verdicts,
                          LoadVerdicts(dir_ + "/first/verdicts.jsonl", dataset_));
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowFailure> failures,
                          LoadFailures(dir_ + "/first/failures.jsonl", dataset_));
  HB_ASSERT_OK(
      WriteCheckpointReport(dataset_, responses_, verdicts, failures, context_, dir_ + "/second")
          .status());
  for (const char* file :
       {"tasks.jsonl", "summary.json", "verdicts.jsonl", "failures.jsonl", "report.html"}) {
    EXPECT_EQ(Read(dir_ + "/first/" + file), Read(dir_ + "/second/" + file)) << file;
  }
}

TEST_F(CheckpointReportTest, HtmlEscapesEverythingAndOrdersWorstTasksAndVerdicts) {
  const std::string out = dir_ + "/out";
  HB_ASSERT_OK(
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, out).status());
  const std::string html = Read(out + "/report.html");
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;steal()&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("ckpt &lt;1&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("<link")));  // self-contained
  EXPECT_THAT(html, HasSubstr("SIMULATED"));
  EXPECT_THAT(html, HasSubstr("INCOMPLETE"));
  EXPECT_THAT(html, HasSubstr("Not graded: no response"));
  EXPECT_THAT(html, HasSubstr("Not graded: 1 of 3 rubric rows failed: [1] upstream returned 400"));

  // Worst tasks: F (-0.25), A (0.333), B (1.000); ungraded tasks are not listed.
  size_t worst = html.find("<h2>Worst tasks</h2>");
  size_t tasks = html.find("<h2>Tasks</h2>");
  ASSERT_NE(worst, std::string::npos);
  ASSERT_NE(tasks, std::string::npos);
  std::string table = html.substr(worst, tasks - worst);
  size_t f = table.find("href=\"#task-6\""), a = table.find("href=\"#task-1\""),
         b = table.find("href=\"#task-2\"");
  ASSERT_NE(f, std::string::npos);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_LT(f, a);
  EXPECT_LT(a, b);
  EXPECT_EQ(table.find("href=\"#task-3\""), std::string::npos);
  EXPECT_THAT(table, HasSubstr("-0.250"));

  // Task A's verdicts: the [False] item first, then the others in rubric order.
  size_t section = html.find("id=\"task-1\"");
  size_t follow_up = html.find("mentions follow-up", section);
  size_t right = html.find("gives the right answer", section);
  size_t wrong = html.find("adds a wrong claim", section);
  EXPECT_LT(follow_up, right);
  EXPECT_LT(right, wrong);
  // The conversation shows the policy's system prompt and the reply.
  EXPECT_THAT(html, HasSubstr("system:</span> be brief"));
  EXPECT_THAT(html, HasSubstr("Explanation: no follow-up"));
}

TEST_F(CheckpointReportTest, NoBannersForACompleteRealRun) {
  context_.simulated = false;
  verdicts_.push_back({"E", 1, false, "e1", 1, 0, 0, 0});
  const std::string out = dir_ + "/out";
  HB_ASSERT_OK(
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, out).status());
  const std::string html = Read(out + "/report.html");
  EXPECT_THAT(html, Not(HasSubstr("SIMULATED")));
  EXPECT_THAT(html, Not(HasSubstr("INCOMPLETE")));
  rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
  EXPECT_FALSE(summary["provenance"]["incomplete"].GetBool());
  EXPECT_EQ(summary["counts"]["graded"].GetInt(), 4);
}

// The provenance of a Responses grader lists only what that API sends: no temperature,
// max_tokens or system message (neither in summary.json nor in report.html).
TEST_F(CheckpointReportTest, AResponsesGradersProvenanceListsOnlyWhatItSends) {
  context_.grader.model = "gpt-5.4-2026-03-05";
  context_.grader.api = GraderApi::kResponses;
  context_.grader.reasoning_effort = "low";
  const std::string out = dir_ + "/out";
  HB_ASSERT_OK(
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, out).status());
  rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
  const rapidjson::Value& grader = summary["provenance"]["grader"];
  EXPECT_STREQ(grader["api"].GetString(), "responses");
  EXPECT_STREQ(grader["reasoning_effort"].GetString(), "low");
  for (const char* unsent : {"temperature", "max_tokens", "system_message"}) {
    EXPECT_FALSE(grader.HasMember(unsent)) << unsent;
  }
  const std::string html = Read(out + "/report.html");
  EXPECT_THAT(html, HasSubstr("gpt-5.4-2026-03-05, Responses API, reasoning effort low"));
  EXPECT_THAT(html, Not(HasSubstr("max_tokens")));
  EXPECT_THAT(html, Not(HasSubstr("You are a helpful assistant.")));
}

// Why a run is simulated is said where it is marked: summary.json and the report's banner.
TEST_F(CheckpointReportTest, TheSimulatedMarkSaysWhy) {
  context_.simulated_reason = "the grader endpoint identified itself as hb-llm-sim";
  const std::string out = dir_ + "/out";
  HB_ASSERT_OK(
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, out).status());
  rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
  EXPECT_TRUE(summary["provenance"]["simulated"].GetBool());
  EXPECT_STREQ(summary["provenance"]["simulated_reason"].GetString(),
               "the grader endpoint identified itself as hb-llm-sim");
  EXPECT_THAT(Read(out + "/report.html"),
              HasSubstr("SIMULATED (the grader endpoint identified itself as hb-llm-sim): these "
                        "verdicts are not a real grader model's."));
}

TEST_F(CheckpointReportTest, NothingGradedGivesANullScore) {
  HB_ASSERT_OK_AND_ASSIGN(
      CheckpointResult result,
      WriteCheckpointReport(dataset_, responses_, {}, {}, context_, dir_ + "/out"));
  EXPECT_TRUE(std::isnan(result.score));
  EXPECT_EQ(result.graded, 0);
  rapidjson::Document summary = ParseJson(Read(dir_ + "/out/summary.json"));
  EXPECT_TRUE(summary["score"].IsNull());
  EXPECT_TRUE(summary["metrics"].ObjectEmpty());
}

TEST_F(CheckpointReportTest, RejectsRowsThatDoNotFit) {
  std::vector<VerdictRow> unknown = {{"Z", 0, true, "", 1, 0, 0, 0}};
  EXPECT_THAT(WriteCheckpointReport(dataset_, responses_, unknown, {}, context_, dir_ + "/o"),
              StatusIs(absl::StatusCode::kInvalidArgument, "verdict for unknown prompt_id 'Z'"));
  std::vector<VerdictRow> out_of_range = {{"A", 3, true, "", 1, 0, 0, 0}};
  EXPECT_THAT(WriteCheckpointReport(dataset_, responses_, out_of_range, {}, context_, dir_ + "/o"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "verdict rubric_index 3 out of range for prompt_id 'A' (3 rubric items)"));
  std::vector<VerdictRow> no_response = {{"C", 0, true, "", 1, 0, 0, 0}};
  EXPECT_THAT(WriteCheckpointReport(dataset_, responses_, no_response, {}, context_, dir_ + "/o"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "verdict for prompt_id 'C', which has no response"));
  std::vector<VerdictRow> twice = {{"A", 1, true, "", 1, 0, 0, 0}, {"A", 1, false, "", 1, 0, 0, 0}};
  EXPECT_THAT(WriteCheckpointReport(dataset_, responses_, twice, {}, context_, dir_ + "/o"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "duplicate verdict (prompt_id 'A', rubric_index 1)"));
  std::vector<RowFailure> bad_failure = {{"Y", 0, "x"}};
  EXPECT_THAT(WriteCheckpointReport(dataset_, responses_, {}, bad_failure, context_, dir_ + "/o"),
              StatusIs(absl::StatusCode::kInvalidArgument, "failure for unknown prompt_id 'Y'"));
}

TEST_F(CheckpointReportTest, UnwritableDirectoryNamesThePath) {
  HB_ASSERT_OK(WriteFileAtomically(dir_ + "/plain", "x"));
  EXPECT_THAT(WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_,
                                    dir_ + "/plain/report"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(dir_ + "/plain/report")));
}

TEST(HtmlReportTest, EscapesTheFiveSpecialCharacters) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

TEST(HtmlReportTest, WorstTasksAreStableAndLimited) {
  std::vector<HtmlTask> tasks(14);
  for (size_t i = 0; i < tasks.size(); ++i) tasks[i].score = (i % 2 == 0) ? 0.5 : 0.1;
  tasks[3].score = std::nullopt;
  tasks[12].score = -1;
  EXPECT_THAT(WorstTasks(tasks, 10), ElementsAre(12, 1, 5, 7, 9, 11, 13, 0, 2, 4));
}

TEST(HtmlReportTest, RubricDisplayOrderPutsFalseFirstStably) {
  std::vector<HtmlRubricRow> rows(5);
  rows[0].criteria_met = true;
  rows[1].criteria_met = false;
  rows[2].criteria_met = std::nullopt;
  rows[3].criteria_met = false;
  rows[4].criteria_met = true;
  EXPECT_THAT(RubricDisplayOrder(rows), ElementsAre(1, 3, 0, 2, 4));
}

// --- comparison ----------------------------------------------------------------------------

class ComparisonTest : public CheckpointReportTest {};

TEST_F(ComparisonTest, PairsOnlyTasksGradedInBothAndMatchesTheNumpyReference) {
  HB_ASSERT_OK_AND_ASSIGN(
      CheckpointResult base,
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, dir_ + "/base"));
  // The new checkpoint meets A's follow-up item (A: 10/15), grades E fully and fails F's
  // row 0.
  std::vector<VerdictRow> verdicts = verdicts_;
  for (VerdictRow& row : verdicts) {
    if (row.prompt_id == "A" && row.rubric_index == 1) row.criteria_met = true;
  }
  verdicts.push_back({"E", 1, true, "e1", 1, 0, 0, 0});
  verdicts.erase(
      std::remove_if(verdicts.begin(), verdicts.end(),
                     [](const VerdictRow& r) { return r.prompt_id == "F" && r.rubric_index == 0; }),
      verdicts.end());
  std::vector<RowFailure> failures = failures_;
  failures.push_back({"F", 0, "timeout"});
  ReportContext context = context_;
  context.checkpoint = "new";
  HB_ASSERT_OK_AND_ASSIGN(
      CheckpointResult next,
      WriteCheckpointReport(dataset_, responses_, verdicts, failures, context, dir_ + "/new"));
  HB_ASSERT_OK(WriteComparison({base, next}, 11, dir_ + "/cmp"));

  rapidjson::Document cmp = ParseJson(Read(dir_ + "/cmp/comparison.json"));
  EXPECT_STREQ(cmp["baseline"].GetString(), "ckpt <1>");
  ASSERT_EQ(cmp["checkpoints"].Size(), 2u);
  EXPECT_DOUBLE_EQ(cmp["checkpoints"][1]["score"].GetDouble(), next.score);
  EXPECT_DOUBLE_EQ(cmp["checkpoints"][0]["bootstrap_std"].GetDouble(), base.score_bootstrap_std);
  ASSERT_EQ(cmp["differences"].Size(), 1u);
  const rapidjson::Value& diff = cmp["differences"][0];
  // Graded in both: A and B only (F fails in "new", E is missing in the baseline).
  EXPECT_EQ(diff["n"].GetInt(), 2);
  EXPECT_DOUBLE_EQ(diff["difference"].GetDouble(), (2.0 / 3 + 1.0) / 2 - (1.0 / 3 + 1.0) / 2);
  EXPECT_LE(diff["ci_low"].GetDouble(), diff["difference"].GetDouble());
  EXPECT_GE(diff["ci_high"].GetDouble(), diff["difference"].GetDouble());
  const std::string html = Read(dir_ + "/cmp/comparison.html");
  EXPECT_THAT(html, HasSubstr("href=\"ckpt%20%3C1%3E/report.html\""));
  // The trend picture: the score across both checkpoints, plus one line per theme.
  EXPECT_THAT(html, HasSubstr("data-name=\"score\" data-points=\"2\""));
  int themes = 0;
  for (const MetricSummary& m : base.aggregate.metrics) themes += m.name.rfind("theme:", 0) == 0;
  EXPECT_THAT(html,
              HasSubstr(absl::StrCat("data-checkpoints=\"2\" data-series=\"", 1 + themes, "\"")));
  EXPECT_THAT(html, HasSubstr("ckpt &lt;1&gt;"));

  // Cross-check the paired bootstrap against scripts/reference/aggregate_reference.py.
  const std::string script =
      ::hb::testing::SourceDir() + "/scripts/reference/aggregate_reference.py";
  HB_ASSERT_OK(WriteFileAtomically(
      dir_ + "/in.json",
      // Python repr of 1/3 and 2/3 (A's two scores) parse back to exactly those doubles.
      R"({"paired":[{"seed":11,"samples":1000,"a":[0.3333333333333333,1.0],)"
      R"("b":[0.6666666666666666,1.0]}]})"));
  const std::string command =
      absl::StrCat("/usr/bin/python3 ", script, " ", dir_, "/in.json ", dir_, "/out.json");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  rapidjson::Document reference = ParseJson(Read(dir_ + "/out.json"));
  auto hex = [](const rapidjson::Value& v) { return std::strtod(v.GetString(), nullptr); };
  EXPECT_EQ(diff["difference"].GetDouble(), hex(reference["paired"][0]["difference"]));
  EXPECT_EQ(diff["ci_low"].GetDouble(), hex(reference["paired"][0]["ci_low"]));
  EXPECT_EQ(diff["ci_high"].GetDouble(), hex(reference["paired"][0]["ci_high"]));
}

TEST_F(ComparisonTest, PairsByPromptIdAndRejectsSingleCheckpointsAndRepeatedNames) {
  HB_ASSERT_OK_AND_ASSIGN(
      CheckpointResult base,
      WriteCheckpointReport(dataset_, responses_, verdicts_, failures_, context_, dir_ + "/base"));
  EXPECT_THAT(WriteComparison({base}, 0, dir_ + "/cmp"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a comparison needs at least two checkpoints, got 1"));
  EXPECT_THAT(
      WriteComparison({base, base}, 0, dir_ + "/cmp"),
      StatusIs(absl::StatusCode::kInvalidArgument, "checkpoint name 'ckpt <1>' used twice"));
  // Graded elsewhere on other tasks in another order: only A and B (graded in both) pair, by
  // prompt_id; the baseline is the second checkpoint, the order stays as given.
  CheckpointResult other = base;
  other.checkpoint = "other";
  other.dir = dir_ + "/elsewhere/other";
  other.simulated = true;
  base.simulated = false;
  other.prompt_ids = {"B", "Q", "A"};
  other.task_scores = {0.5, 1.0, 0.0};
  HB_ASSERT_OK(WriteComparison({other, base}, 3, dir_ + "/cmp", /*baseline=*/1));
  rapidjson::Document cmp = ParseJson(Read(dir_ + "/cmp/comparison.json"));
  EXPECT_STREQ(cmp["baseline"].GetString(), "ckpt <1>");
  EXPECT_EQ(cmp["common_tasks"].GetInt(), 2);
  EXPECT_STREQ(cmp["checkpoints"][0]["checkpoint"].GetString(), "other");
  EXPECT_EQ(cmp["checkpoints"][0]["path"].GetString(), dir_ + "/elsewhere/other");
  EXPECT_TRUE(cmp["checkpoints"][0]["simulated"].GetBool());
  EXPECT_FALSE(cmp["checkpoints"][1]["simulated"].GetBool());
  EXPECT_TRUE(cmp["checkpoints"][1]["incomplete"].GetBool());  // E has a missing row
  ASSERT_EQ(cmp["differences"].Size(), 1u);
  const rapidjson::Value& diff = cmp["differences"][0];
  EXPECT_EQ(diff["n"].GetInt(), 2);
  // Baseline A = 1/3, B = 1; other A = 0, B = 0.5.
  EXPECT_DOUBLE_EQ(diff["difference"].GetDouble(), (0.0 + 0.5) / 2 - (1.0 / 3 + 1.0) / 2);
  const std::string html = Read(dir_ + "/cmp/comparison.html");
  EXPECT_THAT(html, HasSubstr("href=\"../elsewhere/other/report.html\""));
  EXPECT_THAT(html, HasSubstr("SIMULATED: other graded by the grader simulator"));
  EXPECT_THAT(html, HasSubstr("<b>2</b> tasks graded by every checkpoint"));
}

}  // namespace
}  // namespace hb
