// `hb-orchestrator run` refuses before paying and states only what happened (issue 31): flag
// values the upstream would refuse, a --grader that is an HTTP URL, --professional (or a --llm-*
// flag) against replicas that grade otherwise: exit 2 with the reason and not one request to
// the judge (hb-llm-sim counts them); a remote grader is priced at the model it reports.
// Real processes on loopback: hb-llm-sim, hb-grader and the orchestrator binary. How long each
// refusal took is printed ("[timing] ..."), never asserted.
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/base/file.h"
#include "common/base/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/loopback.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::BinaryDir;
using ::hb::testing::ChildProcess;
using ::hb::testing::LlmSim;
using ::hb::testing::MakeTempDir;
using ::hb::testing::ProcessResult;
using ::hb::testing::ReferenceTemplatePath;
using ::hb::testing::SimCounter;
using ::testing::HasSubstr;
using ::testing::Not;

// An hb-grader replica against `sim` with `flags`; its gRPC port in `*port`.
absl::StatusOr<std::unique_ptr<ChildProcess>> StartGrader(const LlmSim& sim,
                                                          const std::vector<std::string>& flags,
                                                          int* port) {
  absl::StatusOr<hb::testing::GraderReplica> grader = hb::testing::StartGrader(sim, flags);
  if (!grader.ok()) return grader.status();
  *port = grader->port;
  return std::move(grader->process);
}

class JudgeChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    responses_ = dir_ + "/pro.jsonl";
    ASSERT_THAT(
        WriteFileAtomically(responses_,
                            "{\"prompt_id\":\"pro-001\",\"response\":\"Depends on CrCl.\"}\n"
                            "{\"prompt_id\":\"2\",\"response\":\"Troponin negative.\"}\n"
                            "{\"prompt_id\":\"pro-003\",\"response\":\"4 g a day.\"}\n"),
        hb::testing::IsOk());
  }

  // `run` on the synthetic Professional-format file (3 tasks, 7 rubric items) with `extra`.
  ProcessResult Run(const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> argv = {
        BinaryDir() + "/orchestrator/hb-orchestrator",
        "run",
        "--dataset=" + hb::testing::SourceDir() +
            "/tests/common/healthbench/testdata/professional_synthetic.jsonl",
        "--responses=pro=" + responses_,
        "--out=" + dir_ + "/" + name,
        "--grader-template=" + ReferenceTemplatePath(),
        "--progress=off"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const absl::Time start = absl::Now();
    ProcessResult result = ::hb::testing::RunProcess(argv, {"OPENAI_API_KEY="});
    std::cout << absl::StrFormat("[timing] %s: exit %d in %.2fs\n", name, result.exit_code,
                                 absl::ToDoubleSeconds(absl::Now() - start));
    return result;
  }

  std::string dir_;
  std::string responses_;
};

// Values every OpenAI-compatible API refuses, and an HTTP URL where a gRPC target belongs, are
// refused when the flags are read: exit 2 naming the flag, nothing sent to the judge.
TEST_F(JudgeChecksTest, FlagValuesTheUpstreamWouldRefuseAreRefusedBeforeAnyRequest) {
  HB_ASSERT_OK_AND_ASSIGN(LlmSim sim, hb::testing::StartLlmSim({}));
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--llm-temperature=9"},
       "hb-orchestrator run: --llm-temperature must be in [0, 2] (the range OpenAI-compatible "
       "APIs accept), got 9: the upstream would refuse every request (the reference's grader "
       "uses 0.5)"},
      {{"--llm-temperature=-1"}, "--llm-temperature must be in [0, 2]"},
      {{"--llm-max-tokens=0"}, "hb-orchestrator run: --llm-max-tokens must be positive"},
      {{"--llm-max-tokens=2000000"},
       "hb-orchestrator run: --llm-max-tokens must be at most 1000000, got 2000000: the "
       "upstream would refuse every request (the reference's grader uses 2048)"},
      {{"--grader=http://127.0.0.1:9/v1"},
       "hb-orchestrator run: --grader 'http://127.0.0.1:9/v1' is an HTTP URL, not an hb-grader "
       "gRPC target: give 'embedded', or the gRPC target of the hb-grader replicas: "
       "dns:///HOST:PORT, ipv4:HOST:PORT[,HOST:PORT...], ipv6:[ADDR]:PORT, unix:PATH or "
       "HOST:PORT. An OpenAI-compatible URL goes in --llm-base-url (graded by --grader "
       "embedded, the default)"},
      {{"--grader=grader-headless"}, "is not a gRPC target (no scheme, no HOST:PORT)"},
  };
  int n = 0;
  for (const auto& [extra, message] : refused) {
    std::vector<std::string> args = extra;
    args.push_back("--llm-base-url=" + sim.base_url);
    const ProcessResult result = Run(absl::StrCat("refused-", ++n), args);
    EXPECT_EQ(result.exit_code, 2) << extra[0] << "\n" << result.err;
    EXPECT_THAT(result.err, HasSubstr(message)) << extra[0];
  }
  EXPECT_EQ(SimCounter(sim, "hb_sim_requests_total"), 0);
}

// --professional against a replica that grades with gpt-4.1 chat: refused naming the field
// before any row is sent (the replicas' GetInfo is no grading request); so is --llm-model.
TEST_F(JudgeChecksTest, ProfessionalAgainstAReplicaThatGradesOtherwiseIsRefused) {
  HB_ASSERT_OK_AND_ASSIGN(LlmSim sim, hb::testing::StartLlmSim({}));
  int port = 0;
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChildProcess> grader, StartGrader(sim, {}, &port));
  const std::string target = absl::StrCat("ipv4:127.0.0.1:", port);
  ProcessResult result = Run("professional", {"--grader=" + target, "--professional"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_THAT(result.err,
              HasSubstr(absl::StrCat(
                  "hb-orchestrator run: --professional asks for a grader with model "
                  "'gpt-5.4-2026-03-05', but the hb-grader replicas at ",
                  target,
                  " grade with model 'gpt-4.1-2025-04-14' (GetInfo); nothing was graded: start "
                  "every replica with --llm-model=gpt-5.4-2026-03-05, or grade with --grader "
                  "embedded")));
  result = Run("model", {"--grader=" + target, "--llm-model=gpt-4.1-mini"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr("--llm-model asks for a grader with model 'gpt-4.1-mini'"));
  EXPECT_EQ(SimCounter(sim, "hb_sim_requests_total"), 0);

  // The same flags with a replica that grades as asked: graded.
  int pro_port = 0;
  HB_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ChildProcess> pro,
      StartGrader(sim, {"--llm-model=gpt-5.4-2026-03-05", "--llm-reasoning-effort=low"},
                  &pro_port));
  result = Run("professional-ok",
               {absl::StrCat("--grader=ipv4:127.0.0.1:", pro_port), "--professional"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(SimCounter(sim, "hb_sim_requests_total"), 7);
}

// A remote grader is priced at the model its replicas report (gpt-5.4: $2.50 / $0.25 / $15.00),
// not at this command's --llm-model default (gpt-4.1: $2.00 / $0.50 / $8.00).
TEST_F(JudgeChecksTest, ARemoteGraderIsPricedAtTheModelItReports) {
  HB_ASSERT_OK_AND_ASSIGN(LlmSim sim, hb::testing::StartLlmSim({}));
  int port = 0;
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChildProcess> grader,
                          StartGrader(sim, {"--llm-model=gpt-5.4-2026-03-05"}, &port));
  const ProcessResult result = Run("priced", {absl::StrCat("--grader=ipv4:127.0.0.1:", port)});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("at $2.50 / $0.25 / $15.00 per million input / cached input "
                                    "/ output tokens"));
  absl::StatusOr<std::string> text = ReadFile(dir_ + "/priced/pro/summary.json");
  ASSERT_TRUE(text.ok()) << text.status();
  rapidjson::Document summary;
  summary.Parse(text->c_str());
  ASSERT_FALSE(summary.HasParseError());
  const rapidjson::Value& prices = summary["usage"]["prices_usd_per_mtok"];
  EXPECT_EQ(prices["input"].GetDouble(), 2.50);
  EXPECT_EQ(prices["cached_input"].GetDouble(), 0.25);
  EXPECT_EQ(prices["output"].GetDouble(), 15.00);
  EXPECT_EQ(std::string(summary["provenance"]["grader"]["model"].GetString()),
            "gpt-5.4-2026-03-05");
}

// An OpenAI-compatible judge that is not hb-llm-sim: the model list, and every rubric item met.
// `status` != 200 answers every request with it instead.
std::unique_ptr<hb::testing::LoopbackHttpServer> StartJudge(int status = 200,
                                                            std::string body = "") {
  absl::StatusOr<std::unique_ptr<hb::testing::LoopbackHttpServer>> server =
      hb::testing::LoopbackHttpServer::Start(
          [status, body](const hb::testing::LoopbackRequest& request) {
            if (status != 200) return hb::testing::LoopbackResponse{status, {}, body};
            if (request.method == "GET") {
              return hb::testing::LoopbackResponse{200, {}, R"({"object":"list","data":[]})"};
            }
            return hb::testing::LoopbackResponse{
                200,
                {{"Content-Type", "application/json"}},
                R"({"model":"judge","choices":[{"message":{"role":"assistant","content":)"
                R"("{\"explanation\": \"ok\", \"criteria_met\": true}"},)"
                R"("finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5}})"};
          });
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::string SummaryText(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  return text.ok() ? *text : "<missing " + path + ">";
}

// A judge that cannot work stops the run at start with the reason (exit 2), before any grading
// request; how long each took is in the log.
TEST_F(JudgeChecksTest, ADeadOrWrongJudgeIsRefusedAtStartWithTheReason) {
  ProcessResult result = Run("refused-connection", {"--llm-base-url=http://127.0.0.1:1/v1"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr("hb-orchestrator run: cannot reach the judge at "
                                    "http://127.0.0.1:1/v1/models (--llm-base-url): "));
  EXPECT_THAT(result.err, HasSubstr("No grading request was sent."));
  result = Run("unresolvable", {"--llm-base-url=http://nothing.invalid/v1"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr("cannot resolve host 'nothing.invalid' of --llm-base-url"));

  const struct {
    int status;
    std::string body;
    std::string message;
  } cases[] = {
      {401, R"({"error":{"message":"Incorrect API key provided"}})",
       "answered HTTP 401: {\"error\":{\"message\":\"Incorrect API key provided\"}}. The judge "
       "refused the API key: check $OPENAI_API_KEY or --llm-api-key-file"},
      {403, "forbidden", "answered HTTP 403: forbidden. The judge refused the API key"},
      {404, "Not Found", "answered HTTP 404: Not Found. This is not an OpenAI-compatible base URL"},
  };
  for (const auto& c : cases) {
    std::unique_ptr<hb::testing::LoopbackHttpServer> judge = StartJudge(c.status, c.body);
    ASSERT_NE(judge, nullptr);
    result = Run(absl::StrCat("http-", c.status), {"--llm-base-url=" + judge->base_url() + "/v1"});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_THAT(result.err, HasSubstr(c.message));
    ASSERT_EQ(judge->requests().size(), 1u);  // the probe only: no grading request
    EXPECT_EQ(judge->requests()[0].method, "GET");
  }
  // hb-grader's gRPC port is no OpenAI endpoint either.
  HB_ASSERT_OK_AND_ASSIGN(LlmSim sim, hb::testing::StartLlmSim({}));
  int port = 0;
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChildProcess> grader, StartGrader(sim, {}, &port));
  result = Run("grpc-port", {absl::StrCat("--llm-base-url=http://127.0.0.1:", port, "/v1")});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr("No grading request was sent."));
  EXPECT_EQ(SimCounter(sim, "hb_sim_requests_total"), 0);
}

// hb-llm-sim says what it is (x-hb-llm-sim): its verdicts mark the run simulated on every
// output without --simulated-verdicts, embedded or through hb-grader (GradeItemResponse).
TEST_F(JudgeChecksTest, VerdictsFromTheSimulatorMarkTheRunSimulatedWithoutTheFlag) {
  HB_ASSERT_OK_AND_ASSIGN(LlmSim sim, hb::testing::StartLlmSim({}));
  int port = 0;
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChildProcess> grader, StartGrader(sim, {}, &port));
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"embedded", "--llm-base-url=" + sim.base_url},
      {"remote", absl::StrCat("--grader=ipv4:127.0.0.1:", port)}};
  for (const auto& [name, flag] : runs) {
    const ProcessResult result = Run(name, {flag});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_THAT(result.err, HasSubstr("SIMULATED VERDICTS: the grader endpoint ("));
    EXPECT_THAT(result.err, HasSubstr(") identified itself as hb-llm-sim"));
    const std::string summary = SummaryText(dir_ + "/" + name + "/pro/summary.json");
    EXPECT_THAT(summary, HasSubstr("\"simulated\": true")) << name;
    EXPECT_THAT(summary, HasSubstr("\"simulated_reason\": \"the grader endpoint identified "
                                   "itself as hb-llm-sim\""))
        << name;
    EXPECT_THAT(SummaryText(dir_ + "/" + name + "/pro/report.html"),
                HasSubstr("SIMULATED (the grader endpoint identified itself as hb-llm-sim)"));
  }
  EXPECT_EQ(SimCounter(sim, "hb_sim_requests_total"), 2 * 7);
}

// --simulated-verdicts against a judge that is not hb-llm-sim: marked as declared, and the
// banner names the endpoint actually called, never a simulator. Without the flag such a run is
// not simulated.
TEST_F(JudgeChecksTest, ADeclaredSimulationNamesTheEndpointItCalls) {
  std::unique_ptr<hb::testing::LoopbackHttpServer> judge = StartJudge();
  ASSERT_NE(judge, nullptr);
  const std::string url = judge->base_url() + "/v1";
  ProcessResult result = Run("declared", {"--llm-base-url=" + url, "--simulated-verdicts"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("SIMULATED VERDICTS: declared by --simulated-verdicts; the "
                                    "grader endpoint is " +
                                    url));
  EXPECT_THAT(result.err, Not(HasSubstr("hb-llm-sim")));
  const std::string summary = SummaryText(dir_ + "/declared/pro/summary.json");
  EXPECT_THAT(summary, HasSubstr("\"simulated_reason\": \"declared by --simulated-verdicts\""));
  EXPECT_THAT(SummaryText(dir_ + "/declared/pro/report.html"), Not(HasSubstr("hb-llm-sim")));

  result = Run("real", {"--llm-base-url=" + url});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, Not(HasSubstr("SIMULATED")));
  EXPECT_THAT(SummaryText(dir_ + "/real/pro/summary.json"), HasSubstr("\"simulated\": false"));
}

}  // namespace
}  // namespace hb
