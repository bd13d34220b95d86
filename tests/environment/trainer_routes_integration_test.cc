// hb-env's trainer routes against hb-llm-sim on loopback, each driven with the request its
// trainer sends (OpenRLHF /get_reward, slime /reward, NeMo-Gym /seed_session, /verify,
// /aggregate_metrics; shapes from their code, see docs/environment.md "Training with hb-env
// rewards"): the reward equals what gRPC Submit returns for the same reply (graded anew each time:
// --cache-entries=0), a reply that could not be graded never comes back as a reward, the routes
// refuse a request without the token (and take it as HTTP Basic auth from a URL's userinfo, as
// the trainers' aiohttp clients send it), --strip-suffix and --reward length_adjusted apply, and
// a batch retried after a failure is answered from the result cache (counted in /metrics).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "healthbench/env/v1/env.grpc.pb.h"
#include "http/curl_http_client.h"
#include "rapidjson/document.h"
#include "tests/testing/loopback.h"
#include "tests/testing/shared_data.h"

namespace hb {
namespace {

namespace env_v1 = ::healthbench::env::v1;
using ::hb::testing::BinaryDir;
using ::hb::testing::ChildProcess;
using ::testing::HasSubstr;

constexpr char kToken[] = "trainer-routes-test-token-0123456789";

// A free TCP port on 127.0.0.1 (for --metrics-listen, which prints no port).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// A running hb-env: its process, gRPC stub and HTTP base URL.
struct HbEnv {
  std::unique_ptr<ChildProcess> process;
  std::unique_ptr<env_v1::Environment::Stub> stub;
  int http_port = 0;
  std::string url(const std::string& path) const {
    return absl::StrCat("http://127.0.0.1:", http_port, path);
  }
};

absl::StatusOr<HbEnv> StartHbEnv(const std::string& sim_url, std::vector<std::string> flags) {
  std::vector<std::string> argv = {BinaryDir() + "/environment/hb-env",
                                   "--split=test=" + testing::SharedDataFile(testing::kMainHead30),
                                   "--listen=127.0.0.1:0",
                                   "--http-listen=127.0.0.1:0",
                                   "--llm-base-url=" + sim_url,
                                   "--grader-template=" + testing::ReferenceTemplatePath(),
                                   "--log-level=error",
                                   "--drain-timeout=2s"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  HbEnv env;
  absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Spawn(argv);
  if (!process.ok()) return process.status();
  env.process = *std::move(process);
  absl::StatusOr<std::vector<std::string>> lines =
      env.process->ReadFirstLines(2, absl::Seconds(60));
  if (!lines.ok()) return lines.status();
  int grpc_port = 0;
  if (!absl::StartsWith((*lines)[0], "grpc listening on ") ||
      !absl::StartsWith((*lines)[1], "http listening on ") ||
      !absl::SimpleAtoi((*lines)[0].substr((*lines)[0].rfind(':') + 1), &grpc_port) ||
      !absl::SimpleAtoi((*lines)[1].substr((*lines)[1].rfind(':') + 1), &env.http_port)) {
    return absl::InternalError(absl::StrCat("hb-env printed: ", (*lines)[0], " / ", (*lines)[1]));
  }
  env.stub = env_v1::Environment::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port),
                                                              grpc::InsecureChannelCredentials()));
  return env;
}

rapidjson::Document ParseJson(const std::string& text) {
  rapidjson::Document doc;
  // Full precision: the reward compared exactly must parse to the double that was written.
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str());
  EXPECT_FALSE(doc.HasParseError()) << text;
  return doc;
}

class TrainerRoutesIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<testing::LlmSim> sim = testing::StartLlmSim({});
    ASSERT_TRUE(sim.ok()) << sim.status();
    sim_ = new testing::LlmSim(*std::move(sim));
    // Every judge call fails: hb-env gives up after one attempt per rubric item.
    absl::StatusOr<testing::LlmSim> bad_sim = testing::StartLlmSim({"--fault-500=1"});
    ASSERT_TRUE(bad_sim.ok()) << bad_sim.status();
    bad_sim_ = new testing::LlmSim(*std::move(bad_sim));
    token_file_ = new std::string(testing::MakeTempDir() + "/tokens");
    std::ofstream(*token_file_) << "# test\n" << kToken << "\n";

    absl::StatusOr<HbEnv> fresh =
        StartHbEnv(sim_->base_url,
                   {"--cache-entries=0", "--metrics-listen=", "--auth-token-file=" + *token_file_});
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    fresh_ = new HbEnv(*std::move(fresh));
    metrics_port_ = FreeLoopbackPort();
    absl::StatusOr<HbEnv> cached =
        StartHbEnv(sim_->base_url,
                   {absl::StrCat("--metrics-listen=127.0.0.1:", metrics_port_),
                    "--strip-suffix=<|END|>", "--length-adjustment-center=100",
                    "--length-adjustment-penalty-per-500-chars=0.5", "--reward=length_adjusted"});
    ASSERT_TRUE(cached.ok()) << cached.status();
    cached_ = new HbEnv(*std::move(cached));
    absl::StatusOr<HbEnv> failing =
        StartHbEnv(bad_sim_->base_url, {"--metrics-listen=", "--max-attempts=1"});
    ASSERT_TRUE(failing.ok()) << failing.status();
    failing_ = new HbEnv(*std::move(failing));

    absl::StatusOr<std::unique_ptr<CurlMultiHttpClient>> http =
        CurlMultiHttpClient::Create(CurlHttpClientOptions{});
    ASSERT_TRUE(http.ok()) << http.status();
    http_ = http->release();
  }

  static void TearDownTestSuite() {
    delete http_;
    for (HbEnv* env : {fresh_, cached_, failing_}) {
      if (env != nullptr) {
        EXPECT_EQ(env->process->Stop(SIGTERM, absl::Seconds(30)), 0);
      }
      delete env;
    }
    delete sim_;
    delete bad_sim_;
    delete token_file_;
  }

  // One HTTP request; the transport must succeed.
  static HttpResponse Fetch(const std::string& method, const std::string& url,
                            const std::string& body,
                            std::vector<std::pair<std::string, std::string>> headers = {}) {
    HttpRequest request;
    request.method = method;
    request.url = url;
    request.body = body;
    request.headers = std::move(headers);
    request.headers.emplace_back("Content-Type", "application/json");
    request.timeout = absl::Seconds(120);
    absl::Notification finished;
    absl::StatusOr<HttpResponse> response;
    http_->Post(std::move(request), [&](absl::StatusOr<HttpResponse> result) {
      response = std::move(result);
      finished.Notify();
    });
    finished.WaitForNotification();
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? *std::move(response) : HttpResponse{};
  }

  static std::vector<std::pair<std::string, std::string>> Bearer() {
    return {{"Authorization", absl::StrCat("Bearer ", kToken)}};
  }

  // A trainer route URL of fresh_ with the token in its userinfo (libcurl, like aiohttp and
  // requests, sends it as HTTP Basic auth).
  static std::string UserinfoUrl(const std::string& path) {
    return absl::StrCat("http://hb:", kToken, "@127.0.0.1:", fresh_->http_port, path);
  }

  // gRPC Submit of (task, reply) on `env` (with the token).
  static env_v1::SubmitResponse Submit(HbEnv& env, const std::string& task_id,
                                       const std::string& reply) {
    env_v1::SubmitRequest request;
    request.mutable_task()->set_task_id(task_id);
    request.set_reply(reply);
    env_v1::SubmitResponse response;
    grpc::ClientContext context;
    context.AddMetadata("authorization", absl::StrCat("Bearer ", kToken));
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    const grpc::Status status = env.stub->Submit(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  static std::vector<std::string> TaskIds(HbEnv& env) {
    env_v1::ListTasksRequest request;
    request.set_split("test");
    env_v1::ListTasksResponse response;
    grpc::ClientContext context;
    context.AddMetadata("authorization", absl::StrCat("Bearer ", kToken));
    EXPECT_TRUE(env.stub->ListTasks(&context, request, &response).ok());
    std::vector<std::string> ids;
    for (const env_v1::TaskSummary& task : response.tasks()) ids.push_back(task.task_id());
    return ids;
  }

  // The value of a series in cached_'s /metrics (-1 when absent).
  static double Metric(const std::string& series) {
    const HttpResponse response =
        Fetch("GET", absl::StrCat("http://127.0.0.1:", metrics_port_, "/metrics"), "");
    for (absl::string_view line : absl::StrSplit(response.body, '\n')) {
      if (!absl::ConsumePrefix(&line, series + " ")) continue;
      double value = 0;
      if (absl::SimpleAtod(line, &value)) return value;
    }
    return -1;
  }

  static testing::LlmSim* sim_;
  static testing::LlmSim* bad_sim_;
  static std::string* token_file_;
  static HbEnv* fresh_;
  static HbEnv* cached_;
  static HbEnv* failing_;
  static int metrics_port_;
  static CurlMultiHttpClient* http_;
};

testing::LlmSim* TrainerRoutesIntegrationTest::sim_ = nullptr;
testing::LlmSim* TrainerRoutesIntegrationTest::bad_sim_ = nullptr;
std::string* TrainerRoutesIntegrationTest::token_file_ = nullptr;
HbEnv* TrainerRoutesIntegrationTest::fresh_ = nullptr;
HbEnv* TrainerRoutesIntegrationTest::cached_ = nullptr;
HbEnv* TrainerRoutesIntegrationTest::failing_ = nullptr;
int TrainerRoutesIntegrationTest::metrics_port_ = 0;
CurlMultiHttpClient* TrainerRoutesIntegrationTest::http_ = nullptr;

constexpr char kReplyA[] =
    "Call emergency services now. Keep the person still and check their breathing.";
constexpr char kReplyB[] = "Drink water and rest; see a doctor if it lasts more than two days.";

TEST_F(TrainerRoutesIntegrationTest, OpenRlhfRewardsEqualGrpcSubmit) {
  const std::vector<std::string> ids = TaskIds(*fresh_);
  ASSERT_GE(ids.size(), 3u);
  const env_v1::SubmitResponse a = Submit(*fresh_, ids[0], kReplyA);
  const env_v1::SubmitResponse b = Submit(*fresh_, ids[1], kReplyB);
  ASSERT_FALSE(a.from_cache());
  ASSERT_GT(a.points_possible(), 0);
  ASSERT_GT(b.points_possible(), 0);
  // What OpenRLHF posts: the chat-templated prompt + the response + its end-of-turn token,
  // the prompt, and the dataset's label (the task id); one sample per request is its norm.
  const std::string prompt0 =
      "<|im_start|>user\nI found my neighbour on the floor<|im_end|>\n"
      "<|im_start|>assistant\n";
  const std::string prompt1 = "<|start_header_id|>user<|end_header_id|>\n\nHeadache?<|eot_id|>";
  const std::string body = absl::StrCat(
      R"({"query":[")", absl::CEscape(prompt0), kReplyA, R"(<|im_end|>",")", absl::CEscape(prompt1),
      kReplyB, R"(<|eot_id|>"],"prompts":[")", absl::CEscape(prompt0), R"(",")",
      absl::CEscape(prompt1), R"("],"labels":[")", ids[0], R"(",")", ids[1], R"("]})");
  const HttpResponse response = Fetch("POST", UserinfoUrl("/get_reward"), body);
  ASSERT_EQ(response.status_code, 200) << response.body;
  const rapidjson::Document answer = ParseJson(response.body);
  ASSERT_TRUE(answer["rewards"].IsArray());
  ASSERT_EQ(answer["rewards"].Size(), 2u);
  EXPECT_EQ(answer["rewards"][0].GetDouble(), a.reward());
  EXPECT_EQ(answer["rewards"][1].GetDouble(), b.reward());
  EXPECT_EQ(answer["scores"][0].GetDouble(), a.reward_clipped());
  EXPECT_EQ(answer["scores"][1].GetDouble(), b.reward_clipped());
  EXPECT_EQ(answer["extra_logs"]["points_met"][0].GetDouble(), a.points_met());
  EXPECT_EQ(answer["extra_logs"]["points_possible"][1].GetDouble(), b.points_possible());
  // URLs 2..N of OpenRLHF's --reward.remote_url list receive empty batches.
  const HttpResponse empty =
      Fetch("POST", UserinfoUrl("/get_reward"), R"({"query":[],"prompts":[],"labels":[]})");
  EXPECT_EQ(empty.status_code, 200);
  EXPECT_EQ(empty.body,
            R"({"rewards":[],"scores":[],"extra_logs":{"points_met":[],"points_possible":[]}})");
}

TEST_F(TrainerRoutesIntegrationTest, SlimeRewardEqualsGrpcSubmit) {
  const std::vector<std::string> ids = TaskIds(*fresh_);
  ASSERT_GE(ids.size(), 3u);
  const env_v1::SubmitResponse expected = Submit(*fresh_, ids[2], kReplyB);
  // slime: the prompt (a message list when the dataset is not templated), the response alone
  // (with its end token) and the label (--label-key prompt_id).
  const HttpResponse response =
      Fetch("POST", fresh_->url("/reward"),
            absl::StrCat(R"({"prompt":[{"role":"user","content":"Headache?"}],"response":")",
                         kReplyB, R"(</s>","label":")", ids[2], R"("})"),
            Bearer());
  ASSERT_EQ(response.status_code, 200) << response.body;
  const rapidjson::Document answer = ParseJson(response.body);
  EXPECT_EQ(answer["reward"].GetDouble(), expected.reward());
  EXPECT_EQ(answer["reward_clipped"].GetDouble(), expected.reward_clipped());
  EXPECT_EQ(answer["points_possible"].GetDouble(), expected.points_possible());
}

TEST_F(TrainerRoutesIntegrationTest, NemoGymVerifyEqualsGrpcSubmitAndAggregates) {
  const std::vector<std::string> ids = TaskIds(*fresh_);
  ASSERT_GE(ids.size(), 2u);
  const env_v1::SubmitResponse expected = Submit(*fresh_, ids[1], kReplyA);
  // What NeMo-Gym's simple agent posts: the dataset row, responses_create_params and the
  // Responses API object; with observability on, under /ng-rollout/<rollout id>.
  const std::string row = absl::StrCat(
      R"({"prompt_id":")", ids[1], R"(","_ng_task_index":0,"_ng_rollout_index":1,)",
      R"("agent_ref":{"name":"healthbench_simple_agent"},)",
      R"("responses_create_params":{"input":[{"role":"user","content":"Help","type":"message"}],)",
      R"("max_output_tokens":512,"temperature":1.0})");
  const HttpResponse seeded = Fetch("POST", UserinfoUrl("/ng-rollout/0-1/seed_session"), row + "}");
  EXPECT_EQ(seeded.status_code, 200);
  EXPECT_EQ(seeded.body, "{}");
  const std::string verify_body = absl::StrCat(
      row, R"(,"response":{"id":"resp_1","object":"response","output":[)",
      R"({"type":"reasoning","id":"rs_1","summary":[]},)",
      R"({"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[)",
      R"({"type":"output_text","text":"Call emergency services now. ","annotations":[]},)",
      R"({"type":"output_text","text":"Keep the person still and check their breathing.",)",
      R"("annotations":[]}]}],"usage":{"input_tokens":9,"output_tokens":20}}})");
  const HttpResponse verified = Fetch("POST", UserinfoUrl("/ng-rollout/0-1/verify"), verify_body);
  ASSERT_EQ(verified.status_code, 200) << verified.body;
  const rapidjson::Document answer = ParseJson(verified.body);
  EXPECT_EQ(answer["reward"].GetDouble(), expected.reward());
  EXPECT_EQ(answer["reward_clipped"].GetDouble(), expected.reward_clipped());
  // The row is echoed.
  EXPECT_EQ(std::string(answer["prompt_id"].GetString()), ids[1]);
  EXPECT_EQ(answer["_ng_rollout_index"].GetInt(), 1);
  EXPECT_FALSE(answer.HasMember("_ng_failure_class"));
  const HttpResponse aggregated =
      Fetch("POST", UserinfoUrl("/aggregate_metrics"),
            absl::StrCat(R"({"verify_responses":[)", verified.body, "]}"));
  ASSERT_EQ(aggregated.status_code, 200) << aggregated.body;
  const rapidjson::Document metrics = ParseJson(aggregated.body);
  EXPECT_EQ(metrics["agent_metrics"]["mean/reward"].GetDouble(), expected.reward());
  // The points the README promises, profiled as the reward is.
  EXPECT_EQ(metrics["agent_metrics"]["mean/points_met"].GetDouble(), expected.points_met());
  EXPECT_EQ(metrics["key_metrics"]["mean/points_possible"].GetDouble(), expected.points_possible());
}

TEST_F(TrainerRoutesIntegrationTest, EveryRouteRefusesARequestWithoutTheToken) {
  for (const char* path : {"/get_reward", "/reward", "/seed_session", "/verify",
                           "/aggregate_metrics", "/ng-rollout/0-1/verify"}) {
    const HttpResponse response = Fetch("POST", fresh_->url(path), "{}");
    EXPECT_EQ(response.status_code, 401) << path;
    EXPECT_THAT(response.body, HasSubstr(R"({"detail":"missing credentials)")) << path;
  }
  const HttpResponse wrong = Fetch(
      "POST",
      absl::StrCat("http://hb:not-the-token-0123456789@127.0.0.1:", fresh_->http_port, "/reward"),
      "{}");
  EXPECT_EQ(wrong.status_code, 401);
  EXPECT_EQ(wrong.body, R"({"detail":"the Basic auth password is not accepted by this server"})");
}

TEST_F(TrainerRoutesIntegrationTest, UnknownTaskIsA404NamingIt) {
  const HttpResponse response = Fetch("POST", UserinfoUrl("/get_reward"),
                                      R"({"query":["x"],"prompts":[""],"labels":["no-such"]})");
  EXPECT_EQ(response.status_code, 404);
  EXPECT_THAT(response.body, HasSubstr(R"(labels[0] (task \"no-such\"): NOT_FOUND)"));
  EXPECT_EQ(
      Fetch("POST", UserinfoUrl("/reward"), R"({"response":"x","label":"no-such"})").status_code,
      404);
}

TEST_F(TrainerRoutesIntegrationTest, AJudgeFailureIsNeverAReward) {
  const std::vector<std::string> ids = TaskIds(*failing_);
  ASSERT_FALSE(ids.empty());
  HttpResponse response =
      Fetch("POST", failing_->url("/get_reward"),
            absl::StrCat(R"({"query":["P: x"],"prompts":["P: "],"labels":[")", ids[0], R"("]})"));
  EXPECT_EQ(response.status_code, 503);
  EXPECT_THAT(response.body, HasSubstr(absl::StrCat(R"({"detail":"labels[0] (task \")", ids[0],
                                                    R"(\") could not be graded: )")));
  EXPECT_THAT(response.body, ::testing::Not(HasSubstr("rewards")));
  response = Fetch("POST", failing_->url("/reward"),
                   absl::StrCat(R"({"response":"x","label":")", ids[0], R"("})"));
  EXPECT_EQ(response.status_code, 503);
  EXPECT_THAT(response.body, HasSubstr("could not be graded"));
  response = Fetch(
      "POST", failing_->url("/verify"),
      absl::StrCat(R"({"prompt_id":")", ids[0],
                   R"(","response":{"output":[{"type":"message","role":"assistant","content":[)",
                   R"({"type":"output_text","text":"x"}]}]}})"));
  EXPECT_EQ(response.status_code, 200);
  const rapidjson::Document answer = ParseJson(response.body);
  EXPECT_EQ(std::string(answer["_ng_failure_class"].GetString()), "judge_failed");
  EXPECT_TRUE(answer["_ng_failure_judge_error"].IsString());
  EXPECT_EQ(answer["reward"].GetDouble(), 0.0);
}

TEST_F(TrainerRoutesIntegrationTest, StripSuffixLengthAdjustedRewardAndRetryFromTheCache) {
  const std::vector<std::string> ids = TaskIds(*cached_);
  ASSERT_GE(ids.size(), 4u);
  // A batch with an unknown task fails as a whole, but its graded sample stays cached: the
  // trainer's retry is answered from the cache.
  const std::string sample = absl::StrCat(R"("query":["P: )", kReplyA, R"(<|END|><|END|>"])");
  HttpResponse failed =
      Fetch("POST", cached_->url("/get_reward"),
            absl::StrCat(R"({"query":["P: )", kReplyA, R"(<|END|><|END|>","P: y"],)",
                         R"("prompts":["P: ","P: "],"labels":[")", ids[3], R"(","no-such"]})"));
  EXPECT_EQ(failed.status_code, 404) << failed.body;
  const double hits_before = Metric("hb_env_cache_hits_total");
  ASSERT_GE(hits_before, 0);
  const HttpResponse retried =
      Fetch("POST", cached_->url("/get_reward"),
            absl::StrCat("{", sample, R"(,"prompts":["P: "],"labels":[")", ids[3], R"("]})"));
  ASSERT_EQ(retried.status_code, 200) << retried.body;
  EXPECT_EQ(Metric("hb_env_cache_hits_total"), hits_before + 1);
  EXPECT_EQ(Metric(R"(hb_env_trainer_requests_total{code="404",route="get_reward"})"), 1);
  EXPECT_EQ(Metric(R"(hb_env_trainer_requests_total{code="200",route="get_reward"})"), 1);
  // The reply graded was stripped of --strip-suffix's token: gRPC's submission of the bare
  // reply is the same cache entry. The reward is the length-adjusted score on every route.
  const env_v1::SubmitResponse expected = Submit(*cached_, ids[3], kReplyA);
  EXPECT_TRUE(expected.from_cache());
  EXPECT_EQ(expected.reward(), expected.tag_scores().at("overall_score_length_adjusted"));
  const rapidjson::Document answer = ParseJson(retried.body);
  EXPECT_EQ(answer["rewards"][0].GetDouble(), expected.reward());
  const HttpResponse slime =
      Fetch("POST", cached_->url("/reward"),
            absl::StrCat(R"({"response":")", kReplyA, R"(<|END|>","label":")", ids[3], R"("})"));
  ASSERT_EQ(slime.status_code, 200) << slime.body;
  EXPECT_EQ(ParseJson(slime.body)["reward"].GetDouble(), expected.reward());
  // The default suffixes are replaced, not extended: <|im_end|> is now part of the reply.
  const HttpResponse not_stripped =
      Fetch("POST", cached_->url("/reward"),
            absl::StrCat(R"({"response":")", kReplyA, R"(<|im_end|>","label":")", ids[3], R"("})"));
  ASSERT_EQ(not_stripped.status_code, 200);
  EXPECT_TRUE(Submit(*cached_, ids[3], std::string(kReplyA) + "<|im_end|>").from_cache());
}

}  // namespace
}  // namespace hb
