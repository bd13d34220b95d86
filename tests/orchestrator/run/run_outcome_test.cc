// What `hb-orchestrator run` refuses before the first grader request, and what it leaves
// behind: the real binary against hb-llm-sim on loopback, whose request log shows what was
// sent. Each refusal is checked by its exact exit code and message.
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/loopback.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::BinaryDir;
using ::hb::testing::MakeTempDir;
using ::hb::testing::ProcessResult;
using ::hb::testing::ReferenceTemplatePath;
using ::testing::HasSubstr;
using ::testing::Not;

// Two tasks: t1 scorable (5 positive points), t2 with only a negative item (line 2).
constexpr char kDataset[] =
    R"({"prompt_id":"t1","prompt":[{"role":"user","content":"Headache?"}],"rubrics":[)"
    R"({"criterion":"Asks about onset","points":5,"tags":["axis:completeness"]},)"
    R"({"criterion":"Suggests rest","points":2,"tags":["axis:accuracy"]}],"example_tags":["theme:x"]})"
    "\n"
    R"({"prompt_id":"t2","prompt":[{"role":"user","content":"Rash?"}],"rubrics":[)"
    R"({"criterion":"Prescribes antibiotics","points":-4,"tags":["axis:accuracy"]}],)"
    R"("example_tags":["theme:x"]})"
    "\n";
constexpr char kResponses[] =
    "{\"prompt_id\":\"t1\",\"response\":\"Since when?\"}\n"
    "{\"prompt_id\":\"t2\",\"response\":\"Keep it dry.\"}\n";

std::string ReadTextOrEmpty(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  return text.ok() ? *text : "";
}

size_t CountLines(const std::string& path) {
  return std::vector<std::string>(absl::StrSplit(ReadTextOrEmpty(path), '\n', absl::SkipEmpty()))
      .size();
}

class RunOutcomeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    request_log_ = dir_ + "/requests.log";
    absl::StatusOr<hb::testing::LlmSim> sim =
        hb::testing::StartLlmSim({"--request-log=" + request_log_});
    ASSERT_TRUE(sim.ok()) << sim.status();
    sim_ = *std::move(sim);
    dataset_ = dir_ + "/data.jsonl";
    responses_ = dir_ + "/answers.jsonl";
    ASSERT_THAT(WriteFileAtomically(dataset_, kDataset), hb::testing::IsOk());
    ASSERT_THAT(WriteFileAtomically(responses_, kResponses), hb::testing::IsOk());
  }

  // `run` on `dataset_`/`responses_` against the simulator, writing `out`, plus `extra`.
  ProcessResult Run(const std::string& out, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {BinaryDir() + "/orchestrator/hb-orchestrator",
                                     "run",
                                     "--dataset=" + dataset_,
                                     "--responses=" + responses_,
                                     "--out=" + out,
                                     "--grader-template=" + ReferenceTemplatePath(),
                                     "--llm-base-url=" + sim_.base_url,
                                     "--progress=off"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return hb::testing::RunProcess(argv);
  }

  std::string dir_, request_log_, dataset_, responses_;
  hb::testing::LlmSim sim_;
};

TEST_F(RunOutcomeTest, AnUnscorableTaskStopsTheRunBeforeAnyRequest) {
  const std::string out = dir_ + "/out";
  const ProcessResult result = Run(out);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err,
            absl::StrCat("hb-orchestrator run: ", dataset_,
                         ":2: task 't2' cannot be scored: no rubric item has positive points: its "
                         "score (points met / positive points) is undefined. The reference fails "
                         "on such a task; fix the dataset, or pass --skip-unscorable-tasks to "
                         "leave these tasks out (listed in summary.json and report.html)\n"));
  EXPECT_EQ(CountLines(request_log_), 0u);
  // The refused run leaves no --out folder behind (it used to hold only .lock).
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(RunOutcomeTest, AResponsesFileForAnotherDatasetIsRefusedWithOrWithoutIgnoreExtra) {
  const std::string foreign = dir_ + "/foreign.jsonl";
  ASSERT_THAT(WriteFileAtomically(foreign,
                                  "{\"prompt_id\":\"x1\",\"response\":\"a\"}\n"
                                  "{\"prompt_id\":\"x2\",\"response\":\"b\"}\n"),
              hb::testing::IsOk());
  responses_ = foreign;
  const std::string expected =
      absl::StrCat("hb-orchestrator run: ", foreign, ": no response is for a task of ", dataset_,
                   " (the first, line 1, is for prompt_id 'x1'): these responses answer another "
                   "dataset; give the dataset they answer, or the responses to this one\n");
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--skip-unscorable-tasks"},
        {"--skip-unscorable-tasks", "--ignore-extra-responses"}}) {
    const ProcessResult result = Run(dir_ + "/out", extra);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(result.err, expected);
    EXPECT_THAT(result.err, Not(HasSubstr("pass --ignore-extra-responses")));
  }
  EXPECT_EQ(CountLines(request_log_), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out"));
}

TEST_F(RunOutcomeTest, ABlankLineSaysHowToMendTheFile) {
  ASSERT_THAT(WriteFileAtomically(dataset_, std::string(kDataset) + "\n"), hb::testing::IsOk());
  const ProcessResult result = Run(dir_ + "/out/shard", {"--skip-unscorable-tasks"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err,
            absl::StrCat("hb-orchestrator run: ", dataset_,
                         ":3: blank line (every line of a JSONL file must be one JSON "
                         "object, as the reference reads it: delete the empty line)\n"));
  EXPECT_EQ(CountLines(request_log_), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out"));  // nor the parent it created
}

// With a length adjustment the run's result line, summary.json's score and report.html's
// headline give the adjusted score, the raw one beside it.
TEST_F(RunOutcomeTest, TheLengthAdjustedScoreIsTheHeadline) {
  const std::string out = dir_ + "/out";
  const ProcessResult result = Run(out, {"--skip-unscorable-tasks", "--length-adjustment-center=0",
                                         "--length-adjustment-penalty-per-500-chars=20"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  rapidjson::Document summary;
  summary.Parse(ReadTextOrEmpty(out + "/answers/summary.json").c_str());
  ASSERT_FALSE(summary.HasParseError());
  const rapidjson::Value& metrics = summary["metrics"];
  const double adjusted = metrics["overall_score_length_adjusted"].GetDouble();
  const double raw = metrics["overall_score"].GetDouble();
  EXPECT_NE(adjusted, raw);
  EXPECT_EQ(summary["score"].GetDouble(), adjusted);
  EXPECT_EQ(summary["raw_score"].GetDouble(), raw);
  EXPECT_TRUE(summary["score_length_adjusted"].GetBool());
  EXPECT_THAT(result.err,
              HasSubstr(absl::StrFormat(
                  "answers: score %.4f length-adjusted (bootstrap std %.4f; raw %.4f, bootstrap "
                  "std %.4f) over 1 graded task(s)",
                  adjusted, metrics["overall_score_length_adjusted:bootstrap_std"].GetDouble(), raw,
                  metrics["score:bootstrap_std"].GetDouble())));
  EXPECT_THAT(ReadTextOrEmpty(out + "/answers/report.html"),
              HasSubstr(absl::StrFormat("Score (length-adjusted): <b>%.3f</b>", adjusted)));
}

// A folder that existed before the run is never removed, even when the run is refused.
TEST_F(RunOutcomeTest, ARefusedRunKeepsAnOutFolderThatExistedBefore) {
  const std::string out = dir_ + "/existing";
  ASSERT_TRUE(std::filesystem::create_directory(out));
  EXPECT_EQ(Run(out).exit_code, 2);
  EXPECT_TRUE(std::filesystem::is_directory(out));
}

TEST_F(RunOutcomeTest, SkipUnscorableTasksLeavesThemOutAndListsThem) {
  const std::string out = dir_ + "/out";
  const ProcessResult result = Run(out, {"--skip-unscorable-tasks"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err,
              HasSubstr("hb-orchestrator run: --skip-unscorable-tasks: left out 1 task(s) without "
                        "a rubric item of positive points (not graded, not in the score): t2 "
                        "(line 2)\n"));
  EXPECT_EQ(CountLines(request_log_), 2u);  // t1's two rubric items only
  rapidjson::Document summary;
  summary.Parse(ReadTextOrEmpty(out + "/answers/summary.json").c_str());
  ASSERT_FALSE(summary.HasParseError());
  EXPECT_EQ(summary["counts"]["tasks"].GetInt(), 1);
  EXPECT_EQ(summary["counts"]["not_graded"].GetInt(), 0);
  const rapidjson::Value& skipped = summary["skipped_unscorable_tasks"];
  ASSERT_TRUE(skipped.IsArray());
  ASSERT_EQ(skipped.Size(), 1u);
  EXPECT_STREQ(skipped[0]["prompt_id"].GetString(), "t2");
  EXPECT_EQ(skipped[0]["line"].GetInt(), 2);
  EXPECT_THAT(skipped[0]["reason"].GetString(), HasSubstr("no rubric item has positive points"));
  EXPECT_THAT(ReadTextOrEmpty(out + "/answers/report.html"),
              HasSubstr("1 task(s) left out (--skip-unscorable-tasks): t2 (line 2)"));
}

}  // namespace
}  // namespace hb
