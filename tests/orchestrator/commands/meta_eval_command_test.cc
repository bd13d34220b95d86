// `hb-orchestrator meta-eval` end to end: the binary with its embedded grader against a loopback
// chat-completions endpoint that answers each meta-eval row of the synthetic file with the
// verdict tests/common/grading/testdata/meta_eval_synthetic.verdicts.json gives it (a row whose
// verdict is null is answered with text that never parses). The metrics are checked against
// scripts/reference/meta_eval_reference.py (the reference's code logic) on those verdicts; then
// resume, and `compare` of two meta-eval folders.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/base/file.h"
#include "common/grading/meta_eval.h"
#include "common/healthbench/meta_eval_dataset.h"
#include "common/healthbench/prompts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/commands/orchestrator_cli.h"
#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/report/meta_eval_report.h"
#include "rapidjson/document.h"
#include "simulator/sim_core.h"
#include "tests/testing/loopback.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::LoopbackHttpServer;
using ::hb::testing::LoopbackRequest;
using ::hb::testing::LoopbackResponse;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

std::string TestData(const std::string& name) {
  return absl::StrCat(hb::testing::SourceDir(), "/tests/common/grading/testdata/", name);
}

std::vector<std::optional<bool>> SyntheticVerdicts() {
  std::stringstream text;
  text << std::ifstream(TestData("meta_eval_synthetic.verdicts.json"), std::ios::binary).rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  std::vector<std::optional<bool>> verdicts;
  if (!doc.IsArray()) return verdicts;
  for (const rapidjson::Value& v : doc.GetArray()) {
    verdicts.push_back(v.IsNull() ? std::nullopt : std::optional<bool>(v.GetBool()));
  }
  return verdicts;
}

// The judge's reply as an OpenAI chat.completion (hb-llm-sim's shape): 1000 prompt and 50
// completion tokens each.
std::string ChatCompletion(const std::string& content) {
  sim::Usage usage;
  usage.prompt_tokens = 1000;
  usage.completion_tokens = 50;
  return sim::BuildCompletionBody("chatcmpl-test", 0, "fake-judge", content, usage);
}

// The judge: answers each row's grader prompt (byte for byte the reference's rendering) with
// that row's verdict; a row with no verdict gets a reply that never parses; a row whose line is
// in `unavailable` gets HTTP 503. Counts the requests per line.
class FakeJudge {
 public:
  FakeJudge() {
    auto tmpl = GraderTemplate::Load(hb::testing::ReferenceTemplatePath());
    EXPECT_TRUE(tmpl.ok()) << tmpl.status();
    auto data = LoadMetaEvalDataset(TestData("meta_eval_synthetic.jsonl"));
    EXPECT_TRUE(data.ok()) << data.status();
    const std::vector<std::optional<bool>> verdicts = SyntheticVerdicts();
    EXPECT_EQ(verdicts.size(), data->rows.size());
    for (size_t i = 0; i < data->rows.size() && i < verdicts.size(); ++i) {
      rows_[MetaEvalGraderPrompt(*tmpl, data->rows[i])] = {data->rows[i].line, verdicts[i]};
    }
    auto server = LoopbackHttpServer::Start(
        [this](const LoopbackRequest& request) { return Answer(request); });
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  std::string base_url() const { return server_->base_url() + "/v1"; }

  void SetUnavailable(std::set<int> lines) {
    absl::MutexLock lock(&mu_);
    unavailable_ = std::move(lines);
  }

  // Rows on `lines` are never answered (the client must give up or be stopped).
  void SetHanging(std::set<int> lines) {
    absl::MutexLock lock(&mu_);
    hanging_ = std::move(lines);
  }

  bool WaitForRequests(size_t n) const { return server_->WaitForRequests(n, absl::Seconds(30)); }

  // Requests per row line since the last call.
  std::map<int, int> TakeRequests() {
    absl::MutexLock lock(&mu_);
    std::map<int, int> out;
    out.swap(requests_);
    return out;
  }

 private:
  LoopbackResponse Answer(const LoopbackRequest& request) {
    // The start-up probe (GET /models) is answered as an OpenAI-compatible judge answers it.
    if (request.method == "GET") return LoopbackResponse{200, {}, R"({"object":"list","data":[]})"};
    rapidjson::Document body;
    body.Parse(request.body.c_str());
    std::string prompt;
    if (body.IsObject() && body.HasMember("messages") && body["messages"].IsArray()) {
      for (const rapidjson::Value& m : body["messages"].GetArray()) {
        if (m.IsObject() && m.HasMember("role") && std::string(m["role"].GetString()) == "user") {
          prompt.assign(m["content"].GetString(), m["content"].GetStringLength());
        }
      }
    }
    const auto it = rows_.find(prompt);
    if (it == rows_.end()) return LoopbackResponse{400, {}, R"({"error":"unknown prompt"})"};
    const auto& [line, verdict] = it->second;
    {
      absl::MutexLock lock(&mu_);
      ++requests_[line];
      if (unavailable_.count(line) > 0) return LoopbackResponse{503, {}, R"({"error":"busy"})"};
      if (hanging_.count(line) > 0) {
        LoopbackResponse never;
        never.hang = true;
        return never;
      }
    }
    if (!verdict.has_value()) return {200, {}, ChatCompletion("I cannot decide.")};
    return {200,
            {},
            ChatCompletion(absl::StrCat(R"({"explanation": "line )", line, R"(", "criteria_met": )",
                                        *verdict ? "true" : "false", "}"))};
  }

  std::map<std::string, std::pair<int, std::optional<bool>>> rows_;
  absl::Mutex mu_;
  std::set<int> unavailable_ ABSL_GUARDED_BY(mu_);
  std::set<int> hanging_ ABSL_GUARDED_BY(mu_);
  std::map<int, int> requests_ ABSL_GUARDED_BY(mu_);
  // Declared last: destroyed (its loop thread joined) first, while Answer's state is alive.
  std::unique_ptr<LoopbackHttpServer> server_;
};

int CountOccurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct Exit {
  int code = -1;
  std::string stderr_text;
};

// Runs the hb-orchestrator binary with `args` to its exit.
Exit RunOrchestrator(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {hb::testing::BinaryDir() + "/orchestrator/hb-orchestrator"};
  argv.insert(argv.end(), args.begin(), args.end());
  hb::testing::ProcessResult result = hb::testing::RunProcess(argv);
  return Exit{result.exit_code, std::move(result.err)};
}

std::vector<std::string> MetaEvalArgs(const FakeJudge& judge, const std::string& out,
                                      const std::string& input_price = "2",
                                      const std::string& output_price = "8") {
  return {"meta-eval",
          "--dataset=" + TestData("meta_eval_synthetic.jsonl"),
          "--out=" + out,
          "--llm-base-url=" + judge.base_url(),
          "--llm-model=fake-judge",
          "--grader-template=" + hb::testing::ReferenceTemplatePath(),
          "--max-attempts=2",
          "--backoff-base=1ms",
          "--backoff-cap=1ms",
          "--row-attempts=1",
          "--progress=off",
          "--price-input-per-mtok=" + input_price,
          "--price-cached-input-per-mtok=0.5",
          "--price-output-per-mtok=" + output_price};
}

// What our meta_eval.json must be over the whole file with `verdicts`.
std::string ExpectedDocument(const std::vector<std::optional<bool>>& verdicts) {
  auto data = LoadMetaEvalDataset(TestData("meta_eval_synthetic.jsonl"));
  EXPECT_TRUE(data.ok()) << data.status();
  auto result = ComputeMetaEval(data->rows, verdicts, {});
  EXPECT_TRUE(result.ok()) << result.status();
  return MetaEvalJson(*result);
}

// meta_eval.json without the "provenance" member it ends with (MetaEvalJson's document), and
// that provenance in `provenance` (parsed).
std::string WithoutProvenance(const std::string& text, rapidjson::Document* provenance = nullptr) {
  const std::string key = ",\n  \"provenance\": ";
  const size_t at = text.rfind(key);
  EXPECT_NE(at, std::string::npos) << "meta_eval.json has no provenance";
  if (at == std::string::npos) return text;
  if (provenance != nullptr) {
    const std::string object = text.substr(at + key.size(), text.rfind('}') - at - key.size());
    provenance->Parse(object.c_str());
    EXPECT_FALSE(provenance->HasParseError()) << object;
  }
  return text.substr(0, at) + "\n}\n";
}

// After a resumed run: the judge was asked only for the rows that had no verdict (`late`, and
// 10 and 23, which never parse), and meta_eval.json is the whole file's document.
void ExpectResumedOnlyTheRowsLeft(FakeJudge& judge, const std::set<int>& late,
                                  const std::string& out) {
  std::set<int> asked;
  for (const auto& [line, n] : judge.TakeRequests()) asked.insert(line);
  std::set<int> expected = late;
  expected.insert(10);
  expected.insert(23);
  EXPECT_EQ(asked, expected);
  HB_ASSERT_OK_AND_ASSIGN(const std::string ours, ReadFile(out + "/meta_eval.json"));
  EXPECT_EQ(WithoutProvenance(ours), ExpectedDocument(SyntheticVerdicts()));
}

TEST(MetaEvalCommandTest, MatchesTheReferenceEndToEndAndNeverUsesAFailedRowAsALabel) {
  FakeJudge judge;
  const std::string out = hb::testing::MakeTempDir() + "/judge";
  const Exit exit = RunOrchestrator(MetaEvalArgs(judge, out));
  // Rows 10, 23 and 41 never answer a boolean criteria_met: failed, exit 3.
  EXPECT_EQ(exit.code, 3) << exit.stderr_text;
  EXPECT_THAT(exit.stderr_text,
              HasSubstr("hb-orchestrator meta-eval: 3 row(s) failed (no boolean criteria_met "
                        "within the attempts); left out of the metrics, never used as a label: "
                        "line(s) 10, 23, 41"));
  const std::map<int, int> requests = judge.TakeRequests();
  EXPECT_EQ(requests.size(), 48u);
  EXPECT_EQ(requests.at(10), 2);  // --max-attempts 2, --row-attempts 1
  EXPECT_EQ(requests.at(1), 1);

  HB_ASSERT_OK_AND_ASSIGN(const std::string ours, ReadFile(out + "/meta_eval.json"));
  rapidjson::Document provenance;
  EXPECT_EQ(WithoutProvenance(ours, &provenance), ExpectedDocument(SyntheticVerdicts()));
  // What graded it, as the rows' summary.json records it.
  ASSERT_TRUE(provenance.IsObject());
  EXPECT_STREQ(provenance["grader"]["model"].GetString(), "fake-judge");
  EXPECT_STREQ(provenance["dataset"]["path"].GetString(),
               TestData("meta_eval_synthetic.jsonl").c_str());
  EXPECT_STREQ(provenance["tool_version"].GetString(), ToolVersion());
  // One "score" line: the meta-eval's own (run's per-checkpoint line gives the rows only).
  EXPECT_EQ(CountOccurrences(exit.stderr_text, " score "), 1) << exit.stderr_text;
  EXPECT_THAT(exit.stderr_text, HasSubstr("hb-orchestrator meta-eval: score "));
  EXPECT_THAT(exit.stderr_text, HasSubstr("meta-eval: rows 45 graded, 3 failed, 0 missing -> "));

  // The reference's code logic on the same verdicts (null = failed), value for value.
  const std::string reference_path = hb::testing::MakeTempDir() + "/reference.json";
  const hb::testing::ProcessResult python = hb::testing::RunProcess(
      {"/usr/bin/python3", hb::testing::SourceDir() + "/scripts/reference/meta_eval_reference.py",
       "--data", TestData("meta_eval_synthetic.jsonl"), "--verdicts",
       TestData("meta_eval_synthetic.verdicts.json"), "--template",
       hb::testing::ReferenceTemplatePath(), "--out", reference_path, "--seed", "0"});
  ASSERT_EQ(python.exit_code, 0) << python.err;
  HB_ASSERT_OK_AND_ASSIGN(const std::string reference_text, ReadFile(reference_path));
  rapidjson::Document reference, mine;
  reference.Parse<rapidjson::kParseFullPrecisionFlag>(reference_text.c_str());
  mine.Parse<rapidjson::kParseFullPrecisionFlag>(ours.c_str());
  ASSERT_TRUE(reference.IsObject() && mine.IsObject());
  const rapidjson::Value& want = reference["document"];
  ASSERT_TRUE(want["score"].IsNumber());
  EXPECT_EQ(mine["score"].GetDouble(), want["score"].GetDouble());
  ASSERT_EQ(mine["metrics"].MemberCount(), want["metrics"].MemberCount());
  for (const auto& m : want["metrics"].GetObject()) {
    const std::string key = m.name.GetString();
    ASSERT_TRUE(mine["metrics"].HasMember(key.c_str())) << key;
    EXPECT_EQ(mine["metrics"][key.c_str()].GetDouble(), m.value.GetDouble()) << key;
  }
  ASSERT_TRUE(mine["failed_rows"].IsArray());
  EXPECT_EQ(mine["failed_rows"].Size(), 3u);
  EXPECT_EQ(mine["rows"]["graded"].GetInt(), 45);

  // The page: the judge's balanced F1 per category against the physicians' spread.
  HB_ASSERT_OK_AND_ASSIGN(const std::string html, ReadFile(out + "/meta_eval.html"));
  EXPECT_THAT(html, HasSubstr("class=\"physicians\""));
  EXPECT_THAT(html, HasSubstr("lines 10, 23, 41"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  // run's per-row report of the same verdicts beside it, each rubric as the grader saw it.
  HB_ASSERT_OK_AND_ASSIGN(const std::string rows_html, ReadFile(out + "/meta-eval/report.html"));
  EXPECT_THAT(rows_html, Not(HasSubstr("[1] ")));
  HB_ASSERT_OK_AND_ASSIGN(const std::string failures, ReadFile(out + "/meta-eval/failures.jsonl"));
  EXPECT_THAT(failures, HasSubstr("\"prompt_id\":\"line-10\""));
}

TEST(MetaEvalCommandTest, ResumesGradingOnlyWhatIsLeftAndRefusesAnotherGrader) {
  FakeJudge judge;
  const std::string out = hb::testing::MakeTempDir() + "/judge";
  // The first run: rows 30..48 are unavailable (the probe, row 1, is not).
  std::set<int> late;
  for (int line = 30; line <= 48; ++line) late.insert(line);
  judge.SetUnavailable(late);
  const Exit first = RunOrchestrator(MetaEvalArgs(judge, out));
  EXPECT_EQ(first.code, 3) << first.stderr_text;
  judge.TakeRequests();

  judge.SetUnavailable({});
  const Exit second = RunOrchestrator(MetaEvalArgs(judge, out));
  EXPECT_EQ(second.code, 3) << second.stderr_text;  // 10, 23 and 41 still never parse
  ExpectResumedOnlyTheRowsLeft(judge, late, out);

  // Another judge on the same journal is refused, as run refuses it.
  std::vector<std::string> other = MetaEvalArgs(judge, out);
  other.push_back("--llm-temperature=0");
  const Exit refused = RunOrchestrator(other);
  EXPECT_EQ(refused.code, 2) << refused.stderr_text;
  EXPECT_THAT(refused.stderr_text, HasSubstr("temperature"));
  EXPECT_TRUE(judge.TakeRequests().empty());
}

TEST(MetaEvalCommandTest, AnInterruptedMetaEvalReportsWhatItHasAndTheNextRunGradesTheRest) {
  FakeJudge judge;
  const std::string dir = hb::testing::MakeTempDir();
  const std::string out = dir + "/judge";
  std::set<int> late;
  for (int line = 30; line <= 48; ++line) late.insert(line);
  judge.SetHanging(late);
  std::vector<std::string> args = MetaEvalArgs(judge, out);
  args.insert(args.end(),
              {"--max-in-flight=4", "--adaptive-concurrency=false", "--drain-timeout=0s"});
  std::string command = "exec '" + hb::testing::BinaryDir() + "/orchestrator/hb-orchestrator'";
  for (const std::string& a : args) absl::StrAppend(&command, " '", a, "'");
  absl::StrAppend(&command, " 2>'", dir, "/stderr.txt'");
  HB_ASSERT_OK_AND_ASSIGN(auto child, hb::testing::ChildProcess::Spawn({"/bin/sh", "-c", command}));
  // The start-up probe, rows 1..29 answered (10 and 23 twice: they never parse), then 4 hanging
  // rows in flight.
  ASSERT_TRUE(judge.WaitForRequests(1 + 29 + 2 + 4));
  const int status = child->Stop(SIGTERM, absl::Seconds(30));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 4);
  HB_ASSERT_OK_AND_ASSIGN(const std::string stderr_text, ReadFile(dir + "/stderr.txt"));
  EXPECT_THAT(stderr_text, HasSubstr("hb-orchestrator meta-eval: interrupted: 21 row(s) without a "
                                     "verdict yet (not graded, or failed)"));
  HB_ASSERT_OK_AND_ASSIGN(const std::string partial, ReadFile(out + "/meta_eval.json"));
  EXPECT_THAT(partial, HasSubstr("\"graded\": 27,"));
  HB_ASSERT_OK_AND_ASSIGN(const std::string page, ReadFile(out + "/meta_eval.html"));
  EXPECT_THAT(page, HasSubstr("INCOMPLETE"));
  judge.TakeRequests();

  judge.SetHanging({});
  const Exit resumed = RunOrchestrator(MetaEvalArgs(judge, out));
  EXPECT_EQ(resumed.code, 3) << resumed.stderr_text;
  ExpectResumedOnlyTheRowsLeft(judge, late, out);
}

TEST(MetaEvalCommandTest, CompareSetsTwoJudgesSideBySide) {
  FakeJudge judge;
  const std::string root = hb::testing::MakeTempDir();
  std::vector<std::string> args = MetaEvalArgs(judge, root + "/gpt-judge");
  ASSERT_EQ(RunOrchestrator(args).code, 3);
  args = MetaEvalArgs(judge, root + "/cheap-judge", "0.2", "0.8");
  ASSERT_EQ(RunOrchestrator(args).code, 3);
  const std::string page_dir = root + "/page";
  const Exit compared =
      RunOrchestrator({"compare", "--out=" + page_dir, root + "/gpt-judge", root + "/cheap-judge"});
  ASSERT_EQ(compared.code, 0) << compared.stderr_text;
  HB_ASSERT_OK_AND_ASSIGN(const std::string html, ReadFile(page_dir + "/judges.html"));
  EXPECT_THAT(html, HasSubstr("data-judges=\"2\""));
  // Each judgement: 1000 prompt and 50 completion tokens. At $2 / $8 per million that is
  // $0.0024, $2.40 per 1,000; at $0.2 / $0.8, $0.24 per 1,000.
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">$2.40</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">$0.24</td>"));
  EXPECT_THAT(html, HasSubstr("<td>gpt-judge</td>"));
  EXPECT_THAT(html, HasSubstr("<td>cheap-judge</td>"));

  // Another selection of rows is refused.
  std::vector<std::string> fewer = MetaEvalArgs(judge, root + "/fewer");
  fewer.push_back("--examples=20");
  RunOrchestrator(fewer);
  const Exit refused =
      RunOrchestrator({"compare", "--out=" + page_dir, root + "/gpt-judge", root + "/fewer"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_THAT(refused.stderr_text, HasSubstr("graded another selection of rows (20 rows)"));
}

TEST(MetaEvalCommandTest, ParsesTheFlagsOfRunItShares) {
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalCommandOptions options,
                          ParseMetaEvalArgs({"--dataset=m.jsonl", "--out=o", "--examples=500",
                                             "--seed=3", "--llm-base-url=http://127.0.0.1:1/v1",
                                             "--max-in-flight=7", "--grader-mode=batch"}));
  EXPECT_EQ(options.run.dataset, "m.jsonl");
  EXPECT_EQ(options.run.out, "o");
  EXPECT_EQ(options.run.examples, 500);
  EXPECT_EQ(options.run.seed, 3u);
  EXPECT_EQ(options.run.max_in_flight, 7);
  EXPECT_EQ(options.run.grader_mode, "batch");
  EXPECT_THAT(ParseMetaEvalArgs({"--out=o"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--dataset is required")));
  EXPECT_THAT(ParseMetaEvalArgs({"--dataset=m.jsonl", "--out=o", "--responses=x"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("responses")));
}

TEST(MetaEvalCommandTest, ABadRowIsReportedWithItsLine) {
  const std::string dir = hb::testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomically(dir + "/bad.jsonl",
                                  R"({"prompt": [], "completion": "c", "rubric": "r", )"
                                  R"("category": "x", "binary_labels": [], )"
                                  R"("anonymized_physician_ids": []})"
                                  "\n")
                  .ok());
  const Exit exit =
      RunOrchestrator({"meta-eval", "--dataset=" + dir + "/bad.jsonl", "--out=" + dir + "/out",
                       "--llm-base-url=http://127.0.0.1:9/v1", "--progress=off"});
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.stderr_text, HasSubstr("bad.jsonl:1: field 'binary_labels': empty list"));
}

}  // namespace
}  // namespace hb
